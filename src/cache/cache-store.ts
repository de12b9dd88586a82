// Where cached answers live: in this process (an LRU bounded by bytes, the default)
// or in Redis (shared by every instance, with TTLs). Both index entries by the block
// height they depend on, so a reorg can evict exactly the heights it touched.

import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

/** A node's answer as the cache keeps it. */
export interface CachedAnswer {
  readonly status: number;
  /** Passthrough: the whole body; JSON-RPC: the raw JSON of `result` only (ids differ per caller). */
  readonly body: string;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface CacheStore {
  get(key: string): CachedAnswer | undefined | Promise<CachedAnswer | undefined>;
  set(chain: string, key: string, value: CachedAnswer, ttlMs: number, height: number | undefined): void;
  /** Drop every entry of a chain that depends on a height at or above `height`. */
  evictFrom(chain: string, height: number): void | Promise<void>;
  /** Heights below this are final: no reorg can reach them, so their entries leave the height index. */
  finalBelow(chain: string, height: number): void;
  /** Bytes held (this process's share for Redis: 0). */
  bytes(): number;
}

function sizeOf(v: CachedAnswer): number {
  // JS strings are UTF-16: two bytes a character, plus a little for the record.
  return v.body.length * 2 + 128;
}

export class MemoryCacheStore implements CacheStore {
  private readonly lru: LRUCache<string, CachedAnswer>;
  /** chain → height → keys, for reorg eviction; entries leave with their key. */
  private readonly byHeight = new Map<string, Map<number, Set<string>>>();
  private readonly heightOf = new Map<string, [string, number]>();

  constructor(maxBytes: number, maxEntryBytes: number) {
    this.lru = new LRUCache<string, CachedAnswer>({
      maxSize: maxBytes,
      maxEntrySize: maxEntryBytes,
      sizeCalculation: sizeOf,
      dispose: (_v, key) => this.unindex(key),
    });
  }

  private unindex(key: string): void {
    const at = this.heightOf.get(key);
    if (at === undefined) return;
    this.heightOf.delete(key);
    const heights = this.byHeight.get(at[0]);
    const keys = heights?.get(at[1]);
    keys?.delete(key);
    if (keys !== undefined && keys.size === 0) heights?.delete(at[1]);
  }

  get(key: string): CachedAnswer | undefined {
    return this.lru.get(key);
  }

  set(chain: string, key: string, value: CachedAnswer, ttlMs: number, height: number | undefined): void {
    if (sizeOf(value) > this.lru.maxEntrySize) return;
    this.lru.set(key, value, { ttl: ttlMs === Infinity ? 0 : ttlMs });
    if (height === undefined || !this.lru.has(key)) return;
    let heights = this.byHeight.get(chain);
    if (heights === undefined) {
      heights = new Map();
      this.byHeight.set(chain, heights);
    }
    let keys = heights.get(height);
    if (keys === undefined) {
      keys = new Set();
      heights.set(height, keys);
    }
    keys.add(key);
    this.heightOf.set(key, [chain, height]);
  }

  evictFrom(chain: string, height: number): void {
    const heights = this.byHeight.get(chain);
    if (heights === undefined) return;
    for (const [h, keys] of [...heights]) {
      if (h < height) continue;
      for (const k of [...keys]) this.lru.delete(k);
    }
  }

  /** In memory the index shrinks with the LRU (entries leave it when evicted): nothing to trim. */
  finalBelow(): void {}

  bytes(): number {
    return this.lru.calculatedSize;
  }
}

/**
 * Redis keeps `<prefix>cache:<sha1 of key>` with a TTL, and per chain a sorted set
 * of those keys by height for reorg eviction. Failures are misses: a cache never
 * fails a request.
 */
export class RedisCacheStore implements CacheStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix: string,
    private readonly maxEntryBytes: number,
    /** Upper bound of any TTL in Redis, so nothing lives forever there. */
    private readonly maxTtlMs: number,
  ) {}

  private k(key: string): string {
    return `${this.prefix}cache:${createHash('sha1').update(key).digest('hex')}`;
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    try {
      const v = await this.redis.get(this.k(key));
      return v === null ? undefined : (JSON.parse(v) as CachedAnswer);
    } catch {
      return undefined;
    }
  }

  set(chain: string, key: string, value: CachedAnswer, ttlMs: number, height: number | undefined): void {
    const text = JSON.stringify(value);
    if (text.length > this.maxEntryBytes) return;
    const rk = this.k(key);
    const px = Math.min(ttlMs, this.maxTtlMs);
    if (this.redis.isCluster) {
      // The entry and the chain's index live in different slots, which one MULTI cannot
      // span: the index first, so an entry that exists is always found by an eviction.
      const indexed = height === undefined ? Promise.resolve(0) : this.redis.zadd(`${this.prefix}cache:h:${chain}`, height, rk);
      indexed.then(() => this.redis.set(rk, text, 'PX', px)).catch(() => undefined);
      return;
    }
    const m = this.redis.multi().set(rk, text, 'PX', px);
    if (height !== undefined) m.zadd(`${this.prefix}cache:h:${chain}`, height, rk);
    m.exec().catch(() => undefined);
  }

  async evictFrom(chain: string, height: number): Promise<void> {
    const set = `${this.prefix}cache:h:${chain}`;
    try {
      const keys = await this.redis.zrangebyscore(set, height, '+inf');
      if (keys.length > 0 && this.redis.isCluster) {
        // One DEL per entry (they lie in many slots), then the index.
        await Promise.all(keys.map((k) => this.redis.del(k)));
        await this.redis.zremrangebyscore(set, height, '+inf');
      } else if (keys.length > 0)
        await this.redis
          .multi()
          .del(...keys)
          .zremrangebyscore(set, height, '+inf')
          .exec();
    } catch {
      // Entries left behind expire with their TTL.
    }
  }

  /** The height index would otherwise keep every key ever cached at a height (their entries expire; index members do not). */
  finalBelow(chain: string, height: number): void {
    this.redis.zremrangebyscore(`${this.prefix}cache:h:${chain}`, '-inf', `(${height}`).catch(() => undefined);
  }

  bytes(): number {
    return 0;
  }
}
