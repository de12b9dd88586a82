// Usage history as the record's rows hold it, the same for SQLite and PostgreSQL
// (migration 5): the columns of usage_hours and failed_calls, a rollup as the values of
// one row, the statement that sums rollups for a query, and rows back to the
// contract's shapes. The records own their connections and write paths, not these.

import {
  HOUR_MS,
  LATENCY_BUCKETS,
  USAGE_DIMENSIONS,
  type FailedCall,
  type RollupRow,
  type UsageDimension,
  type UsageQuery,
  type UsageTotals,
} from '../quota/usage-history.js';

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

if (LATENCY_COLUMNS.length !== LATENCY_BUCKETS) throw new Error('the latency columns do not match the latency buckets');

const DAY_HOURS = 24;

/** What a row counts: a write adds these to the stored row. */
export const ROLLUP_COUNTS: readonly string[] = ['calls', 'cost', 'node_calls', 'bytes_in', 'bytes_out', ...LATENCY_COLUMNS];
/** What names a row: its primary key. */
export const ROLLUP_KEYS: readonly string[] = ['key_id', 'hour', 'chain', 'method', 'outcome'];
/** Every column a write gives, in the order rollupValues gives them. */
export const ROLLUP_COLUMNS: readonly string[] = [...ROLLUP_KEYS, 'account', ...ROLLUP_COUNTS];

const DIMENSION_COLUMNS: Readonly<Record<UsageDimension, string>> = { key: 'key_id', chain: 'chain', method: 'method', outcome: 'outcome' };

/** A rollup as one row's values, in ROLLUP_COLUMNS's order. */
export function rollupValues(r: RollupRow): Array<string | number> {
  // Costs are whole units (the plugins' cost tables are integers); a fraction would fail the whole write.
  return [
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
  ];
}

/** The columns a failed call is written to, in the order failedValues gives them. */
export const FAILED_COLUMNS: readonly string[] = [
  'key_id',
  'at_ms',
  'chain',
  'method',
  'outcome',
  'status',
  'code',
  'node',
  'latency_ms',
  'request_id',
];

export function failedValues(f: FailedCall): Array<string | number | null> {
  return [f.keyId, f.at, f.chain, f.method, f.outcome, f.status ?? null, f.code ?? null, f.node ?? null, f.latencyMs, f.requestId];
}

export interface FailedRow {
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

const orUndefined = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export function failedCallOf(r: FailedRow): FailedCall {
  return {
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
  };
}

/** A key's newest failed calls first: by time, then by insertion, so two instances' calls of one millisecond both count. */
export const FAILED_NEWEST_FIRST = 'ORDER BY at_ms DESC, id DESC';

export type SumRow = Record<string, number | string | null>;

export interface SumDialect {
  /** The placeholder of the n-th parameter (1-based). */
  readonly placeholder: (n: number) => string;
  /** A column's sum as a number (PostgreSQL's sum of bigints is numeric). */
  readonly sum: (column: string) => string;
  /** A text column in ORDER BY, sorted by code point as SQLite sorts (PostgreSQL's default collation may not). */
  readonly byCodePoint: (column: string) => string;
}

/** The statement summing usage_hours for `q`: rows in step order, then by the dimensions asked for. */
export function usageSumQuery(q: UsageQuery, table: string, dialect: SumDialect): { sql: string; params: Array<string | number> } {
  const dims = USAGE_DIMENSIONS.filter((d) => q.by.includes(d)).map((d) => DIMENSION_COLUMNS[d]);
  const step = q.step === 'hour' ? 'hour' : q.step === 'day' ? `hour / ${DAY_HOURS}` : 'NULL';
  const params: Array<string | number> = [];
  const param = (v: string | number): string => {
    params.push(v);
    return dialect.placeholder(params.length);
  };
  const where = [`hour >= ${param(Math.floor(q.from / HOUR_MS))}`, `hour < ${param(Math.ceil(q.to / HOUR_MS))}`];
  if (typeof q.account === 'string') where.push(`account = ${param(q.account)}`);
  else if (q.account !== undefined) where.push(`account IN (${q.account.map(param).join(', ')})`);
  for (const [column, value] of [
    ['key_id', q.keyId],
    ['chain', q.chain],
    ['method', q.method],
  ] as const) {
    if (value !== undefined) where.push(`${column} = ${param(value)}`);
  }
  const groups = q.step === 'total' ? dims : ['step', ...dims];
  const sql =
    `SELECT ${step} AS step${dims.map((d) => `, ${d}`).join('')}, ${ROLLUP_COUNTS.map((c) => `${dialect.sum(c)} AS ${c}`).join(', ')}` +
    ` FROM ${table} WHERE ${where.join(' AND ')}` +
    (groups.length === 0
      ? ''
      : ` GROUP BY ${groups.join(', ')} ORDER BY ${groups.map((g) => (g === 'step' ? g : dialect.byCodePoint(g))).join(', ')}`);
  return { sql, params };
}

/** The sums usageSumQuery read, as the contract gives them. */
export function usageTotalsOf(q: UsageQuery, rows: readonly SumRow[]): UsageTotals[] {
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
