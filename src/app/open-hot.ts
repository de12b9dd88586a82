// Opening the hot state named by `store.hot` over an open record: rate limits, quota
// counters, leases and WebSocket slots, and how key changes and holds reach other
// instances. Memory: one instance's limiter, its usage book kept in the record (in a
// cluster, the primary keeps it and the workers ask over IPC). Redis: limits and slots
// shared by every instance (spent from short leases unless told to ask Redis on every
// call), and key changes and holds announced on Redis pub/sub.

import { announceKeys } from '../auth/key-announcements.js';
import type { Channel } from '../cluster/channel.js';
import { PushedHoldStore } from '../cluster/shared-holds.js';
import { IpcConnectionSlots, IpcLimiter } from '../cluster/shared-limits.js';
import type { HotConfig, RedisHotConfig } from '../config/types.js';
import { AnnouncedHoldStore } from '../ops/holds/announced-holds.js';
import type { HoldStore } from '../ops/holds/hold-store.js';
import { MemoryConnectionSlots, type ConnectionSlots } from '../quota/connection-slots.js';
import { LeasedLimiter } from '../quota/lease.js';
import { MemoryLimiter, type Limiter } from '../quota/limiter.js';
import { RedisConnectionSlots } from '../quota/redis-connection-slots.js';
import { RedisLimiter } from '../quota/redis-limiter.js';
import { RedisChannels } from '../store/redis-channels.js';
import { RedisConnection, type RedisClient } from '../store/redis-connection.js';
import type { RecordParts } from './open-record.js';

export interface HotParts {
  readonly kind: HotConfig['kind'];
  readonly limiter: Limiter;
  /** Concurrent WebSocket connections per key. */
  readonly slots: ConnectionSlots;
  /** The record's holds as this process sees them: announced to other instances, or pushed by a cluster's primary. */
  readonly holds: HoldStore;
  /** The Redis connection of the Redis hot state (the response cache may share it). */
  readonly redis: RedisClient | undefined;
  /** Whether Redis answers (memory always does). */
  up(): boolean;
  /** Before the record closes (the usage book is flushed into it). */
  close(): Promise<void>;
}

export interface OpenHotOptions {
  /** The gateway listens for other instances' announcements; the CLI only writes. */
  readonly live: boolean;
  readonly now?: () => number;
  readonly onHealth?: (up: boolean) => void;
  readonly onFallback?: (err: unknown) => void;
  /**
   * In a cluster's worker: the link to the primary, which keeps the memory limits,
   * usage and WebSocket slots and operators' holds.
   */
  readonly primary?: Channel;
}

export async function openHot(config: HotConfig, record: RecordParts, options: OpenHotOptions): Promise<HotParts> {
  return config.kind === 'redis' ? openRedisHot(config, record, options) : openMemoryHot(record, options);
}

async function openMemoryHot(record: RecordParts, options: OpenHotOptions): Promise<HotParts> {
  const { primary } = options;
  const limiter = primary !== undefined ? new IpcLimiter(primary) : await MemoryLimiter.openWith(record.usage, options.now);
  const slots = primary !== undefined ? new IpcConnectionSlots(primary) : new MemoryConnectionSlots();
  const holds = primary !== undefined ? new PushedHoldStore() : record.holds;
  return {
    kind: 'memory',
    limiter,
    slots,
    holds,
    redis: undefined,
    up: () => true,
    close: async () => {
      await holds.close();
      await slots.close();
      await limiter.close();
    },
  };
}

async function openRedisHot(config: RedisHotConfig, record: RecordParts, options: OpenHotOptions): Promise<HotParts> {
  const connection = new RedisConnection({ servers: config.servers, timeoutMs: config.timeoutMs, onHealth: options.onHealth });
  await connection.ready(Math.max(config.timeoutMs * 4, 1_000));
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
      ? new LeasedLimiter(shared, { leaseMs: config.leaseMs, leaseTokens: config.leaseTokens, now: options.now })
      : shared;
  const slots = new RedisConnectionSlots(connection.client, {
    prefix: config.prefix,
    onFailure: config.onFailure,
    instances: config.instances,
    now: options.now,
    onFallback: options.onFallback,
  });
  const channels = await RedisChannels.open(connection.client, config.servers, config.timeoutMs);
  await announceKeys(record.keys, channels, config.prefix, options.live);
  // A worker's holds are pushed by its primary, which hears the other instances.
  const holds =
    options.primary !== undefined
      ? new PushedHoldStore()
      : await AnnouncedHoldStore.open(record.holds, channels, config.prefix, options.live);
  return {
    kind: 'redis',
    limiter,
    slots,
    holds,
    redis: connection.client,
    up: () => connection.up,
    close: async () => {
      await holds.close();
      await slots.close();
      await limiter.close();
      await channels.close();
      await connection.close();
    },
  };
}
