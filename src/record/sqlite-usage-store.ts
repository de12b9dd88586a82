// The usage book kept in the SQLite record: one row per key, UTC day and chain, read
// into the book at start and written back as the file store writes its file (on an
// interval when the book changed, and at close). The book is the truth while the
// gateway runs, one process keeps it (a cluster's primary), and each row it writes
// replaces the stored one; only rows that changed since the last write are written,
// all in one transaction, so a flush costs what changed, not the whole history.

import type { UsageArchive, UsageBook, UsageRow } from '../quota/usage.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { USAGE_COLUMNS, usageByKey, usageCounts as counts, usageSlot as slot, type UsageDayRow } from './usage-rows.js';

type UsageParams = [string, string, string, number, number, number, number];

const FLUSH_MS = 5_000;

/** Every row of usage, by key: what the book loads (the file store's snapshot shape). */
export function readUsage(db: SqliteDatabase): Record<string, UsageRow[]> {
  return usageByKey(db.statement<[], UsageDayRow>(`SELECT ${USAGE_COLUMNS} FROM usage_days ORDER BY key_id, day, chain`).all());
}

export class SqliteUsageStore implements UsageArchive {
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  /** What each row held when last read or written, by key, day and chain: unchanged rows are not written again. */
  private readonly kept = new Map<string, string>();
  private readonly writeTx: (rows: readonly UsageParams[]) => Promise<void>;

  /** Over an open record (which the caller closes, after the store). */
  constructor(
    private readonly book: UsageBook,
    private readonly db: SqliteDatabase,
  ) {
    const upsert = db.statement<UsageParams>(
      `INSERT INTO usage_days (${USAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (key_id, day, chain) DO UPDATE SET
         calls = excluded.calls, errors = excluded.errors, limited = excluded.limited, invalid = excluded.invalid`,
    );
    // Written on an interval, off the request path: waits for the lock on timers (asyncWriter).
    this.writeTx = db.asyncWriter((rows: readonly UsageParams[]) => {
      for (const r of rows) upsert.run(...r);
    });
  }

  async load(): Promise<void> {
    const usage = readUsage(this.db);
    this.book.load(usage);
    this.kept.clear();
    for (const [keyId, rows] of Object.entries(this.book.snapshot())) {
      for (const r of rows) this.kept.set(slot(keyId, r), counts(r));
    }
  }

  start(intervalMs = FLUSH_MS): void {
    this.timer = setInterval(() => void this.flush(), intervalMs).unref();
  }

  flush(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.book.dirty) return;
      this.book.dirty = false;
      const changed: UsageParams[] = [];
      const seen: Array<[string, string]> = [];
      for (const [keyId, rows] of Object.entries(this.book.snapshot())) {
        for (const r of rows) {
          const at = slot(keyId, r);
          const now = counts(r);
          if (this.kept.get(at) === now) continue;
          changed.push([keyId, r.day, r.chain, r.calls, r.errors, r.limited, r.invalid ?? 0]);
          seen.push([at, now]);
        }
      }
      if (changed.length === 0) return;
      try {
        await this.writeTx(changed);
        for (const [at, now] of seen) this.kept.set(at, now);
      } catch {
        // Busy past the timeout, or the disk full: the next flush tries again.
        this.book.dirty = true;
      }
    });
    return this.writing;
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.flush();
  }
}
