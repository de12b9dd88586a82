// Connection slots shared by every instance through Redis: one sorted set per key
// whose members are live connections scored by when they lapse. An instance renews
// its own connections on a heartbeat, so the slots of an instance that died lapse
// by themselves. When Redis fails, the store's policy applies: fail-open counts in
// this process with the cap divided by the instance count, fail-closed refuses.

import type { RedisClient } from '../store/redis-connection.js';
import { GatewayError } from '../errors.js';
import { MemoryConnectionSlots, type ConnectionSlots } from './connection-slots.js';
import { script, type ScriptCall } from '../store/redis-scripts.js';

/** A slot lapses this long after its last renewal; renewals come every third of it. */
const LEASE_MS = 90_000;

/** KEYS: the key's set. ARGV: now, lease end, slot id, cap. Returns 1 taken, 0 full. */
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ${LEASE_MS})
return 1
`;

export interface RedisSlotsOptions {
  readonly prefix: string;
  readonly onFailure: 'fail-open' | 'fail-closed';
  readonly instances: number;
  readonly now?: () => number;
  readonly onFallback?: (err: unknown) => void;
}

export class RedisConnectionSlots implements ConnectionSlots {
  /** Slots this instance holds in Redis, renewed on the heartbeat: key id → slot ids. */
  private readonly mine = new Map<string, Set<string>>();
  /** Slots taken locally while Redis was away. */
  private readonly local = new MemoryConnectionSlots();
  private readonly localSlots = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;
  private readonly take: ScriptCall;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RedisSlotsOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.take = script(redis, 'noderouterTakeSlot', 1, ACQUIRE);
    this.timer = setInterval(() => void this.renew(), LEASE_MS / 3).unref();
  }

  private setKey(keyId: string): string {
    return `${this.options.prefix}ws:${keyId}`;
  }

  async acquire(keyId: string, slot: string, cap: number): Promise<boolean> {
    if (cap === Infinity) {
      this.remember(keyId, slot);
      return true;
    }
    const now = this.now();
    let taken: number;
    try {
      taken = (await this.take(this.setKey(keyId), now, now + LEASE_MS, slot, cap)) as number;
    } catch (err) {
      this.options.onFallback?.(err);
      if (this.options.onFailure === 'fail-closed') {
        throw new GatewayError('UNAVAILABLE', { message: 'Limits store unavailable', cause: err, headers: { 'retry-after': '1' } });
      }
      const ok = this.local.take(keyId, slot, Math.max(1, Math.floor(cap / this.options.instances)));
      if (ok) this.localSlots.add(slot);
      return ok;
    }
    if (taken !== 1) return false;
    this.remember(keyId, slot);
    return true;
  }

  private remember(keyId: string, slot: string): void {
    let set = this.mine.get(keyId);
    if (set === undefined) {
      set = new Set();
      this.mine.set(keyId, set);
    }
    set.add(slot);
  }

  release(keyId: string, slot: string): void {
    if (this.localSlots.delete(slot)) {
      this.local.release(keyId, slot);
      return;
    }
    const set = this.mine.get(keyId);
    set?.delete(slot);
    if (set?.size === 0) this.mine.delete(keyId);
    // Best effort: a slot whose removal is lost lapses with its lease.
    this.redis.zrem(this.setKey(keyId), slot).catch(() => undefined);
  }

  /**
   * Push every held slot's lease forward: commands per key, sent together (a cluster
   * refuses one pipeline over keys of several slots).
   */
  private async renew(): Promise<void> {
    if (this.mine.size === 0) return;
    const until = this.now() + LEASE_MS;
    const sent: Promise<unknown>[] = [];
    for (const [keyId, slots] of this.mine) {
      const k = this.setKey(keyId);
      sent.push(this.redis.zadd(k, ...[...slots].flatMap((s) => [until, s])), this.redis.pexpire(k, LEASE_MS));
    }
    await Promise.all(sent).catch(() => undefined);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    const sent = [...this.mine].map(([keyId, slots]) => this.redis.zrem(this.setKey(keyId), ...slots));
    this.mine.clear();
    await Promise.all(sent).catch(() => undefined);
  }
}
