// Usage history in the PostgreSQL record (migration 5), as the SQLite record keeps it
// (sqlite-usage-history.ts): hourly rollups that every instance's flush ADDS to, and
// the failed-call log trimmed to each key's newest N. A flush is one transaction: one
// multi-row upsert of the rows touched since the last flush, sorted by their primary
// key so two instances' flushes lock rows in one order and never deadlock; then the
// failed calls, one insert, and the trim, taken under a lock per key (in one order too)
// so that instances trimming one key take turns and each sees the others' calls. Rows
// and the reading statement are usage-history-rows.ts's, shared with SQLite.

import type { FailedCall, RollupRow, UsageBatch, UsageHistory, UsageQuery, UsageTotals } from '../quota/usage-history.js';
import type { PgDatabase } from './pg-database.js';
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

/** As long as SQLite's busy timeout (sqlite-database.ts). */
const LOCK_TIMEOUT_SQL = `SET LOCAL lock_timeout = '5s'`;
const PG: SumDialect = { placeholder: (n) => `$${n}`, sum: (c) => `sum(${c})::bigint`, byCodePoint: (c) => `${c} COLLATE "C"` };

/** The type of each column a write gives, for its array parameter. */
const ROLLUP_TYPES: Readonly<Record<string, string>> = {
  hour: 'integer',
  key_id: 'text',
  chain: 'text',
  method: 'text',
  outcome: 'text',
  account: 'text',
};
const FAILED_TYPES: Readonly<Record<string, string>> = { at_ms: 'bigint', status: 'integer', latency_ms: 'double precision' };

/** `unnest($1::type[], …)` over the columns, each column's values one array parameter. */
const unnestOf = (columns: readonly string[], typeOf: (column: string) => string): string =>
  `unnest(${columns.map((c, i) => `$${i + 1}::${typeOf(c)}[]`).join(', ')})`;

/** Row values as one array per column. */
function byColumn<V>(rows: ReadonlyArray<readonly V[]>, columns: number): V[][] {
  return Array.from({ length: columns }, (_, i) => rows.map((r) => r[i] as V));
}

const compareRows = (a: RollupRow, b: RollupRow): number =>
  cmp(a.keyId, b.keyId) || a.hour - b.hour || cmp(a.chain, b.chain) || cmp(a.method, b.method) || cmp(a.outcome, b.outcome);
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The rows in primary-key order, any two of one row summed: one upsert cannot touch a
 * row twice (the rollups give each once; this keeps a batch from failing if not).
 */
function sortedValues(rows: readonly RollupRow[]): Array<Array<string | number>> {
  const sorted = [...rows].sort(compareRows);
  const out: Array<Array<string | number>> = [];
  const firstCount = ROLLUP_KEYS.length + 1;
  sorted.forEach((r, i) => {
    const values = rollupValues(r);
    const prev = out[out.length - 1];
    if (prev === undefined || compareRows(sorted[i - 1] as RollupRow, r) !== 0) out.push(values);
    else for (let c = firstCount; c < values.length; c++) prev[c] = (prev[c] as number) + (values[c] as number);
  });
  return out;
}

export class PgUsageHistory implements UsageHistory {
  private readonly upsertSql: string;
  private readonly insertFailedSql: string;
  private readonly lockKeysSql: string;
  private readonly trimSql: string;
  private readonly failedSql: string;
  private readonly pruneRollupsSql: string;
  private readonly pruneFailedSql: string;
  private readonly hours: string;

  /** Over an open record (which the caller closes, after the history). */
  constructor(private readonly db: PgDatabase) {
    this.hours = db.table('usage_hours');
    const failed = db.table('failed_calls');
    this.upsertSql = `INSERT INTO ${this.hours} AS u (${ROLLUP_COLUMNS.join(', ')})
      SELECT * FROM ${unnestOf(ROLLUP_COLUMNS, (c) => ROLLUP_TYPES[c] ?? 'bigint')}
      ON CONFLICT (${ROLLUP_KEYS.join(', ')}) DO UPDATE SET ${ROLLUP_COUNTS.map((c) => `${c} = u.${c} + excluded.${c}`).join(', ')}`;
    // In the batch's order, so its calls of one millisecond keep their order in the ids.
    this.insertFailedSql = `INSERT INTO ${failed} (${FAILED_COLUMNS.join(', ')})
      SELECT ${FAILED_COLUMNS.join(', ')} FROM ${unnestOf(FAILED_COLUMNS, (c) => FAILED_TYPES[c] ?? 'text')}
        WITH ORDINALITY AS v(${FAILED_COLUMNS.join(', ')}, n) ORDER BY n`;
    // Taken after the ORDER BY (a volatile function in the select list is), so in one order in every instance.
    this.lockKeysSql = `SELECT pg_advisory_xact_lock(hashtext('noderouter.failed_calls'), hashtext(k))::text AS locked
      FROM unnest($1::text[]) AS k ORDER BY k COLLATE "C"`;
    this.trimSql = `DELETE FROM ${failed} WHERE id IN (
      SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY key_id ${FAILED_NEWEST_FIRST}) AS n
        FROM ${failed} WHERE key_id = ANY($1::text[])) AS ranked WHERE n > $2)`;
    this.failedSql = `SELECT ${FAILED_COLUMNS.join(', ')} FROM ${failed} WHERE key_id = $1 ${FAILED_NEWEST_FIRST} LIMIT $2`;
    this.pruneRollupsSql = `WITH gone AS (DELETE FROM ${this.hours} WHERE hour < $1 RETURNING 1) SELECT count(*)::integer AS n FROM gone`;
    this.pruneFailedSql = `WITH gone AS (DELETE FROM ${failed} WHERE at_ms < $1 RETURNING 1) SELECT count(*)::integer AS n FROM gone`;
  }

  async write(batch: UsageBatch): Promise<void> {
    if (batch.rows.length === 0 && batch.failed.length === 0) return;
    await this.db.transaction(async (tx) => {
      // Behind another session's lock a flush gives up as SQLite's does (its rows go back to
      // the next one), instead of waiting for good and holding a graceful stop with it.
      await tx.query(LOCK_TIMEOUT_SQL);
      if (batch.rows.length > 0) await tx.query(this.upsertSql, byColumn(sortedValues(batch.rows), ROLLUP_COLUMNS.length));
      if (batch.failed.length === 0) return;
      await tx.query(this.insertFailedSql, byColumn(batch.failed.map(failedValues), FAILED_COLUMNS.length));
      const keys = [...new Set(batch.failed.map((f) => f.keyId))];
      await tx.query(this.lockKeysSql, [keys]);
      await tx.query(this.trimSql, [keys, batch.failedPerKey]);
    });
  }

  async read(q: UsageQuery): Promise<UsageTotals[]> {
    const { sql, params } = usageSumQuery(q, this.hours, PG);
    return usageTotalsOf(q, await this.db.query<SumRow>(sql, params));
  }

  async failedCalls(keyId: string, limit: number): Promise<FailedCall[]> {
    return (await this.db.query<FailedRow>(this.failedSql, [keyId, limit])).map(failedCallOf);
  }

  async prune(beforeHour: number, failedBefore: number): Promise<{ rollups: number; failed: number }> {
    return this.db.transaction(async (tx) => {
      const [rollups] = await tx.query<{ n: number }>(this.pruneRollupsSql, [beforeHour]);
      const [failed] = await tx.query<{ n: number }>(this.pruneFailedSql, [failedBefore]);
      return { rollups: rollups?.n ?? 0, failed: failed?.n ?? 0 };
    });
  }
}
