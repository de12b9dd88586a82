// Opening the configured store: the record (store.record: accounts, keys, usage
// archive, holds; open-record.ts) and the hot state over it (store.hot: limits, slots,
// announcements; open-hot.ts), as one bundle the gateway and the CLI share, closed in
// reverse order (the hot state flushes into the record before it closes).

import type { AccountStore } from '../accounts/account-store.js';
import type { KeyStore } from '../auth/key-store.js';
import type { HotConfig, RecordConfig, StoreConfig } from '../config/types.js';
import type { HoldStore } from '../ops/holds/hold-store.js';
import type { ConnectionSlots } from '../quota/connection-slots.js';
import type { Limiter } from '../quota/limiter.js';
import type { UsageHistory } from '../quota/usage-history.js';
import type { RedisClient } from '../store/redis-connection.js';
import { openHot, type HotParts, type OpenHotOptions } from './open-hot.js';
import { openRecord } from './open-record.js';

export interface StoreBundle {
  /** What keeps the record (sqlite, postgres). */
  readonly record: RecordConfig['kind'];
  /** What keeps the hot state (memory, redis). */
  readonly hot: HotConfig['kind'];
  readonly keys: KeyStore;
  readonly limiter: Limiter;
  /** Concurrent WebSocket connections per key. */
  readonly slots: ConnectionSlots;
  /** Dashboard accounts, sign-in tokens and sessions. */
  readonly accounts: AccountStore;
  /** Operators' holds on nodes (cordon, drain). */
  readonly holds: HoldStore;
  /** The Redis connection of the Redis hot state (the response cache may share it). */
  readonly redis: RedisClient | undefined;
  /** Where this process writes usage history (hourly rollups, the failed-call log): the record's. */
  readonly history: UsageHistory;
  /** Whether the hot state's service answers (memory always does). */
  up(): boolean;
  close(): Promise<void>;
}

export type OpenStoreOptions = OpenHotOptions;

export async function openStore(config: StoreConfig, options: OpenStoreOptions): Promise<StoreBundle> {
  const record = await openRecord(config.record, options);
  let hot: HotParts;
  try {
    hot = await openHot(config.hot, record, options);
  } catch (err) {
    await record.close();
    throw err;
  }
  return {
    record: record.kind,
    hot: hot.kind,
    keys: record.keys,
    limiter: hot.limiter,
    slots: hot.slots,
    accounts: record.accounts,
    holds: hot.holds,
    redis: hot.redis,
    history: record.history,
    up: () => hot.up(),
    close: async () => {
      await hot.close();
      await record.close();
    },
  };
}
