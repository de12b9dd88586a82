// Failed sign-ins counted per client address in one-minute windows: past the limit
// the address is refused (429) until its window ends, before any token is looked
// at. Per instance and in memory: the tokens themselves carry 190 random bits, so
// this only keeps guessers and broken scripts from hammering the store.

import { LRUCache } from 'lru-cache';

const WINDOW_MS = 60_000;

export class SigninThrottle {
  /** address → failures in the window that started at `since`. */
  private readonly failures = new LRUCache<string, { since: number; count: number }>({ max: 100_000 });

  constructor(
    private perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  configure(perMinute: number): void {
    this.perMinute = perMinute;
  }

  /** Seconds until the address may try again, or 0 when it may try now. */
  retryAfter(address: string): number {
    const f = this.failures.get(address);
    if (f === undefined) return 0;
    const left = f.since + WINDOW_MS - this.now();
    // Past the window, or a clock that stepped back: start afresh.
    if (left <= 0 || left > WINDOW_MS) {
      this.failures.delete(address);
      return 0;
    }
    return f.count >= this.perMinute ? Math.ceil(left / 1000) : 0;
  }

  failed(address: string): void {
    const now = this.now();
    const f = this.failures.get(address);
    if (f === undefined || f.since + WINDOW_MS <= now || f.since > now) this.failures.set(address, { since: now, count: 1 });
    else f.count++;
  }
}
