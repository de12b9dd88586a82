// A gateway's part in a cluster (server.workers > 1, src/cluster/): absent, it is the
// one process serving everything.

import type { StoreChange } from '../auth/key-store.js';
import type { Channel } from '../cluster/channel.js';
import type { PoolHealth } from '../pool/pool.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';

/**
 * A cluster's primary keeps the shared state (limits, usage, slots, holds, key writes),
 * the one prober per chain and the admin listener, and serves no traffic; a worker
 * serves traffic and asks the primary for the rest.
 */
export type ClusterRole =
  { readonly role: 'primary'; readonly hooks: PrimaryHooks } | { readonly role: 'worker'; readonly primary: Channel };

/** How a cluster's primary tells its workers. */
export interface PrimaryHooks {
  /** After every probe round: the pool's health. */
  health(health: PoolHealth): void;
  /** The holds in force changed: awaited before an operator's change returns. */
  holds(holds: ReadonlyMap<string, NodeHoldRecord>): Promise<void>;
  /** A key changed here: awaited before the change returns. */
  keys(change: StoreChange): Promise<void>;
  /** The /metrics text: every worker's series with this process's. */
  scrape(): Promise<string>;
}
