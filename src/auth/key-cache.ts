// The request path's view of the key store: an LRU of key records by hash, with a
// TTL and a bound on entries, and beside it a small LRU of its own for hashes the
// store does not know, so a flood of random keys never reaches the store and never
// evicts a valid key. Store changes drop entries at once; hashes announced as no
// longer working are refused from then on, even while the store cannot be asked.

import { LRUCache } from 'lru-cache';
import { GatewayError } from '../errors.js';
import { hashKey } from './key-format.js';
import { keyState, type KeyMatch, type KeyRecord, type KeyStore, type StoreChange } from './key-store.js';

/** A hash announced as no longer working (revoked, or a retired value dropped). */
const INVALID = Symbol('invalid');
type Entry = KeyMatch | typeof INVALID;

/** An entry and the epoch it was read in: entries of another epoch are asked again (but kept for fail-open). */
interface Cached {
  readonly entry: Entry;
  readonly epoch: number;
}

/** The epoch of an entry whose key changed: never current, so it is asked again. */
const ASK_AGAIN = -1;

export interface KeyCacheOptions {
  readonly ttlMs: number;
  readonly maxEntries: number;
  readonly negativeTtlMs: number;
  /** Bound of the unknown-hash cache (its own, so unknown keys cannot push out known ones). */
  readonly negativeMaxEntries?: number;
  /** When the store fails: fail-open answers from expired entries it still holds; fail-closed refuses. */
  readonly onStoreError?: 'fail-open' | 'fail-closed';
}

export interface KeyCacheEvents {
  hit?(): void;
  miss?(): void;
}

export const DEFAULT_NEGATIVE_MAX_ENTRIES = 10_000;

export class KeyCache {
  private readonly lru: LRUCache<string, Cached>;
  private readonly unknown: LRUCache<string, true> | undefined;
  private readonly pending = new Map<string, Promise<Entry>>();
  /** Loads in flight whose hash changed meanwhile: their answer is not cached (or, when invalid, not used). */
  private readonly changedWhileLoading = new Map<string, 'changed' | 'invalid'>();
  private epoch = 0;

  constructor(
    private readonly store: KeyStore,
    private readonly options: KeyCacheOptions,
    private readonly events: KeyCacheEvents = {},
    private readonly now: () => number = Date.now,
  ) {
    // Expired entries stay until evicted, so fail-open can still use them while the store is away.
    // Both follow the injected clock, so a test can move time past their TTLs.
    const perf = { now };
    this.lru = new LRUCache<string, Cached>({ max: options.maxEntries, ttl: Math.max(options.ttlMs, 1), noDeleteOnStaleGet: true, perf });
    this.unknown =
      options.negativeTtlMs > 0
        ? new LRUCache<string, true>({
            max: options.negativeMaxEntries ?? DEFAULT_NEGATIVE_MAX_ENTRIES,
            ttl: options.negativeTtlMs,
            noDeleteOnStaleGet: true,
            perf,
          })
        : undefined;
    store.onChange((change) => this.apply(change));
  }

  private apply(change: StoreChange): void {
    if ('all' in change) {
      // Everything is asked again; what we knew stays for fail-open, and loads in flight are not cached.
      this.epoch++;
      this.unknown?.clear();
      for (const h of this.pending.keys()) if (!this.changedWhileLoading.has(h)) this.changedWhileLoading.set(h, 'changed');
      return;
    }
    const invalid = new Set(change.invalid);
    for (const h of change.hashes) {
      this.unknown?.delete(h);
      if (this.pending.has(h)) this.changedWhileLoading.set(h, invalid.has(h) ? 'invalid' : 'changed');
      const cached = this.lru.peek(h, { allowStale: true });
      if (cached === undefined) continue;
      // A hash that no longer works is remembered as such: refused even while the store is away.
      // Any other change is asked again, the old answer kept only for fail-open.
      this.lru.set(h, invalid.has(h) ? { entry: INVALID, epoch: this.epoch } : { entry: cached.entry, epoch: ASK_AGAIN });
    }
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
    const cached = this.lru.get(hash);
    if (cached !== undefined && cached.epoch === this.epoch) {
      this.events.hit?.();
      return this.check(cached.entry);
    }
    if (cached === undefined && this.unknown?.get(hash) === true) {
      this.events.hit?.();
      throw new GatewayError('INVALID_KEY');
    }
    return undefined;
  }

  private check(entry: Entry): KeyMatch {
    if (entry === INVALID) throw new GatewayError('INVALID_KEY');
    const now = this.now();
    if (now >= entry.validUntil || keyState(entry.record, now) !== 'active') throw new GatewayError('INVALID_KEY');
    return entry;
  }

  private load(hash: string): Promise<Entry> {
    let p = this.pending.get(hash);
    if (p === undefined) {
      // Asked twice at most: a command that timed out only because this process's event
      // loop stalled past the store's timeout (the timer runs before the reply is read)
      // is answered by asking again at once, and a store that is away refuses the second
      // ask at once too (no offline queue).
      p = this.store
        .findByHash(hash)
        .catch(() => this.store.findByHash(hash))
        .then(
          (match): Entry => this.loaded(hash, match),
          (err: unknown): Entry => {
            if (this.changedWhileLoading.get(hash) === 'invalid') return INVALID;
            if (this.options.onStoreError === 'fail-open') {
              const stale = this.lru.get(hash, { allowStale: true });
              if (stale !== undefined) return stale.entry;
              // Unknown when last asked, and no change announced since: still unknown.
              if (this.changedWhileLoading.get(hash) === undefined && this.unknown?.get(hash, { allowStale: true }) === true)
                return INVALID;
            }
            throw new GatewayError('UNAVAILABLE', { message: 'Key store unavailable', cause: err, headers: { 'retry-after': '1' } });
          },
        )
        .finally(() => {
          this.pending.delete(hash);
          this.changedWhileLoading.delete(hash);
        });
      this.pending.set(hash, p);
    }
    return p;
  }

  private loaded(hash: string, match: KeyMatch | undefined): Entry {
    const changed = this.changedWhileLoading.get(hash);
    // Read before a change to this hash landed: answered, never cached (an invalidated one not even answered).
    if (changed === 'invalid') return INVALID;
    if (match === undefined) {
      if (changed === undefined) this.unknown?.set(hash, true);
      return INVALID;
    }
    if (changed === undefined && this.options.ttlMs > 0) this.lru.set(hash, { entry: match, epoch: this.epoch });
    return match;
  }

  get size(): number {
    return this.lru.size;
  }

  /** Hashes remembered as unknown. */
  get unknownSize(): number {
    return this.unknown?.size ?? 0;
  }
}
