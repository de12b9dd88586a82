// Usage per key, per UTC day, per chain endpoint: calls admitted, calls that ended
// in an error, calls refused by limits, and requests refused as invalid (they became
// no call, yet were charged against the rate). Period quotas read their totals from
// here, so the numbers a customer is billed by and the numbers that limit them are one.

export interface Counts {
  calls: number;
  errors: number;
  limited: number;
}

export interface UsageRow extends Counts {
  readonly day: string;
  readonly chain: string;
  /** Requests refused as invalid (no routable call); present when there were any, so rows from before it read the same. */
  invalid?: number;
}

interface BookCounts extends Counts {
  invalid: number;
}

interface KeyUsage {
  /** day → chain → counts */
  readonly days: Map<string, Map<string, BookCounts>>;
  readonly dayTotals: Map<string, number>;
  readonly monthTotals: Map<string, number>;
}

const DAY_MS = 86_400_000;

/** 'YYYY-MM-DD' of a UTC instant, cached for the current day (no Date per call). */
export class UtcDay {
  private dayNumber = -1;
  private text = '';
  of(now: number): string {
    const n = Math.floor(now / DAY_MS);
    if (n !== this.dayNumber) {
      this.dayNumber = n;
      this.text = new Date(n * DAY_MS).toISOString().slice(0, 10);
    }
    return this.text;
  }
}

export function nextUtcMidnight(now: number): number {
  return (Math.floor(now / DAY_MS) + 1) * DAY_MS;
}

export function nextUtcMonth(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/**
 * Where a usage book is kept between runs (a file beside the keys, the record's
 * table): read into the book at start, written when it changed, on an interval and at
 * close. The book is the truth while the gateway runs: a write replaces what was kept
 * (the file, SQLite), or, where many instances write (PostgreSQL), adds what this one
 * counted since its last write.
 */
export interface UsageArchive {
  load(): Promise<void>;
  start(intervalMs?: number): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export class UsageBook {
  private readonly byKey = new Map<string, KeyUsage>();
  private readonly day = new UtcDay();
  /** Set when anything changed since the last snapshot (persistence checks it). */
  dirty = false;

  private keyUsage(keyId: string): KeyUsage {
    let u = this.byKey.get(keyId);
    if (u === undefined) {
      u = { days: new Map(), dayTotals: new Map(), monthTotals: new Map() };
      this.byKey.set(keyId, u);
    }
    return u;
  }

  private counts(u: KeyUsage, day: string, chain: string): BookCounts {
    let chains = u.days.get(day);
    if (chains === undefined) {
      chains = new Map();
      u.days.set(day, chains);
    }
    let c = chains.get(chain);
    if (c === undefined) {
      c = { calls: 0, errors: 0, limited: 0, invalid: 0 };
      chains.set(chain, c);
    }
    return c;
  }

  add(keyId: string, chain: string, now: number, calls: number, errors: number, limited: number, invalid = 0): void {
    const day = this.day.of(now);
    const u = this.keyUsage(keyId);
    const c = this.counts(u, day, chain);
    c.calls += calls;
    c.errors += errors;
    c.limited += limited;
    c.invalid += invalid;
    if (calls !== 0) {
      const month = day.slice(0, 7);
      u.dayTotals.set(day, (u.dayTotals.get(day) ?? 0) + calls);
      u.monthTotals.set(month, (u.monthTotals.get(month) ?? 0) + calls);
    }
    this.dirty = true;
  }

  dayCalls(keyId: string, now: number): number {
    return this.byKey.get(keyId)?.dayTotals.get(this.day.of(now)) ?? 0;
  }

  monthCalls(keyId: string, now: number): number {
    return this.byKey.get(keyId)?.monthTotals.get(this.day.of(now).slice(0, 7)) ?? 0;
  }

  /** Rows for one key, oldest day first; `since` is an inclusive 'YYYY-MM-DD'. */
  rows(keyId: string, since = ''): UsageRow[] {
    const u = this.byKey.get(keyId);
    if (u === undefined) return [];
    const out: UsageRow[] = [];
    for (const [day, chains] of u.days) {
      if (day < since) continue;
      for (const [chain, c] of chains) {
        const row: UsageRow = { day, chain, calls: c.calls, errors: c.errors, limited: c.limited };
        if (c.invalid > 0) row.invalid = c.invalid;
        out.push(row);
      }
    }
    return out.sort((a, b) => (a.day === b.day ? a.chain.localeCompare(b.chain) : a.day < b.day ? -1 : 1));
  }

  /** Everything, for persistence. */
  snapshot(): Record<string, UsageRow[]> {
    const out: Record<string, UsageRow[]> = {};
    for (const keyId of this.byKey.keys()) out[keyId] = this.rows(keyId);
    return out;
  }

  /** Replace the content with a snapshot (at start, from the store). */
  load(snapshot: Readonly<Record<string, readonly UsageRow[]>>): void {
    this.byKey.clear();
    for (const [keyId, rows] of Object.entries(snapshot)) {
      const u = this.keyUsage(keyId);
      for (const r of rows) {
        const c = this.counts(u, r.day, r.chain);
        c.calls += r.calls;
        c.errors += r.errors;
        c.limited += r.limited;
        c.invalid += r.invalid ?? 0;
        const month = r.day.slice(0, 7);
        u.dayTotals.set(r.day, (u.dayTotals.get(r.day) ?? 0) + r.calls);
        u.monthTotals.set(month, (u.monthTotals.get(month) ?? 0) + r.calls);
      }
    }
    this.dirty = false;
  }
}
