// What every gateway process is built on, before any listener: the store-backed
// services, the response caches, one runtime per chain endpoint, operators' holds on
// their nodes and usage history's rollups (when a history is kept: each process writes
// its own). A cluster's primary announces key and hold changes to its workers; a
// worker probes nothing (it takes the primary's health) and reads holds it is pushed.

import { MemoryCacheStore, RedisCacheStore } from '../cache/cache-store.js';
import { largestBatch, runtimeOptions, type RuntimeOptions } from '../chain/runtime.js';
import { ChainSet, chainRuntimes, type CacheStores } from './chain-set.js';
import type { GatewayConfig, UsageConfig } from '../config/types.js';
import { storeFailurePolicy } from '../config/store-config.js';
import { DisputeLog } from '../exec/policies/disputes.js';
import type { Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import { NodeHolds } from '../ops/holds/node-holds.js';
import type { UsageHistory } from '../quota/usage-history.js';
import { UsageRollup } from '../quota/usage-rollup.js';
import { openServices, type Services } from './services.js';
import type { Channel } from '../cluster/channel.js';
import type { PrimaryHooks } from './roles.js';

/** Who probes the pools: false in a cluster's worker; `judged` tells a primary's workers each round's verdict. */
export type Probing = Pick<RuntimeOptions, 'probes' | 'judged'>;

export interface CoreParts {
  readonly services: Services;
  readonly caches: CacheStores;
  readonly chains: ChainSet;
  readonly holds: NodeHolds;
  readonly probing: Probing;
  /** Where usage history is kept (GatewayOptions.history, else the record's). */
  readonly history: UsageHistory;
  /** Each call's usage, gathered and written to the history every usage.flushInterval; undefined when none is kept. */
  readonly usage: UsageRollup;
}

export interface CoreContext {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** A cluster's primary: how it tells its workers. */
  readonly hooks?: PrimaryHooks;
  /** A cluster's worker: its link to the primary. */
  readonly primary?: Channel;
  /** Where usage history is written when not the store's own (GatewayOptions.history). */
  readonly history?: UsageHistory;
}

/** With the Redis hot state, holds are read again now and then, in case an announcement was lost. */
const HOLDS_REFRESH_MS = 30_000;

export async function openCore(config: GatewayConfig, ctx: CoreContext): Promise<CoreParts> {
  const { logger, metrics, now, hooks, primary } = ctx;
  const services = await openServices(config, {
    primary,
    live: true,
    now,
    onHealth: (up) =>
      logger[up ? 'info' : 'error'](up ? 'store reachable' : 'store unreachable', { event: 'store', hot: config.store.hot.kind, up }),
    onFallback: () => metrics.storeFallbacks.inc({ policy: storeFailurePolicy(config.store) }),
  });
  if (hooks !== undefined) services.bundle.keys.announceTo((change) => hooks.keys(change));
  const caches = cacheStores(config, services);
  const probing: Probing = {
    probes: primary === undefined,
    judged: hooks === undefined ? undefined : (pool) => hooks.health(pool.health()),
  };
  const built = runtimeOptions(config.server, caches, largestBatch(config), probing, new DisputeLog());
  const chains = new ChainSet(chainRuntimes(config, metrics, logger, built), built);
  const holds = await NodeHolds.open(services.bundle.holds, () => chains.all, logger, {
    // A worker's holds are pushed by its primary.
    refreshMs: config.store.hot.kind === 'redis' && primary === undefined ? HOLDS_REFRESH_MS : 0,
    now,
    announce: hooks?.holds,
  });
  holds.apply();
  const history = ctx.history ?? services.bundle.history;
  return { services, caches, chains, holds, probing, history, usage: usageRollup(config.usage, history, now, logger) };
}

/** Rollups over `history`, writing on their interval. */
function usageRollup(config: UsageConfig, history: UsageHistory, now: () => number, logger: Logger): UsageRollup {
  const rollup = new UsageRollup(history, {
    flushIntervalMs: config.flushIntervalMs,
    retentionMs: config.retentionMs,
    failedPerKey: config.failedCalls.perKey,
    failedMaxAgeMs: config.failedCalls.maxAgeMs,
    now,
    onError: (err) =>
      logger.warn('usage history not written; it goes with the next write', {
        event: 'usage',
        error: (err as Error).message ?? String(err),
      }),
  });
  rollup.start();
  return rollup;
}

/** The core's gauges, read at each scrape. */
export function watchCore(metrics: Metrics, core: CoreParts): void {
  const { services, caches, chains } = core;
  metrics.watchStore(() => services.bundle.up());
  metrics.watchCache(() => caches.memory.bytes());
  metrics.watchPools(() => chains.all.map((c) => c.pool));
  metrics.watchInFlight(() => chains.all.map((c) => [c.name, c.load.inFlight] as const));
}

/** Every node probed once (waiting at most `waitMs`), then the probers run on their interval. */
export async function firstProbes(chains: ChainSet, waitMs: number): Promise<void> {
  const first = Promise.all(chains.all.map((c) => c.prober.probeAll()));
  for (const c of chains.all) c.prober.start();
  await Promise.race([first, new Promise((r) => setTimeout(r, waitMs).unref())]);
}

function cacheStores(config: GatewayConfig, services: Services): CacheStores {
  const { redis } = services.bundle;
  const { hot } = config.store;
  return {
    memory: new MemoryCacheStore(config.cache.maxBytes, config.cache.maxEntryBytes),
    redis:
      redis === undefined || hot.kind !== 'redis'
        ? undefined
        : new RedisCacheStore(redis, hot.prefix, config.cache.maxEntryBytes, config.cache.redisMaxTtlMs),
  };
}
