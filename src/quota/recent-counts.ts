// Calls of the current UTC day and month per id, and nothing older, in a bounded
// LRU: what a Redis limiter counts on while Redis is away. Seeded from the last
// state Redis reported, so a fallback starts where the shared limits stood, not at
// zero; ids not seen for long fall out (they start from zero, as before).

import { LRUCache } from 'lru-cache';
import type { PeriodCounts } from './admission.js';
import { UtcDay } from './usage.js';

interface Periods {
  day: string;
  dayCalls: number;
  month: string;
  monthCalls: number;
}

export class RecentCounts implements PeriodCounts {
  private readonly lru: LRUCache<string, Periods>;
  private readonly utc = new UtcDay();

  constructor(maxIds = 100_000) {
    this.lru = new LRUCache<string, Periods>({ max: maxIds });
  }

  private current(id: string, now: number): Periods {
    const day = this.utc.of(now);
    const month = day.slice(0, 7);
    let p = this.lru.get(id);
    if (p === undefined) {
      p = { day, dayCalls: 0, month, monthCalls: 0 };
      this.lru.set(id, p);
    }
    if (p.day !== day) {
      p.day = day;
      p.dayCalls = 0;
    }
    if (p.month !== month) {
      p.month = month;
      p.monthCalls = 0;
    }
    return p;
  }

  dayCalls(id: string, now: number): number {
    const p = this.lru.get(id);
    return p !== undefined && p.day === this.utc.of(now) ? p.dayCalls : 0;
  }

  monthCalls(id: string, now: number): number {
    const p = this.lru.get(id);
    return p !== undefined && p.month === this.utc.of(now).slice(0, 7) ? p.monthCalls : 0;
  }

  add(id: string, _chain: string, now: number, calls: number): void {
    if (calls === 0) return;
    const p = this.current(id, now);
    p.dayCalls += calls;
    p.monthCalls += calls;
  }

  /** Take these counts as the current ones (from the shared store's last answer). */
  seed(id: string, now: number, dayCalls: number, monthCalls: number): void {
    const p = this.current(id, now);
    p.dayCalls = dayCalls;
    p.monthCalls = monthCalls;
  }
}
