// The operator view's JSON API under /dashboard/operator/api: sign-in with the admin
// token into an operator session (same cookie and CSRF rules as accounts, its own
// cookie), every account with its keys and usage (the record's usage history), and
// revoking any key. With no
// admin token configured every route answers 404: the view is closed.

import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { AccountService } from '../../accounts/account-service.js';
import { accountState } from '../../accounts/account-store.js';
import type { SigninThrottle } from '../../accounts/signin-throttle.js';
import { totals, usageWindow } from '../../accounts/usage-summary.js';
import type { KeyService } from '../../auth/key-service.js';
import { KeyNotFoundError } from '../../auth/key-store.js';
import type { Logger } from '../../ops/log.js';
import type { UsageHistory } from '../../quota/usage-history.js';
import { DAY_MS, dayRows } from '../../quota/usage-report.js';
import { jsonBody, problem } from '../json-api.js';
import { keyView } from '../key-view.js';
import {
  clearSessionCookie,
  OPERATOR_SCOPE,
  openSession,
  readSessionId,
  sessionGuard,
  signInRoute,
  type GuardSettings,
} from './sessions.js';

export interface OperatorApiDeps {
  readonly accounts: AccountService;
  readonly keys: KeyService;
  readonly history: UsageHistory;
  readonly throttle: SigninThrottle;
  readonly settings: GuardSettings;
  readonly adminToken: () => string | undefined;
  readonly logger: Logger;
  readonly now: () => number;
  readonly maxBodyBytes: number;
}

export function mountOperatorApi(router: Router, deps: OperatorApiDeps): void {
  const base = '/dashboard/operator/api';
  const open = async (ctx: Context, next: Next): Promise<void> => {
    if (deps.adminToken() === undefined) {
      return problem(ctx, 'OPERATOR_CLOSED', 'The operator view is closed: set admin.token in the configuration to open it');
    }
    await next();
  };
  const guard = sessionGuard(OPERATOR_SCOPE, deps.accounts, deps.adminToken, deps.settings);

  router.post(`${base}/signin`, open, async (ctx) => {
    const body = await jsonBody(ctx, deps.maxBodyBytes);
    const opened = await signInRoute(ctx, deps, OPERATOR_SCOPE, () => deps.accounts.signInOperator(deps.adminToken(), body.token));
    if (opened === undefined) return;
    await deps.accounts.signOut(readSessionId(ctx, OPERATOR_SCOPE, deps.settings));
    ctx.body = { csrfToken: opened.csrfToken, expiresAt: opened.session.expiresAt };
  });

  router.get(`${base}/session`, open, guard, (ctx) => {
    const s = openSession(ctx);
    ctx.body = { csrfToken: s.csrfToken, expiresAt: s.session.expiresAt };
  });

  router.post(`${base}/signout`, open, guard, async (ctx) => {
    await deps.accounts.signOut(readSessionId(ctx, OPERATOR_SCOPE, deps.settings));
    clearSessionCookie(ctx, OPERATOR_SCOPE, deps.settings);
    ctx.status = 204;
  });

  /** Every account, its keys, and usage today, this month and over 30 days (per key and summed). */
  router.get(`${base}/accounts`, open, guard, async (ctx) => {
    const now = deps.now();
    const w = usageWindow(now);
    const accounts = await deps.accounts.store.listAccounts();
    // Every key's days in one read.
    const days = await deps.history.read({
      from: Date.parse(`${w.since}T00:00:00Z`),
      to: Date.parse(`${w.today}T00:00:00Z`) + DAY_MS,
      by: ['key', 'chain', 'outcome'],
      step: 'day',
    });
    const byKey = new Map<string, typeof days>();
    for (const r of days) {
      const id = r.keyId ?? '';
      const list = byKey.get(id);
      if (list === undefined) byKey.set(id, [r]);
      else list.push(r);
    }
    ctx.body = {
      window: { today: w.today, month: w.month },
      accounts: await Promise.all(
        accounts.map(async (a) => {
          const keys = (await deps.accounts.keysOf(a)).sort((x, y) => y.createdAt.localeCompare(x.createdAt));
          const rows = keys.map((k) => dayRows(byKey.get(k.id) ?? []));
          return {
            id: a.id,
            name: a.name,
            email: a.email ?? null,
            tiers: a.tiers,
            defaultTier: a.defaultTier,
            state: accountState(a),
            createdAt: a.createdAt,
            usage: totals(rows.flat(), w),
            keys: keys.map((k, i) => ({ ...keyView(k, now), usage: totals(rows[i] ?? [], w) })),
          };
        }),
      ),
    };
  });

  router.post(`${base}/keys/:id/revoke`, open, guard, async (ctx) => {
    const id = ctx.params.id as string;
    // Keys are revoked by id only here: a prefix could name a key the operator did not see.
    if (!id.startsWith('key_') || (await deps.keys.store.get(id)) === undefined) throw new KeyNotFoundError(id);
    const record = await deps.keys.revoke(id);
    deps.logger.info('dashboard key change', {
      event: 'dashboard',
      action: 'key_revoked_by_operator',
      keyId: record.id,
      key: record.prefix,
    });
    ctx.body = { record: keyView(record, deps.now()) };
  });
}
