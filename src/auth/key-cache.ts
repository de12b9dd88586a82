// The request path's view of the key store: an LRU of key records by hash, with a
// TTL, a bound on entries, and negative entries so a flood of unknown keys never
// reaches the store. Store changes drop entries at once (revoke, rotate, create).

import { LRUCache } from 'lru-cache';
import { GatewayError } from '../errors.js';
import { hashKey } from './key-format.js';
import { keyState, type KeyMatch, type KeyRecord, type KeyStore } from './key-store.js';

const UNKNOWN = Symbol('unknown');
type Entry = KeyMatch | typeof UNKNOWN;

export interface KeyCacheOptions {
  readonly ttlMs: number;
  readonly maxEntries: number;
  readonly negativeTtlMs: number;
  /** When the store fails: fail-open answers from expired entries it still holds; fail-closed refuses. */
  readonly onStoreError?: 'fail-open' | 'fail-closed';
}

export interface KeyCacheEvents {
  hit?(): void;
  miss?(): void;
}

export class KeyCache {
  private readonly lru: LRUCache<string, Entry>;
  private readonly pending = new Map<string, Promise<Entry>>();

  constructor(
    private readonly store: KeyStore,
    private readonly options: KeyCacheOptions,
    private readonly events: KeyCacheEvents = {},
    private readonly now: () => number = Date.now,
  ) {
    // Expired entries stay until evicted, so fail-open can still use them while the store is away.
    this.lru = new LRUCache<string, Entry>({ max: options.maxEntries, ttl: Math.max(options.ttlMs, 1), noDeleteOnStaleGet: true });
    store.onChange((change) => {
      if ('all' in change) this.lru.clear();
      else for (const h of change.hashes) this.lru.delete(h);
    });
  }

  /** The record the key belongs to; throws INVALID_KEY for unknown, revoked or expired keys. */
  async lookup(key: string): Promise<KeyRecord> {
    return (await this.lookupHash(hashKey(key))).record;
  }

  /**
   * The match for a key's hash, with until when the presented value works (long-lived
   * connections keep the hash, never the key, and ask again when the store changes).
   */
  async lookupHash(hash: string): Promise<KeyMatch> {
    const cached = this.peekHash(hash);
    if (cached !== undefined) return cached;
    this.events.miss?.();
    return this.check(await this.load(hash));
  }

  /**
   * The cached answer for a hash without waiting: the match, or undefined when the
   * store must be asked (lookupHash). Throws INVALID_KEY like lookupHash. Most
   * requests end here, with no promise at all.
   */
  peekHash(hash: string): KeyMatch | undefined {
    const entry = this.lru.get(hash);
    if (entry === undefined) return undefined;
    this.events.hit?.();
    return this.check(entry);
  }

  private check(entry: Entry): KeyMatch {
    if (entry === UNKNOWN) throw new GatewayError('INVALID_KEY');
    const now = this.now();
    if (now >= entry.validUntil || keyState(entry.record, now) !== 'active') throw new GatewayError('INVALID_KEY');
    return entry;
  }

  private load(hash: string): Promise<Entry> {
    let p = this.pending.get(hash);
    if (p === undefined) {
      p = this.store
        .findByHash(hash)
        .then(
          (match): Entry => {
            const entry = match ?? UNKNOWN;
            const ttl = match === undefined ? this.options.negativeTtlMs : this.options.ttlMs;
            if (ttl > 0) this.lru.set(hash, entry, { ttl });
            return entry;
          },
          (err: unknown): Entry => {
            const stale = this.options.onStoreError === 'fail-open' ? this.lru.get(hash, { allowStale: true }) : undefined;
            if (stale !== undefined) return stale;
            throw new GatewayError('UNAVAILABLE', { message: 'Key store unavailable', cause: err, headers: { 'retry-after': '1' } });
          },
        )
        .finally(() => this.pending.delete(hash));
      this.pending.set(hash, p);
    }
    return p;
  }

  get size(): number {
    return this.lru.size;
  }
}
