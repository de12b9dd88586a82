// The admin key API: create (the value is in this answer and nowhere else), list,
// show, revoke, rotate, restrict and usage. Every route needs the admin token; with no token
// configured the API is closed. Changes are paced per account like the dashboard's
// (a customer-facing backend may drive this API), within the cap on active keys.

import type Router from '@koa/router';
import type { Context } from 'koa';
import type { KeyChangeGuard, KeyService } from '../auth/key-service.js';
import type { Limiter } from '../quota/limiter.js';
import { controlErrors, jsonBody, problem } from './json-api.js';
import { keyView } from './key-view.js';

export interface KeyApiDeps {
  readonly keys: KeyService;
  readonly keyChanges: KeyChangeGuard;
  readonly limiter: Limiter;
  readonly authorized: (header: string | undefined) => boolean;
  readonly maxBodyBytes: number;
}

export function mountKeyApi(router: Router, deps: KeyApiDeps): void {
  const guard = async (ctx: Context, next: () => Promise<unknown>): Promise<void> => {
    if (!deps.authorized(ctx.get('authorization') || undefined)) {
      ctx.set('www-authenticate', 'Bearer');
      return problem(ctx, 'UNAUTHORIZED', 'Admin token required: Authorization: Bearer <token>');
    }
    await next();
  };

  router.use('/admin', controlErrors(), guard);
  router.get('/admin/keys', async (ctx) => {
    const account = typeof ctx.query.account === 'string' ? ctx.query.account : undefined;
    const list = await deps.keys.list(account === undefined ? {} : { account });
    const now = Date.now();
    ctx.body = { keys: list.map((r) => keyView(r, now)) };
  });
  router.post('/admin/keys', async (ctx) => {
    const { record, value } = await deps.keys.create(await jsonBody(ctx, deps.maxBodyBytes), deps.keyChanges);
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = { key: value, record: keyView(record) };
  });
  router.get('/admin/keys/:id', async (ctx) => {
    const record = await deps.keys.store.get(ctx.params.id as string);
    if (record === undefined) return problem(ctx, 'KEY_NOT_FOUND', `no key with id or prefix "${ctx.params.id}"`);
    ctx.body = { record: keyView(record) };
  });
  router.post('/admin/keys/:id/revoke', async (ctx) => {
    ctx.body = { record: keyView(await deps.keys.revoke(ctx.params.id as string, deps.keyChanges)) };
  });
  router.post('/admin/keys/:id/restrict', async (ctx) => {
    ctx.body = {
      record: keyView(await deps.keys.restrict(ctx.params.id as string, await jsonBody(ctx, deps.maxBodyBytes), deps.keyChanges)),
    };
  });
  router.post('/admin/keys/:id/rotate', async (ctx) => {
    const body = await jsonBody(ctx, deps.maxBodyBytes);
    const { record, value } = await deps.keys.rotate(ctx.params.id as string, body.graceSeconds, deps.keyChanges);
    ctx.set('cache-control', 'no-store');
    ctx.body = { key: value, record: keyView(record) };
  });
  router.get('/admin/keys/:id/usage', async (ctx) => {
    const record = await deps.keys.store.get(ctx.params.id as string);
    if (record === undefined) return problem(ctx, 'KEY_NOT_FOUND', `no key with id or prefix "${ctx.params.id}"`);
    const since = typeof ctx.query.since === 'string' ? ctx.query.since : '';
    ctx.body = { id: record.id, usage: await deps.limiter.usage(record.id, since) };
  });
}
