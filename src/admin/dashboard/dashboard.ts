// The account dashboard under /dashboard: its pages and assets, the account API and
// the operator API, behind strict security headers (no inline script, no framing, no
// referrer). `dashboardMiddleware` handles /dashboard/* and passes everything else
// on, so it mounts on the admin listener; `createDashboardApp` is its own listener.
// Creates no I/O itself: assets are loaded by the caller.

import Router from '@koa/router';
import Koa, { type Context, type Next } from 'koa';
import { problem } from '../json-api.js';
import { mountAccountApi, type AccountApiDeps } from './account-api.js';
import { sendAsset, type AssetTable } from './assets.js';
import { mountOperatorApi, type OperatorApiDeps } from './operator-api.js';
import { apiErrors, originGuard } from './sessions.js';

/** What both APIs need, and the page's files. */
export type DashboardDeps = Omit<AccountApiDeps & OperatorApiDeps, 'maxBodyBytes'> & { readonly assets: AssetTable };

const MAX_BODY_BYTES = 16 * 1024;

/**
 * No inline script or style, nothing from elsewhere: the page's own files, and fetch
 * to its own origin. Link previews and other sites cannot frame it.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  // The sign-in token is in the landing page's URL: never send it on.
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

export function isDashboardPath(path: string): boolean {
  return path === '/dashboard' || path.startsWith('/dashboard/');
}

export function dashboardMiddleware(deps: DashboardDeps): (ctx: Context, next: Next) => Promise<void> {
  const router = new Router();
  const page = (name: string) => (ctx: Context) => sendAsset(ctx, deps.assets.get(name) as NonNullable<ReturnType<AssetTable['get']>>);
  router.get('/dashboard', page('index.html'));
  router.get('/dashboard/', page('index.html'));
  router.get('/dashboard/signin', page('index.html'));
  router.get('/dashboard/operator', page('operator.html'));
  router.get('/dashboard/assets/:name', (ctx) => {
    const name = ctx.params.name as string;
    const asset = name.endsWith('.html') ? undefined : deps.assets.get(name);
    if (asset === undefined) return problem(ctx, 'NOT_FOUND', 'No such dashboard file');
    sendAsset(ctx, asset);
  });

  const api = new Router();
  api.use(apiErrors(deps.logger), originGuard(deps.settings));
  mountAccountApi(api, { ...deps, maxBodyBytes: MAX_BODY_BYTES });
  mountOperatorApi(api, { ...deps, maxBodyBytes: MAX_BODY_BYTES });

  const pages = router.routes();
  const apiRoutes = api.routes();
  const methods = api.allowedMethods();
  return async (ctx, next) => {
    if (!isDashboardPath(ctx.path)) return next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) ctx.set(name, value);
    const isApi = ctx.path.startsWith('/dashboard/api/') || ctx.path.startsWith('/dashboard/operator/api/');
    const notFound = async (): Promise<void> => {
      problem(ctx, 'NOT_FOUND', 'No such dashboard page or API route');
    };
    // The routers' middleware is typed for a router's context; this is the same Koa context.
    const routed = ctx as Parameters<typeof pages>[0];
    if (isApi) await apiRoutes(routed, () => methods(routed as Parameters<typeof methods>[0], notFound));
    else await pages(routed, notFound);
  };
}

/** The dashboard on a listener of its own (dashboard.port): nothing else is served there. */
export function createDashboardApp(deps: DashboardDeps): Koa {
  const app = new Koa();
  app.silent = true;
  const dashboard = dashboardMiddleware(deps);
  app.use(async (ctx, next) => {
    if (ctx.path === '/') {
      ctx.redirect('/dashboard');
      return;
    }
    await next();
  });
  app.use(dashboard);
  app.use((ctx) => problem(ctx, 'NOT_FOUND', 'Only the dashboard is served here: /dashboard'));
  return app;
}
