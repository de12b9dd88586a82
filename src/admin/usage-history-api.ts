// The admin API's reading of usage history (src/quota/usage-history.ts): a key's or an
// account's hourly rollups summed per hour, day or over a range and split by method,
// chain or outcome (an account's by key too), and a key's last failed calls. Behind the
// admin token (the key API's guard, mounted before these routes). History is what the
// gateways wrote by their last flush: it lags the calls by up to usage.flushInterval.

import type Router from '@koa/router';
import type { Context } from 'koa';
import type { AccountStore } from '../accounts/account-store.js';
import type { KeyService } from '../auth/key-service.js';
import { ControlError } from '../control-errors.js';
import {
  HOUR_MS,
  LATENCY_BOUNDS_MS,
  latencyAtMost,
  USAGE_STEPS,
  type FailedCall,
  type UsageDimension,
  type UsageHistory,
  type UsageStep,
  type UsageTotals,
} from '../quota/usage-history.js';
import { problem } from './json-api.js';

export interface UsageHistoryApiDeps {
  readonly keys: KeyService;
  /** Accounts by id or name; a key's account need not be one (keys may name any account). */
  readonly accounts: Pick<AccountStore, 'getAccount'>;
  readonly history: UsageHistory;
  readonly now: () => number;
}

/** What `by` may split a key's rows by (a key's own rows: never by key). */
const KEY_DIMENSIONS: readonly UsageDimension[] = ['chain', 'method', 'outcome'];
/** An account's rows split by its keys too. */
const ACCOUNT_DIMENSIONS: readonly UsageDimension[] = ['key', 'chain', 'method', 'outcome'];

/** Steps one answer may hold at most, per step: a month of hours, ten years of days. */
const MAX_STEPS: Readonly<Record<UsageStep, number>> = { hour: 31 * 24, day: 3_660, total: 1 };
const STEP_MS: Readonly<Record<UsageStep, number>> = { hour: HOUR_MS, day: 24 * HOUR_MS, total: Infinity };
const DEFAULT_RANGE_MS = 24 * HOUR_MS;
const FAILED_LIMIT = 100;
const FAILED_MAX = 1_000;

function one(ctx: Context, name: string): string | undefined {
  const v = ctx.query[name];
  if (Array.isArray(v)) throw new ControlError('INVALID_INPUT', `${name} may be given once`, { field: name });
  return v === undefined || v === '' ? undefined : v;
}

/** An instant as ISO 8601 (`2026-03-30`, `2026-03-30T12:00Z`) or epoch milliseconds. */
function instant(ctx: Context, name: string, fallback: number): number {
  const v = one(ctx, name);
  if (v === undefined) return fallback;
  const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(ms))
    throw new ControlError('INVALID_INPUT', `${name} must be an ISO 8601 time or epoch milliseconds`, { field: name });
  return ms;
}

function dimensions(ctx: Context, allowed: readonly UsageDimension[]): UsageDimension[] {
  const v = one(ctx, 'by');
  if (v === undefined) return [];
  const by = v.split(',').map((s) => s.trim());
  for (const d of by) {
    if (!(allowed as readonly string[]).includes(d)) {
      throw new ControlError('INVALID_INPUT', `by must be a list of ${allowed.join(', ')}`, { field: 'by' });
    }
  }
  return by as UsageDimension[];
}

function step(ctx: Context): UsageStep {
  const v = one(ctx, 'step') ?? 'total';
  if (!(USAGE_STEPS as readonly string[]).includes(v))
    throw new ControlError('INVALID_INPUT', `step must be one of ${USAGE_STEPS.join(', ')}`, { field: 'step' });
  return v as UsageStep;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function rowView(r: UsageTotals): object {
  return {
    ...(r.start === undefined ? {} : { start: iso(r.start) }),
    ...(r.keyId === undefined ? {} : { keyId: r.keyId }),
    ...(r.chain === undefined ? {} : { chain: r.chain }),
    ...(r.method === undefined ? {} : { method: r.method }),
    ...(r.outcome === undefined ? {} : { outcome: r.outcome }),
    calls: r.calls,
    cost: r.cost,
    nodeCalls: r.nodeCalls,
    bytesIn: r.bytesIn,
    bytesOut: r.bytesOut,
    // Upper bounds from fixed buckets: "at most", null past the last bound.
    latency: {
      counts: r.latency,
      p50Ms: latencyAtMost(r.latency, 0.5),
      p95Ms: latencyAtMost(r.latency, 0.95),
      p99Ms: latencyAtMost(r.latency, 0.99),
    },
  };
}

function failedView(f: FailedCall): object {
  return {
    at: iso(f.at),
    chain: f.chain,
    method: f.method,
    outcome: f.outcome,
    status: f.status ?? null,
    code: f.code ?? null,
    node: f.node ?? null,
    latencyMs: f.latencyMs,
    requestId: f.requestId,
  };
}

export function mountUsageHistoryApi(router: Router, deps: UsageHistoryApiDeps): void {
  const keyId = async (ctx: Context): Promise<string | undefined> => {
    const record = await deps.keys.store.get(ctx.params.id as string);
    if (record === undefined) problem(ctx, 'KEY_NOT_FOUND', `no key with id or prefix "${ctx.params.id}"`);
    return record?.id;
  };

  /** The rows `whose` asked for, as the key and account routes answer them. */
  const historyRoute =
    (
      /** A key, or an account with the names its rows may be kept under (UsageQuery.account). */
      whose: (ctx: Context) => Promise<{ keyId: string } | { account: string; rowsUnder: readonly string[] } | undefined>,
      allowed: readonly UsageDimension[],
    ) =>
    async (ctx: Context): Promise<void> => {
      const who = await whose(ctx);
      if (who === undefined) return;
      const to = instant(ctx, 'to', deps.now());
      const from = instant(ctx, 'from', to - DEFAULT_RANGE_MS);
      if (from >= to) throw new ControlError('INVALID_INPUT', 'from must be before to', { field: 'from' });
      const s = step(ctx);
      // Whole hours: the rollups' grain.
      const start = Math.floor(from / HOUR_MS) * HOUR_MS;
      const end = Math.ceil(to / HOUR_MS) * HOUR_MS;
      if ((end - start) / STEP_MS[s] > MAX_STEPS[s]) {
        throw new ControlError(
          'INVALID_INPUT',
          `from to to spans more than ${MAX_STEPS[s]} steps of a ${s}: ask for step=day, or a shorter range`,
          { field: 'step' },
        );
      }
      const by = dimensions(ctx, allowed);
      const rows = await deps.history.read({
        ...('keyId' in who ? { keyId: who.keyId } : { account: who.rowsUnder }),
        chain: one(ctx, 'chain'),
        method: one(ctx, 'method'),
        from: start,
        to: end,
        by,
        step: s,
      });
      ctx.body = {
        ...('keyId' in who ? { id: who.keyId } : { account: who.account }),
        from: iso(start),
        to: iso(end),
        step: s,
        by,
        latencyBoundsMs: LATENCY_BOUNDS_MS,
        rows: rows.map(rowView),
      };
    };

  router.get(
    '/admin/keys/:id/usage/history',
    historyRoute(async (ctx) => {
      const id = await keyId(ctx);
      return id === undefined ? undefined : { keyId: id };
    }, KEY_DIMENSIONS),
  );

  // By the account's id or name; an account that is only a name on keys (made without `accounts create`) by that name.
  router.get(
    '/admin/accounts/:id/usage/history',
    historyRoute(async (ctx) => {
      const ref = ctx.params.id as string;
      const found = await deps.accounts.getAccount(ref);
      // An account's rows from before it adopted its keys are under its name (UsageQuery.account).
      if (found !== undefined) return { account: found.id, rowsUnder: [found.id, found.name] };
      if ((await deps.keys.store.list({ account: ref })).length > 0) return { account: ref, rowsUnder: [ref] };
      problem(ctx, 'ACCOUNT_NOT_FOUND', `no account with id or name "${ref}"`);
      return undefined;
    }, ACCOUNT_DIMENSIONS),
  );

  router.get('/admin/keys/:id/failed-calls', async (ctx) => {
    const { history } = deps;
    const id = await keyId(ctx);
    if (id === undefined) return;
    const v = one(ctx, 'limit');
    const limit = v === undefined ? FAILED_LIMIT : Number(v);
    if (!Number.isInteger(limit) || limit < 1 || limit > FAILED_MAX) {
      throw new ControlError('INVALID_INPUT', `limit must be a whole number from 1 to ${FAILED_MAX}`, { field: 'limit' });
    }
    ctx.body = { id, calls: (await history.failedCalls(id, limit)).map(failedView) };
  });
}
