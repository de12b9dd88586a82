// The account dashboard's JSON API under /dashboard/api: sign-in with a one-time
// token, the session, the account's keys (a new value appears only in the create and
// rotate answers, marked no-store), its limits and usage, and the chain endpoints.
// Every route but sign-in needs the account's session; every change needs the
// same origin and the session's CSRF token (sessions.ts).

import type Router from '@koa/router';
import type { Context } from 'koa';
import type { AccountKeys } from '../../accounts/account-keys.js';
import { limitsView } from '../../accounts/account-keys.js';
import type { AccountService } from '../../accounts/account-service.js';
import type { AccountRecord } from '../../accounts/account-store.js';
import type { SigninThrottle } from '../../accounts/signin-throttle.js';
import type { TierConfig } from '../../config/types.js';
import type { Logger } from '../../ops/log.js';
import type { SampleRequest } from '../../plugin/contract.js';
import { jsonBody } from '../json-api.js';
import { keyView } from '../key-view.js';
import {
  ACCOUNT_SCOPE,
  clearSessionCookie,
  openSession,
  readSessionId,
  sessionGuard,
  signInRoute,
  type GuardSettings,
} from './sessions.js';

export interface EndpointInfo {
  readonly chain: string;
  readonly plugin: string;
  readonly url: string;
  readonly archiveOnly: boolean;
  readonly sample: SampleRequest | undefined;
  /** The WebSocket URL, for endpoints that serve WebSocket clients. */
  readonly ws?: string;
  /** gRPC endpoints: the :authority a client sends to reach this chain (none for the default one). */
  readonly authority?: string;
}

export interface AccountApiDeps {
  readonly accounts: AccountService;
  readonly accountKeys: AccountKeys;
  readonly throttle: SigninThrottle;
  readonly settings: GuardSettings;
  readonly tiers: () => Readonly<Record<string, TierConfig>>;
  readonly endpoints: () => readonly EndpointInfo[];
  readonly adminToken: () => string | undefined;
  readonly logger: Logger;
  readonly now: () => number;
  readonly maxBodyBytes: number;
}

/** The signed-in account as its page sees it. */
function accountView(a: AccountRecord, tiers: Readonly<Record<string, TierConfig>>): object {
  return {
    id: a.id,
    name: a.name,
    email: a.email ?? null,
    defaultTier: a.defaultTier,
    tiers: a.tiers.flatMap((t) => (tiers[t] === undefined ? [] : [limitsView(tiers[t])])),
  };
}

export function mountAccountApi(router: Router, deps: AccountApiDeps): void {
  const base = '/dashboard/api';
  const guard = sessionGuard(ACCOUNT_SCOPE, deps.accounts, deps.adminToken, deps.settings);
  const account = (ctx: Context): AccountRecord => openSession(ctx).account as AccountRecord;
  const audit = (ctx: Context, action: string, key: { id: string; prefix: string }): void =>
    deps.logger.info('dashboard key change', { event: 'dashboard', action, account: account(ctx).id, keyId: key.id, key: key.prefix });

  router.post(`${base}/signin`, async (ctx) => {
    const body = await jsonBody(ctx, deps.maxBodyBytes);
    const opened = await signInRoute(ctx, deps, ACCOUNT_SCOPE, () => deps.accounts.signIn(body.token));
    if (opened?.account === undefined) return;
    // Signing in replaces any session this browser had.
    await deps.accounts.signOut(readSessionId(ctx, ACCOUNT_SCOPE, deps.settings));
    ctx.body = { account: accountView(opened.account, deps.tiers()), csrfToken: opened.csrfToken, expiresAt: opened.session.expiresAt };
  });

  router.get(`${base}/session`, guard, (ctx) => {
    const open = openSession(ctx);
    ctx.body = { account: accountView(account(ctx), deps.tiers()), csrfToken: open.csrfToken, expiresAt: open.session.expiresAt };
  });

  router.post(`${base}/signout`, guard, async (ctx) => {
    await deps.accounts.signOut(readSessionId(ctx, ACCOUNT_SCOPE, deps.settings));
    clearSessionCookie(ctx, ACCOUNT_SCOPE, deps.settings);
    ctx.status = 204;
  });

  router.get(`${base}/keys`, guard, async (ctx) => {
    const now = deps.now();
    ctx.body = { keys: (await deps.accountKeys.list(account(ctx))).map((r) => keyView(r, now)) };
  });

  router.post(`${base}/keys`, guard, async (ctx) => {
    const { record, value } = await deps.accountKeys.create(account(ctx), await jsonBody(ctx, deps.maxBodyBytes));
    audit(ctx, 'key_created', record);
    ctx.status = 201;
    ctx.body = { key: value, record: keyView(record, deps.now()) };
  });

  router.post(`${base}/keys/:id/rotate`, guard, async (ctx) => {
    const { record, value } = await deps.accountKeys.rotate(account(ctx), ctx.params.id as string);
    audit(ctx, 'key_rotated', record);
    ctx.body = { key: value, record: keyView(record, deps.now()) };
  });

  router.post(`${base}/keys/:id/restrict`, guard, async (ctx) => {
    const record = await deps.accountKeys.restrict(account(ctx), ctx.params.id as string, await jsonBody(ctx, deps.maxBodyBytes));
    audit(ctx, 'key_restricted', record);
    ctx.body = { record: keyView(record, deps.now()) };
  });

  router.post(`${base}/keys/:id/revoke`, guard, async (ctx) => {
    const record = await deps.accountKeys.revoke(account(ctx), ctx.params.id as string);
    audit(ctx, 'key_revoked', record);
    ctx.body = { record: keyView(record, deps.now()) };
  });

  router.get(`${base}/usage`, guard, async (ctx) => {
    const key = typeof ctx.query.key === 'string' && ctx.query.key !== '' ? ctx.query.key : undefined;
    ctx.body = await deps.accountKeys.usage(account(ctx), key);
  });

  router.get(`${base}/endpoints`, guard, (ctx) => {
    ctx.body = { endpoints: deps.endpoints() };
  });
}
