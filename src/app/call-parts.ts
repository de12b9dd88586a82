// What the request path shares across the listeners: the key cache, access (tiers and
// limits), who is calling (the identifier, where every last use is recorded) and the
// call path.

import { KeyCache } from '../auth/key-cache.js';
import type { Channel } from '../cluster/channel.js';
import type { GatewayConfig } from '../config/types.js';
import { storeFailurePolicy } from '../config/store-config.js';
import { CallAccess } from '../exec/access.js';
import { CallPath } from '../exec/call-path.js';
import type { TrustedProxies } from '../exec/client-address.js';
import { Identifier } from '../exec/identify.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { UsageRollup } from '../quota/usage-rollup.js';
import type { Services } from './services.js';

export interface CallParts {
  readonly keyCache: KeyCache;
  readonly access: CallAccess;
  readonly identifier: Identifier;
  readonly path: CallPath;
  /** Where every listener records each call's usage history; undefined when none is kept. */
  readonly usage: UsageRollup | undefined;
}

export interface CallContext {
  /** The config in force (tiers are read per call, so a reload applies). */
  readonly config: () => GatewayConfig;
  readonly services: Services;
  readonly metrics: Metrics;
  readonly now: () => number;
  readonly trustedProxies: () => TrustedProxies;
  /** A cluster's worker: its link to the primary, which writes every last use. */
  readonly primary?: Channel;
  readonly usage?: UsageRollup;
}

export function callParts(ctx: CallContext): CallParts {
  const { services, metrics, now, primary } = ctx;
  const config = ctx.config();
  const store = services.bundle.keys;
  const keyCache = new KeyCache(
    store,
    {
      ttlMs: config.keys.cacheTtlMs,
      maxEntries: config.keys.cacheMaxEntries,
      negativeTtlMs: config.keys.negativeTtlMs,
      negativeMaxEntries: config.keys.negativeMaxEntries,
      onStoreError: storeFailurePolicy(config.store),
    },
    { hit: () => metrics.keyCache.add(1, 'hit'), miss: () => metrics.keyCache.add(1, 'miss') },
    now,
  );
  const access = new CallAccess({ limiter: services.bundle.limiter, tiers: () => ctx.config().tiers, metrics });
  const identifier = new Identifier({
    keys: keyCache,
    access,
    now,
    trustedProxies: ctx.trustedProxies,
    metrics,
    // A worker's last uses are written by the primary: one writer of the file.
    touch: primary === undefined ? (id, at) => store.touch(id, at) : (id, at) => primary.note('keys.touch', [id, at]),
  });
  return { keyCache, access, identifier, path: new CallPath(access, metrics), usage: ctx.usage };
}
