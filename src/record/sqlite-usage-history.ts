// Usage history in the SQLite record (migration 5): hourly rollups, one row per key,
// hour, chain, method and outcome, each flush ADDING its deltas to the row (so the
// instances and workers writing one file sum), and the failed-call log, trimmed to the
// last N per key in the same transaction. A flush is one BEGIN IMMEDIATE transaction of
// prepared statements, one upsert per row touched since the last flush. Reads sum the
// rows in SQL; the latency histogram is a column per bucket, so sums stay exact.

import {
  HOUR_MS,
  LATENCY_BUCKETS,
  type FailedCall,
  type UsageBatch,
  type UsageDimension,
  type UsageHistory,
  type UsageQuery,
  type UsageTotals,
} from '../quota/usage-history.js';
import type { SqliteDatabase } from './sqlite-database.js';

/** The columns of LATENCY_BOUNDS_MS's buckets, in order, and the overflow last. */
export const LATENCY_COLUMNS: readonly string[] = [
  'le_1ms',
  'le_2_5ms',
  'le_5ms',
  'le_10ms',
  'le_25ms',
  'le_50ms',
  'le_100ms',
  'le_250ms',
  'le_500ms',
  'le_1s',
  'le_2_5s',
  'le_5s',
  'le_10s',
  'le_30s',
  'over_30s',
];

const DAY_HOURS = 24;

const COUNTS = ['calls', 'cost', 'node_calls', 'bytes_in', 'bytes_out', ...LATENCY_COLUMNS];
const KEYS = ['key_id', 'hour', 'chain', 'method', 'outcome'];

const DIMENSION_COLUMNS: Readonly<Record<UsageDimension, string>> = { key: 'key_id', chain: 'chain', method: 'method', outcome: 'outcome' };

interface FailedRow {
  key_id: string;
  at_ms: number;
  chain: string;
  method: string;
  outcome: string;
  status: number | null;
  code: string | null;
  node: string | null;
  latency_ms: number;
  request_id: string;
}

type SumRow = Record<string, number | string | null>;

const orUndefined = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export class SqliteUsageHistory implements UsageHistory {
  private readonly writeTx: (batch: UsageBatch) => void;
  private readonly pruneTx: (beforeHour: number, failedBefore: number) => { rollups: number; failed: number };

  /** Over an open record (which the caller closes). */
  constructor(private readonly db: SqliteDatabase) {
    if (LATENCY_COLUMNS.length !== LATENCY_BUCKETS) throw new Error('the latency columns do not match the latency buckets');
    const columns = [...KEYS, 'account', ...COUNTS];
    const upsert = db.statement(
      `INSERT INTO usage_hours (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (${KEYS.join(', ')}) DO UPDATE SET ${COUNTS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`,
    );
    const insertFailed = db.statement(
      `INSERT INTO failed_calls (key_id, at_ms, chain, method, outcome, status, code, node, latency_ms, request_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // Ordered by time, then by insertion: two instances' calls of one millisecond both count.
    const trim = db.statement(
      `DELETE FROM failed_calls WHERE key_id = ? AND id NOT IN
         (SELECT id FROM failed_calls WHERE key_id = ? ORDER BY at_ms DESC, id DESC LIMIT ?)`,
    );
    this.writeTx = db.writer((batch: UsageBatch) => {
      for (const r of batch.rows) {
        // Costs are whole units (the plugins' cost tables are integers); a fraction would fail the whole write.
        upsert.run(
          r.keyId,
          r.hour,
          r.chain,
          r.method,
          r.outcome,
          r.account,
          r.calls,
          Math.round(r.cost),
          r.nodeCalls,
          r.bytesIn,
          r.bytesOut,
          ...r.latency,
        );
      }
      if (batch.failed.length === 0) return;
      const keys = new Set<string>();
      for (const f of batch.failed) {
        insertFailed.run(
          f.keyId,
          f.at,
          f.chain,
          f.method,
          f.outcome,
          f.status ?? null,
          f.code ?? null,
          f.node ?? null,
          f.latencyMs,
          f.requestId,
        );
        keys.add(f.keyId);
      }
      for (const k of keys) trim.run(k, k, batch.failedPerKey);
    });
    const pruneRollups = db.statement<[number]>('DELETE FROM usage_hours WHERE hour < ?');
    const pruneFailed = db.statement<[number]>('DELETE FROM failed_calls WHERE at_ms < ?');
    this.pruneTx = db.writer((beforeHour: number, failedBefore: number) => ({
      rollups: pruneRollups.run(beforeHour).changes,
      failed: pruneFailed.run(failedBefore).changes,
    }));
  }

  async write(batch: UsageBatch): Promise<void> {
    if (batch.rows.length === 0 && batch.failed.length === 0) return;
    this.writeTx(batch);
  }

  async read(q: UsageQuery): Promise<UsageTotals[]> {
    const dims = (['key', 'chain', 'method', 'outcome'] as const).filter((d) => q.by.includes(d)).map((d) => DIMENSION_COLUMNS[d]);
    const step = q.step === 'hour' ? 'hour' : q.step === 'day' ? `hour / ${DAY_HOURS}` : 'NULL';
    const where = ['hour >= ?', 'hour < ?'];
    const params: Array<string | number> = [Math.floor(q.from / HOUR_MS), Math.ceil(q.to / HOUR_MS)];
    for (const [column, value] of [
      ['key_id', q.keyId],
      ['account', q.account],
      ['chain', q.chain],
      ['method', q.method],
    ] as const) {
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      params.push(value);
    }
    const groups = q.step === 'total' ? dims : ['step', ...dims];
    const sql =
      `SELECT ${step} AS step${dims.map((d) => `, ${d}`).join('')}, ${COUNTS.map((c) => `sum(${c}) AS ${c}`).join(', ')}` +
      ` FROM usage_hours WHERE ${where.join(' AND ')}` +
      (groups.length === 0 ? '' : ` GROUP BY ${groups.join(', ')} ORDER BY ${groups.join(', ')}`);
    const rows = this.db.statement<Array<string | number>, SumRow>(sql).all(...params);
    const stepMs = q.step === 'hour' ? HOUR_MS : DAY_HOURS * HOUR_MS;
    // A total over no rows is one row of nulls: no usage, no row.
    return rows
      .filter((r) => r.calls !== null)
      .map((r) => ({
        start: q.step === 'total' ? undefined : (r.step as number) * stepMs,
        keyId: r.key_id === undefined ? undefined : (r.key_id as string),
        chain: r.chain === undefined ? undefined : (r.chain as string),
        method: r.method === undefined ? undefined : (r.method as string),
        outcome: r.outcome === undefined ? undefined : (r.outcome as string),
        calls: r.calls as number,
        cost: r.cost as number,
        nodeCalls: r.node_calls as number,
        bytesIn: r.bytes_in as number,
        bytesOut: r.bytes_out as number,
        latency: LATENCY_COLUMNS.map((c) => r[c] as number),
      }));
  }

  async failedCalls(keyId: string, limit: number): Promise<FailedCall[]> {
    return this.db
      .statement<[string, number], FailedRow>(
        `SELECT key_id, at_ms, chain, method, outcome, status, code, node, latency_ms, request_id
         FROM failed_calls WHERE key_id = ? ORDER BY at_ms DESC, id DESC LIMIT ?`,
      )
      .all(keyId, limit)
      .map((r) => ({
        at: r.at_ms,
        keyId: r.key_id,
        chain: r.chain,
        method: r.method,
        outcome: r.outcome,
        status: orUndefined(r.status),
        code: orUndefined(r.code),
        node: orUndefined(r.node),
        latencyMs: r.latency_ms,
        requestId: r.request_id,
      }));
  }

  async prune(beforeHour: number, failedBefore: number): Promise<{ rollups: number; failed: number }> {
    return this.pruneTx(beforeHour, failedBefore);
  }
}
