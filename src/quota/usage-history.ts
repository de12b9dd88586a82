// Usage history as a console reads it: hourly rollups per key, chain, method and
// outcome (calls, units charged, node calls, bytes, a fixed-bucket latency histogram),
// and the last failed calls of each key. This module owns the shapes and the contract
// a record implements (src/record/sqlite-usage-history.ts, pg-usage-history.ts); what
// is counted per call and when it is written is usage-rollup.ts's. A batch ADDS to what
// is stored, so instances writing one record sum, never overwrite each other.

export const HOUR_MS = 3_600_000;

/**
 * Upper bounds (ms, inclusive) of the latency buckets, the request-duration
 * histogram's; one bucket more holds everything slower. Fixed: the record stores a
 * column per bucket, so changing them is a migration.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Object.freeze([
  1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000,
]);

/** Buckets in a histogram: one per bound and the overflow. */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** Hours since 1970-01-01T00:00Z: the rollups' time, with no Date made. */
export function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS);
}

/** The bucket a latency falls in (the first bound it does not exceed). */
export function latencyBucket(ms: number): number {
  const bounds = LATENCY_BOUNDS_MS;
  let i = 0;
  while (i < bounds.length && ms > (bounds[i] as number)) i++;
  return i;
}

/**
 * The least bucket bound at or under which `q` (0..1) of the calls finished: what a
 * fixed-bucket histogram can say of a percentile (an upper bound). Null when there were
 * no calls, or the percentile lies past the last bound.
 */
export function latencyAtMost(counts: readonly number[], q: number): number | null {
  let total = 0;
  for (const c of counts) total += c;
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i] as number;
    if (seen >= rank) return LATENCY_BOUNDS_MS[i] ?? null;
  }
  return null;
}

/** What one key's calls on one chain, method and outcome added in one UTC hour since the last write. */
export interface RollupRow {
  /** hourOf(the calls' time). */
  readonly hour: number;
  readonly keyId: string;
  /** The key's account when the calls were made (accounts read their keys' usage by it). */
  readonly account: string;
  readonly chain: string;
  /** The plugin's bounded label of the method ("other" when it has none). */
  readonly method: string;
  /** The outcome vocabulary of metrics and logs (src/exec/outcome.ts). */
  readonly outcome: string;
  readonly calls: number;
  /** Units charged against the key's limits. */
  readonly cost: number;
  readonly nodeCalls: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Calls per latency bucket (LATENCY_BUCKETS long). */
  readonly latency: readonly number[];
}

/** One failed call as the log keeps it: never params, bodies or key values. */
export interface FailedCall {
  /** Epoch ms when the request ended. */
  readonly at: number;
  readonly keyId: string;
  readonly chain: string;
  readonly method: string;
  readonly outcome: string;
  /** The HTTP status of the call's error (the error table's), or of the answer relayed with a chain error; undefined on WebSocket and gRPC chain errors. */
  readonly status: number | undefined;
  /** The error table's code (UPSTREAM_TIMEOUT …); undefined for a chain error or a call the client left. */
  readonly code: string | undefined;
  /** The node that answered or was tried last, when known. */
  readonly node: string | undefined;
  /** What the client waited for the whole request. */
  readonly latencyMs: number;
  readonly requestId: string;
}

/** What one flush writes, in one transaction. */
export interface UsageBatch {
  readonly rows: readonly RollupRow[];
  readonly failed: readonly FailedCall[];
  /** The failed calls kept per key: older ones of the keys in `failed` go in the same write. */
  readonly failedPerKey: number;
}

export type UsageDimension = 'key' | 'chain' | 'method' | 'outcome';
export const USAGE_DIMENSIONS: readonly UsageDimension[] = ['key', 'chain', 'method', 'outcome'];

/** Rows are summed per hour, per UTC day, or over the whole range. */
export type UsageStep = 'hour' | 'day' | 'total';
export const USAGE_STEPS: readonly UsageStep[] = ['hour', 'day', 'total'];

export interface UsageQuery {
  readonly keyId?: string;
  /**
   * Rows are kept under the account their key had when the call was made: a key made
   * under a plain name and adopted by `accounts create --adopt-keys` wrote under that
   * name before, so an account's own reads ask for its id and its name.
   */
  readonly account?: string | readonly string[];
  readonly chain?: string;
  readonly method?: string;
  /** Epoch ms: the hours from the one holding `from` … */
  readonly from: number;
  /** … to the one before the hour holding `to` (exclusive, so a whole day is midnight to midnight). */
  readonly to: number;
  /** What rows are split by besides the step. */
  readonly by: readonly UsageDimension[];
  readonly step: UsageStep;
}

/** A sum of rollups: the dimensions asked for are set, the others undefined. */
export interface UsageTotals {
  /** Epoch ms of the step's start (hour or UTC day); undefined for step `total`. */
  readonly start: number | undefined;
  readonly keyId: string | undefined;
  readonly chain: string | undefined;
  readonly method: string | undefined;
  readonly outcome: string | undefined;
  readonly calls: number;
  readonly cost: number;
  readonly nodeCalls: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly latency: readonly number[];
}

/** Where usage history is kept: a record (SQLite or PostgreSQL). */
export interface UsageHistory {
  /** Adds the rollups to what is stored, and appends the failed calls, trimming each key's to `failedPerKey`: one transaction. */
  write(batch: UsageBatch): Promise<void>;
  /** Sums in step order, then by the dimensions asked for. */
  read(query: UsageQuery): Promise<UsageTotals[]>;
  /** A key's failed calls, newest first. */
  failedCalls(keyId: string, limit: number): Promise<FailedCall[]>;
  /** Drops rollups of hours before `beforeHour` and failed calls before `failedBefore` (epoch ms); what was dropped. */
  prune(beforeHour: number, failedBefore: number): Promise<{ rollups: number; failed: number }>;
}
