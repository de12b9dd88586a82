// The usage book kept in the PostgreSQL record, where many instances write: one row
// per key, UTC day and chain, read into the book at start. Each instance adds what it
// counted since its last write (a row's write adds to the stored one, never replaces
// it), so two instances' counts sum; only rows that changed are written, sorted, in
// one multi-row upsert per flush, so the database sees one statement per instance per
// interval whatever the request rate, and two instances' flushes lock rows in one
// order. A flush that fails keeps its counts for the next; one whose commit cannot be
// confirmed (the connection lost at COMMIT) may count twice, never lose.

import type { UsageArchive, UsageBook } from '../quota/usage.js';
import type { PgDatabase } from './pg-database.js';
import { USAGE_COLUMNS, usageByKey, usageSlot as slot, type UsageDayRow } from './usage-rows.js';

const FLUSH_MS = 5_000;

type Counts = readonly [calls: number, errors: number, limited: number, invalid: number];

export class PgUsageStore implements UsageArchive {
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  /** What each row held when last read or written, by key, day and chain: what a write adds is the difference. */
  private readonly kept = new Map<string, Counts>();
  private readonly readAll: string;
  private readonly upsert: string;

  /** Over an open record (which the caller closes, after the store). */
  constructor(
    private readonly book: UsageBook,
    private readonly db: PgDatabase,
  ) {
    const table = db.table('usage_days');
    this.readAll = `SELECT ${USAGE_COLUMNS} FROM ${table} ORDER BY key_id, day, chain`;
    this.upsert = `INSERT INTO ${table} AS u (${USAGE_COLUMNS})
      SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
      ON CONFLICT (key_id, day, chain) DO UPDATE SET calls = u.calls + excluded.calls, errors = u.errors + excluded.errors,
        limited = u.limited + excluded.limited, invalid = u.invalid + excluded.invalid`;
  }

  async load(): Promise<void> {
    this.book.load(usageByKey(await this.db.query<UsageDayRow>(this.readAll, [])));
    this.kept.clear();
    for (const [keyId, rows] of Object.entries(this.book.snapshot())) {
      for (const r of rows) this.kept.set(slot(keyId, r), [r.calls, r.errors, r.limited, r.invalid ?? 0]);
    }
  }

  start(intervalMs = FLUSH_MS): void {
    this.timer = setInterval(() => void this.flush(), intervalMs).unref();
  }

  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  private async write(): Promise<void> {
    if (!this.book.dirty) return;
    this.book.dirty = false;
    const changed: Array<{ at: string; keyId: string; day: string; chain: string; now: Counts; add: Counts }> = [];
    for (const [keyId, rows] of Object.entries(this.book.snapshot())) {
      for (const r of rows) {
        const at = slot(keyId, r);
        const now: Counts = [r.calls, r.errors, r.limited, r.invalid ?? 0];
        const before = this.kept.get(at) ?? [0, 0, 0, 0];
        const add = now.map((n, i) => n - (before[i] as number)) as unknown as Counts;
        if (add.every((n) => n === 0)) continue;
        changed.push({ at, keyId, day: r.day, chain: r.chain, now, add });
      }
    }
    if (changed.length === 0) return;
    changed.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    const column = (i: number): number[] => changed.map((c) => c.add[i] as number);
    try {
      await this.db.query(this.upsert, [
        changed.map((c) => c.keyId),
        changed.map((c) => c.day),
        changed.map((c) => c.chain),
        column(0),
        column(1),
        column(2),
        column(3),
      ]);
      for (const c of changed) this.kept.set(c.at, c.now);
    } catch {
      // Unreachable or refused: what was counted stays to add at the next flush.
      this.book.dirty = true;
    }
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.flush();
  }
}
