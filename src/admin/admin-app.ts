// The admin listener: health (liveness, readiness, per-chain pool state), /metrics,
// the disagreements between nodes on answers checked by agreement, the key, usage
// history and node APIs behind the admin token, and the account dashboard unless it
// has a port of its own. Kept off the traffic port so operators can firewall it.

import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import type { ChainRuntime } from '../chain/runtime.js';
import type { DisputeLog } from '../exec/policies/disputes.js';
import { redactHeaders, redactUrl } from '../config/redact.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { PoolNode } from '../pool/pool-node.js';
import type { AccountStore } from '../accounts/account-store.js';
import type { KeyChangeGuard, KeyService } from '../auth/key-service.js';
import type { NodeHolds } from '../ops/holds/node-holds.js';
import type { Limiter } from '../quota/limiter.js';
import type { UsageHistory } from '../quota/usage-history.js';
import { tokenMatcher } from './admin-auth.js';
import { problem } from './json-api.js';
import { mountKeyApi } from './keys-api.js';
import { mountNodeApi } from './nodes-api.js';
import { mountUsageHistoryApi } from './usage-history-api.js';

export type Lifecycle = 'starting' | 'ready' | 'draining';

export interface AdminAppDeps {
  readonly chains: () => readonly ChainRuntime[];
  /** Disagreements between nodes on calls checked by agreement. */
  readonly disputes: DisputeLog;
  readonly metrics: Metrics;
  /** The /metrics text when it is not this registry's alone (a cluster's primary adds every worker's series). */
  readonly scrape?: (() => Promise<string>) | undefined;
  readonly lifecycle: () => Lifecycle;
  /** What keeps the record and the hot state, whether the hot state answers, and what happens when it does not. */
  readonly store: () => { record: string; hot: string; up: boolean; policy: string };
  readonly keys: KeyService;
  /** Paces key changes per account (the dashboard's budget too). */
  readonly keyChanges: KeyChangeGuard;
  readonly limiter: Limiter;
  /** Usage history (hourly rollups, failed calls). */
  readonly history: UsageHistory;
  /** Accounts, for reading an account's usage history by id or name. */
  readonly accounts: Pick<AccountStore, 'getAccount'>;
  /** The clock of usage history's default range. */
  readonly now?: () => number;
  /** Operators' holds on nodes (cordon, drain). */
  readonly holds: NodeHolds;
  /** Read per request: a reload that changes admin.token applies to the next one. */
  readonly adminToken: () => string | undefined;
  readonly maxBodyBytes: number;
  /** The dashboard (handles /dashboard/*, passes the rest on); absent when off or on its own port. */
  readonly dashboard?: Middleware;
}

/** What a node said of itself at its last description (src/pool/describe.ts), null before one. */
function describedState(n: PoolNode): object | null {
  const d = n.described;
  if (d === undefined || n.describedAt === undefined) return null;
  return {
    chainId: d.chainId ?? null,
    client: d.client ?? null,
    earliest: d.earliest ?? null,
    role: d.role ?? null,
    namespaces: d.namespaces ?? [],
    at: new Date(n.describedAt).toISOString(),
  };
}

function poolState(rt: ChainRuntime, holds: NodeHolds): object {
  return {
    chain: rt.name,
    plugin: rt.config.plugin,
    strategy: rt.config.strategy,
    head: rt.pool.view.head ?? null,
    chainId: rt.pool.chainId ?? null,
    usable: rt.pool.hasUsableNode(),
    nodes: rt.pool.nodes.map((n) => {
      const now = rt.pool.now();
      const hold = holds.get(rt.name, n.name);
      return {
        name: n.name,
        role: n.role,
        // An operator's hold: cordoned or draining (since, reason), else active.
        state: hold?.state ?? 'active',
        since: hold?.since ?? null,
        holdReason: hold?.reason || null,
        inFlight: n.inFlight,
        subscriptions: rt.subscriptions?.carriedBy(n) ?? 0,
        // Tokens in a node's URL path or query and its header values are secrets.
        url: redactUrl(n.config.url),
        ws: rt.subscriptions === undefined ? undefined : redactUrl(n.config.ws),
        headers: redactHeaders(n.config.headers),
        inRotation: n.inRotation,
        reason: n.outReason || null,
        // Outlier ejections of the node so far (each maxMs back in rotation forgets one), and the current one's end.
        ejections: n.ejections,
        ejectedUntil: n.ejectedUntil > now ? new Date(n.ejectedUntil).toISOString() : null,
        head: n.head ?? null,
        earliest: n.earliest ?? null,
        lag: n.lag,
        breaker: n.breakerState,
        latencyMs: n.ewmaMs === undefined ? null : Math.round(n.ewmaMs * 100) / 100,
        described: describedState(n),
        mismatches: n.mismatches.map((m) => m.text),
      };
    }),
  };
}

export function createAdminApp(deps: AdminAppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  const router = new Router();
  if (deps.dashboard !== undefined) app.use(deps.dashboard);

  router.get('/health/live', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/health/ready', (ctx) => {
    const chains = ctx.query.chains ?? 'all';
    if (chains !== 'all' && chains !== 'any' && chains !== 'none') {
      problem(ctx, 'INVALID_INPUT', 'chains must be one of all, any, none', 'chains');
      return;
    }
    const state = deps.lifecycle();
    const runtimes = deps.chains();
    const unusable = runtimes.filter((c) => !c.pool.hasHealthyNode()).map((c) => c.name);
    const store = deps.store();
    // Fail-open keeps serving without the store; fail-closed cannot.
    const storeOk = store.up || store.policy === 'fail-open';
    // Instances behind one load balancer share their nodes: with `all`, one chain without
    // nodes takes every instance out and with it every other chain. `any` and `none` let
    // a probe ask only whether this instance can serve something, or serve at all.
    const nodesOk = chains === 'none' || (chains === 'any' ? unusable.length < runtimes.length : unusable.length === 0);
    const ready = state === 'ready' && nodesOk && storeOk;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not ready', lifecycle: state, chainsWithoutNodes: unusable, store };
  });
  router.get('/health/chains', (ctx) => {
    ctx.body = { chains: deps.chains().map((rt) => poolState(rt, deps.holds)) };
  });
  router.get('/health/disputes', (ctx) => {
    ctx.body = { disputes: deps.disputes.list() };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = deps.scrape === undefined ? await deps.metrics.registry.metrics() : await deps.scrape();
  });

  // One matcher for both APIs: the token's digest is made once per token, not per API.
  const authorized = tokenMatcher(deps.adminToken);
  mountKeyApi(router, {
    keys: deps.keys,
    keyChanges: deps.keyChanges,
    limiter: deps.limiter,
    authorized,
    maxBodyBytes: deps.maxBodyBytes,
  });
  mountUsageHistoryApi(router, { keys: deps.keys, accounts: deps.accounts, history: deps.history, now: deps.now ?? Date.now });
  mountNodeApi(router, {
    holds: deps.holds,
    chains: deps.chains,
    authorized,
    maxBodyBytes: deps.maxBodyBytes,
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: { code: 'NOT_FOUND', message: 'No such admin route' } };
  });
  return app;
}
