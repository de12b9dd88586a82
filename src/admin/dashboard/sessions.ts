// Sessions as both dashboard APIs see them: the cookie of each kind of session
// (account, operator), throttled sign-in, the same-origin and CSRF-token checks on
// every state-changing request, and the error answers of both APIs. A cookie holds
// the session id; only its digest is stored (account-service.ts). Over https the
// cookie is `__Host-<name>` (Secure, Path=/, no Domain): no other host of the domain
// and no plain-http page can set or shadow it (RFC 6265bis, cookie prefixes).

import type { Context, Next } from 'koa';
import type { AccountService, OpenSession } from '../../accounts/account-service.js';
import type { SessionKind } from '../../accounts/account-store.js';
import type { Logger } from '../../ops/log.js';
import { controlErrors, problem } from '../json-api.js';
import { checkOrigin, checkToken } from './csrf.js';
import type { SigninThrottle } from '../../accounts/signin-throttle.js';
import { allowedOrigins, clientAddress, servedOverHttps } from './request-info.js';

export interface SessionScope {
  readonly kind: SessionKind;
  readonly cookie: string;
  /** The cookie's Path over plain http: the browser sends it nowhere else (`__Host-` cookies must say Path=/). */
  readonly path: string;
}

export const ACCOUNT_SCOPE: SessionScope = { kind: 'account', cookie: 'nr_session', path: '/dashboard' };
export const OPERATOR_SCOPE: SessionScope = { kind: 'operator', cookie: 'nr_operator', path: '/dashboard/operator' };

/** Listener-level settings the guards read. */
export interface GuardSettings {
  readonly trustProxy: boolean;
  readonly publicUrl: string | undefined;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The cookie's name: over https only the `__Host-` one is read, so a plain one planted by a sibling host counts for nothing. */
function cookieName(ctx: Context, scope: SessionScope, settings: GuardSettings): string {
  return servedOverHttps(ctx, settings.trustProxy, settings.publicUrl) ? `__Host-${scope.cookie}` : scope.cookie;
}

export function readSessionId(ctx: Context, scope: SessionScope, settings: GuardSettings): string | undefined {
  return ctx.cookies.get(cookieName(ctx, scope, settings)) ?? undefined;
}

function cookie(ctx: Context, scope: SessionScope, settings: GuardSettings, value: string, maxAgeSeconds: number): void {
  const https = servedOverHttps(ctx, settings.trustProxy, settings.publicUrl);
  const where = https ? `__Host-${scope.cookie}=${value}; Path=/` : `${scope.cookie}=${value}; Path=${scope.path}`;
  ctx.append('set-cookie', `${where}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${https ? '; Secure' : ''}`);
}

export function setSessionCookie(
  ctx: Context,
  scope: SessionScope,
  settings: GuardSettings,
  sessionId: string,
  expiresAt: string,
  now: number,
): void {
  cookie(ctx, scope, settings, sessionId, Math.max(1, Math.floor((Date.parse(expiresAt) - now) / 1000)));
}

export function clearSessionCookie(ctx: Context, scope: SessionScope, settings: GuardSettings): void {
  cookie(ctx, scope, settings, '', 0);
}

/**
 * Sign-in shared by both kinds of session: throttled per client address, one answer
 * for every kind of refusal, the cookie set on success.
 */
export async function signInRoute(
  ctx: Context,
  deps: { throttle: SigninThrottle; settings: GuardSettings; logger: Logger; now: () => number },
  scope: SessionScope,
  attempt: () => Promise<({ sessionId: string } & OpenSession) | undefined>,
): Promise<OpenSession | undefined> {
  const address = clientAddress(ctx, deps.settings.trustProxy);
  const wait = deps.throttle.retryAfter(address);
  if (wait > 0) {
    ctx.set('retry-after', String(wait));
    problem(ctx, 'TOO_MANY_ATTEMPTS', `Too many failed sign-ins from this address: try again in ${wait} seconds`);
    return undefined;
  }
  const opened = await attempt();
  if (opened === undefined) {
    deps.throttle.failed(address);
    deps.logger.warn('dashboard sign-in refused', { event: 'dashboard', action: 'signin_refused', kind: scope.kind });
    problem(
      ctx,
      'SIGNIN_FAILED',
      scope.kind === 'operator'
        ? 'Wrong admin token'
        : 'This sign-in link is invalid, expired or already used: ask your operator for a new one',
    );
    return undefined;
  }
  setSessionCookie(ctx, scope, deps.settings, opened.sessionId, opened.session.expiresAt, deps.now());
  deps.logger.info('dashboard sign-in', { event: 'dashboard', action: 'signin', kind: scope.kind, account: opened.session.accountId });
  return opened;
}

/** Refuses a state-changing request that does not come from the dashboard's own origin. */
export function originGuard(settings: GuardSettings) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (UNSAFE.has(ctx.method)) {
      const v = checkOrigin(ctx.req.headers, allowedOrigins(ctx, settings.trustProxy, settings.publicUrl));
      if (!v.ok) return problem(ctx, 'CSRF_REFUSED', v.message);
    }
    await next();
  };
}

/** Needs a live session of the scope's kind (401 otherwise) and, for changes, its CSRF token (403). */
export function sessionGuard(scope: SessionScope, accounts: AccountService, adminToken: () => string | undefined, settings: GuardSettings) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const open = await accounts.session(readSessionId(ctx, scope, settings), scope.kind, adminToken());
    if (open === undefined) return problem(ctx, 'UNAUTHENTICATED', 'Not signed in, or the session has ended: sign in again');
    if (UNSAFE.has(ctx.method)) {
      const v = checkToken(ctx.req.headers, open.csrfToken);
      if (!v.ok) return problem(ctx, 'CSRF_REFUSED', v.message);
    }
    ctx.state.open = open;
    await next();
  };
}

export function openSession(ctx: Context): OpenSession {
  return ctx.state.open as OpenSession;
}

/** Error answers of both APIs; anything unexpected is logged once and answered without detail. */
export function apiErrors(logger: Logger) {
  const refusals = controlErrors(
    (ctx, err) => {
      logger.error('dashboard request failed', { event: 'dashboard', path: ctx.path, error: (err as Error).stack ?? String(err) });
      problem(ctx, 'UNAVAILABLE', 'The dashboard cannot answer right now; try again shortly');
    },
    // An account's own keys: a reference to another account's key is simply none of its.
    { KEY_NOT_FOUND: 'No such key in this account' },
  );
  return async (ctx: Context, next: Next): Promise<void> => {
    ctx.set('cache-control', 'no-store');
    await refusals(ctx, next);
  };
}
