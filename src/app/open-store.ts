// Opening the configured store: key records, limits/usage, dashboard accounts and
// operators' holds on nodes together, file (embedded default: keys in a JSON file,
// limits in memory, usage, accounts and holds beside the keys) or Redis (all of it
// shared by every gateway instance, limits spent from short leases unless told to ask
// Redis on every call).

import type { AccountStore } from '../accounts/account-store.js';
import { accountsPathFor, FileAccountStore } from '../accounts/file-account-store.js';
import { RedisAccountStore } from '../accounts/redis-account-store.js';
import { openFileKeyStore } from '../auth/file-key-store.js';
import { openRedisKeyStore } from '../auth/redis-key-store.js';
import type { KeyStore } from '../auth/key-store.js';
import type { StoreConfig } from '../config/types.js';
import { MemoryConnectionSlots, type ConnectionSlots } from '../quota/connection-slots.js';
import { LeasedLimiter } from '../quota/lease.js';
import { MemoryLimiter, type Limiter } from '../quota/limiter.js';
import { RedisConnectionSlots } from '../quota/redis-connection-slots.js';
import { RedisLimiter } from '../quota/redis-limiter.js';
import { usagePathFor } from '../quota/usage-file.js';
import type { UsageHistory } from '../quota/usage-history.js';
import type { Redis } from 'ioredis';
import type { Channel } from '../cluster/channel.js';
import { PushedHoldStore } from '../cluster/shared-holds.js';
import { IpcConnectionSlots, IpcLimiter } from '../cluster/shared-limits.js';
import { FileHoldStore, holdsPathFor, RedisHoldStore, type HoldStore } from '../ops/holds/hold-store.js';
import { RedisConnection } from '../store/redis-connection.js';

export interface StoreBundle {
  readonly kind: StoreConfig['kind'];
  readonly keys: KeyStore;
  readonly limiter: Limiter;
  /** Concurrent WebSocket connections per key. */
  readonly slots: ConnectionSlots;
  /** Dashboard accounts, sign-in tokens and sessions. */
  readonly accounts: AccountStore;
  /** Operators' holds on nodes (cordon, drain). */
  readonly holds: HoldStore;
  /** The Redis connection of a Redis store (the response cache may share it). */
  readonly redis: Redis | undefined;
  /**
   * Where usage history is kept (hourly rollups, the failed-call log): a record's
   * (SQLite), written by each instance; undefined keeps none (the file and Redis stores).
   */
  readonly history?: UsageHistory;
  /** Whether the backing service answers (the file store always does). */
  up(): boolean;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  /** The gateway watches for changes made elsewhere; the CLI does not. */
  readonly live: boolean;
  readonly now?: () => number;
  readonly onHealth?: (up: boolean) => void;
  readonly onFallback?: (err: unknown) => void;
  /**
   * In a cluster's worker: the link to the primary, which keeps the memory limits,
   * usage and WebSocket slots (the file store) and operators' holds (either store).
   */
  readonly primary?: Channel;
}

export async function openStore(config: StoreConfig, options: OpenStoreOptions): Promise<StoreBundle> {
  if (config.kind === 'file') {
    // Key records are stamped in real time (rotation grace, revocation), as operators read them.
    const keys = await openFileKeyStore(config.path, { live: options.live });
    const { primary } = options;
    const limiter = primary !== undefined ? new IpcLimiter(primary) : await MemoryLimiter.open(usagePathFor(config.path), options.now);
    const slots = primary !== undefined ? new IpcConnectionSlots(primary) : new MemoryConnectionSlots();
    const accounts = await FileAccountStore.open(accountsPathFor(config.path), options.now);
    const holds = primary !== undefined ? new PushedHoldStore() : await FileHoldStore.open(holdsPathFor(config.path));
    return {
      kind: 'file',
      keys,
      limiter,
      slots,
      accounts,
      holds,
      redis: undefined,
      up: () => true,
      close: async () => {
        await slots.close();
        await accounts.close();
        await limiter.close();
        await keys.close();
      },
    };
  }
  const connection = new RedisConnection({ url: config.url, timeoutMs: config.timeoutMs, onHealth: options.onHealth });
  await connection.ready(Math.max(config.timeoutMs * 4, 1_000));
  const keys = await openRedisKeyStore(connection.client, {
    prefix: config.prefix,
    live: options.live ? { url: config.url, timeoutMs: config.timeoutMs } : undefined,
  });
  const shared = new RedisLimiter(connection.client, {
    prefix: config.prefix,
    onFailure: config.onFailure,
    instances: config.instances,
    now: options.now,
    onFallback: options.onFallback,
  });
  // Leases spend tokens taken from Redis here; without them every call asks Redis.
  const limiter: Limiter =
    config.leaseMs > 0 && config.leaseTokens !== 0
      ? new LeasedLimiter(shared, {
          leaseMs: config.leaseMs,
          leaseTokens: config.leaseTokens,
          now: options.now,
        })
      : shared;
  const slots = new RedisConnectionSlots(connection.client, {
    prefix: config.prefix,
    onFailure: config.onFailure,
    instances: config.instances,
    now: options.now,
    onFallback: options.onFallback,
  });
  const holds =
    options.primary !== undefined
      ? new PushedHoldStore()
      : await RedisHoldStore.open(connection.client, {
          prefix: config.prefix,
          live: options.live ? { url: config.url, timeoutMs: config.timeoutMs } : undefined,
        });
  return {
    kind: 'redis',
    keys,
    limiter,
    slots,
    accounts: new RedisAccountStore(connection.client, config.prefix, options.now),
    holds,
    redis: connection.client,
    up: () => connection.up,
    close: async () => {
      await holds.close();
      await slots.close();
      await keys.close();
      await limiter.close();
      await connection.close();
    },
  };
}
