// A chain endpoint's response cache: keys from the call (the height is part of the
// call, the API key never is), answers stored only when good and final enough, a
// reorg seen by the probes evicts the heights it touched, and identical calls in
// flight at the same moment share one node call.

import type { CachedAnswer, CacheStore } from './cache-store.js';

/** How far below a changed head hash a reorg may reach; deeper heights are final. */
export const REORG_WINDOW = 64;
const HEADS_KEPT = 1024;

export interface CacheEvents {
  lookup?(chain: string, hit: boolean): void;
  coalesced?(chain: string): void;
}

export class ResponseCache {
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly heads = new Map<number, string>();
  /** The highest head seen: the height index is trimmed as it moves. */
  private top = 0;

  constructor(
    readonly chain: string,
    private readonly store: CacheStore,
    private readonly events: CacheEvents = {},
  ) {}

  key(parts: string): string {
    return `${this.chain}\u0000${parts}`;
  }

  /** The kept answer; at once (no promise) when the store is in this process. */
  get(key: string): CachedAnswer | undefined | Promise<CachedAnswer | undefined> {
    const v = this.store.get(key);
    if (v instanceof Promise) return v.then((found) => this.looked(found));
    return this.looked(v);
  }

  private looked(v: CachedAnswer | undefined): CachedAnswer | undefined {
    this.events.lookup?.(this.chain, v !== undefined);
    return v;
  }

  set(key: string, value: CachedAnswer, ttlMs: number, height: number | undefined): void {
    this.store.set(this.chain, key, value, ttlMs, height);
  }

  /**
   * Run `fn` once for every identical call that arrives while it runs; each caller
   * gets the same result and whether it was the one that ran it.
   */
  async coalesce<T>(key: string, fn: () => Promise<T>): Promise<{ value: T; leader: boolean }> {
    const running = this.inFlight.get(key) as Promise<T> | undefined;
    if (running !== undefined) {
      this.events.coalesced?.(this.chain);
      return { value: await running, leader: false };
    }
    const p = fn().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    return { value: await p, leader: true };
  }

  /** Told of every head a probe saw; a known height with a new hash is a reorg. */
  observeHead(height: number | undefined, hash: string | undefined): void {
    if (height === undefined || hash === undefined) return;
    const known = this.heads.get(height);
    this.heads.set(height, hash);
    if (known !== undefined && known !== hash) {
      for (const h of [...this.heads.keys()]) if (h >= height) this.heads.delete(h);
      this.heads.set(height, hash);
      void this.store.evictFrom(this.chain, Math.max(0, height - REORG_WINDOW));
    }
    if (height > this.top) {
      this.top = height;
      this.store.finalBelow(this.chain, height - REORG_WINDOW);
    }
    if (this.heads.size > HEADS_KEPT) {
      const oldest = Math.min(...this.heads.keys());
      this.heads.delete(oldest);
    }
  }
}
