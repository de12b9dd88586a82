// Usage history in the SQLite record (migration 5): hourly rollups, one row per key,
// hour, chain, method and outcome, each flush ADDING its deltas to the row (so the
// instances and workers writing one file sum), and the failed-call log, trimmed to the
// last N per key in the same transaction. A flush is one BEGIN IMMEDIATE transaction of
// prepared statements, one upsert per row touched since the last flush, that waits for
// another writer's lock on timers, not in SQLite's busy handler (which would hold every
// request of the process for as long as the lock is held). Reads sum the
// rows in SQL; the latency histogram is a column per bucket, so sums stay exact. Rows
// and the reading statement are usage-history-rows.ts's, shared with PostgreSQL.

import type { FailedCall, UsageBatch, UsageHistory, UsageQuery, UsageTotals } from '../quota/usage-history.js';
import type { SqliteDatabase } from './sqlite-database.js';
import {
  FAILED_COLUMNS,
  FAILED_NEWEST_FIRST,
  failedCallOf,
  failedValues,
  ROLLUP_COLUMNS,
  ROLLUP_COUNTS,
  ROLLUP_KEYS,
  rollupValues,
  usageSumQuery,
  usageTotalsOf,
  type FailedRow,
  type SumDialect,
  type SumRow,
} from './usage-history-rows.js';

const SQLITE: SumDialect = { placeholder: () => '?', sum: (c) => `sum(${c})`, byCodePoint: (c) => c };

export class SqliteUsageHistory implements UsageHistory {
  private readonly writeTx: (batch: UsageBatch) => Promise<void>;
  private readonly pruneTx: (beforeHour: number, failedBefore: number) => Promise<{ rollups: number; failed: number }>;

  /** Over an open record (which the caller closes). */
  constructor(private readonly db: SqliteDatabase) {
    const upsert = db.statement(
      `INSERT INTO usage_hours (${ROLLUP_COLUMNS.join(', ')}) VALUES (${ROLLUP_COLUMNS.map(() => '?').join(', ')})
       ON CONFLICT (${ROLLUP_KEYS.join(', ')}) DO UPDATE SET ${ROLLUP_COUNTS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`,
    );
    const insertFailed = db.statement(
      `INSERT INTO failed_calls (${FAILED_COLUMNS.join(', ')}) VALUES (${FAILED_COLUMNS.map(() => '?').join(', ')})`,
    );
    const trim = db.statement(
      `DELETE FROM failed_calls WHERE key_id = ? AND id NOT IN
         (SELECT id FROM failed_calls WHERE key_id = ? ${FAILED_NEWEST_FIRST} LIMIT ?)`,
    );
    this.writeTx = db.asyncWriter((batch: UsageBatch) => {
      for (const r of batch.rows) upsert.run(...rollupValues(r));
      if (batch.failed.length === 0) return;
      const keys = new Set<string>();
      for (const f of batch.failed) {
        insertFailed.run(...failedValues(f));
        keys.add(f.keyId);
      }
      for (const k of keys) trim.run(k, k, batch.failedPerKey);
    });
    const pruneRollups = db.statement<[number]>('DELETE FROM usage_hours WHERE hour < ?');
    const pruneFailed = db.statement<[number]>('DELETE FROM failed_calls WHERE at_ms < ?');
    this.pruneTx = db.asyncWriter((beforeHour: number, failedBefore: number) => ({
      rollups: pruneRollups.run(beforeHour).changes,
      failed: pruneFailed.run(failedBefore).changes,
    }));
  }

  async write(batch: UsageBatch): Promise<void> {
    if (batch.rows.length === 0 && batch.failed.length === 0) return;
    await this.writeTx(batch);
  }

  async read(q: UsageQuery): Promise<UsageTotals[]> {
    const { sql, params } = usageSumQuery(q, 'usage_hours', SQLITE);
    return usageTotalsOf(q, this.db.statement<Array<string | number>, SumRow>(sql).all(...params));
  }

  async failedCalls(keyId: string, limit: number): Promise<FailedCall[]> {
    return this.db
      .statement<[string, number], FailedRow>(
        `SELECT ${FAILED_COLUMNS.join(', ')} FROM failed_calls WHERE key_id = ? ${FAILED_NEWEST_FIRST} LIMIT ?`,
      )
      .all(keyId, limit)
      .map(failedCallOf);
  }

  async prune(beforeHour: number, failedBefore: number): Promise<{ rollups: number; failed: number }> {
    return this.pruneTx(beforeHour, failedBefore);
  }
}
