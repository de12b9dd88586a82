// Usage history (usage-history.ts) as people read it: `keys usage`, the dashboard and
// the admin API's account route. Each outcome of the vocabulary falls in one of four
// classes, so the per-day table keeps the columns it had when the limiter's day rows
// fed it (calls, errors, limited, invalid), now counted per call from the record; and
// per method, calls with their error rate and latency percentiles. Pure functions over
// rows a history read returns; reading them is the caller's.

import { ERRORS, type ErrorCode } from '../errors.js';
import { HOUR_MS, LATENCY_BUCKETS, latencyAtMost, type UsageTotals } from './usage-history.js';

/**
 * - ok: answered;
 * - error: admitted and charged, then not answered as asked (the chain's own error, a
 *   node failure or timeout, no healthy node, the node budget, the client leaving);
 * - limited: refused by the key's or account's limits (rate, quotas, a batch over the
 *   tier's cap, connection and subscription caps);
 * - invalid: refused before admission as not servable (malformed, too large, not
 *   permitted, not served on the endpoint).
 */
export type OutcomeClass = 'ok' | 'error' | 'limited' | 'invalid';

const ERROR_CLASSES: Readonly<Record<ErrorCode, Exclude<OutcomeClass, 'ok'>>> = {
  PARSE_ERROR: 'invalid',
  INVALID_REQUEST: 'invalid',
  MISSING_KEY: 'invalid',
  CONFLICTING_KEYS: 'invalid',
  INVALID_KEY: 'invalid',
  FORBIDDEN: 'invalid',
  METHOD_NOT_FOUND: 'invalid',
  INVALID_PARAMS: 'invalid',
  ENDPOINT_NOT_FOUND: 'invalid',
  HTTP_METHOD_NOT_ALLOWED: 'invalid',
  RATE_LIMITED: 'limited',
  QUOTA_EXCEEDED: 'limited',
  TOO_MANY_CONNECTIONS: 'limited',
  TOO_MANY_SUBSCRIPTIONS: 'limited',
  // Admitted and charged: the call was too big for one call's node budget.
  NODE_BUDGET_EXCEEDED: 'error',
  BODY_TOO_LARGE: 'invalid',
  // The tier's cap on batch size is a limit (the limiter counted it as one).
  BATCH_TOO_LARGE: 'limited',
  HEADERS_TOO_LARGE: 'invalid',
  NO_HEALTHY_NODE: 'error',
  UPSTREAM_FAILED: 'error',
  NODES_DISAGREE: 'error',
  UPSTREAM_TIMEOUT: 'error',
  UNAVAILABLE: 'error',
};

const CLASSES = new Map<string, OutcomeClass>([
  ['ok', 'ok'],
  ['chain_error', 'error'],
  ['cancelled', 'error'],
  ...(Object.keys(ERRORS) as ErrorCode[]).map((c): [string, OutcomeClass] => [c.toLowerCase(), ERROR_CLASSES[c]]),
]);

/** The class of an outcome as history stores it; one the vocabulary does not hold (a later version's) counts as an error. */
export function outcomeClass(outcome: string): OutcomeClass {
  return CLASSES.get(outcome) ?? 'error';
}

/** What some calls added up to, by class. */
export interface ClassCounts {
  /** Calls admitted (answered or not): what quotas count, one per call. */
  calls: number;
  /** Units charged for the admitted calls: what quotas are held to. */
  units: number;
  /** Admitted calls not answered as asked. */
  errors: number;
  limited: number;
  invalid: number;
}

/** One UTC day of one chain. */
export interface DayUsage extends ClassCounts {
  readonly day: string;
  readonly chain: string;
}

/** One method over a range: the latency of its admitted calls. */
export interface MethodUsage extends ClassCounts {
  readonly method: string;
  /** errors / calls; null without calls. */
  readonly errorRate: number | null;
  /** Bucket bounds the percentiles stay within (null past the last bound, or without calls). */
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
  readonly p99Ms: number | null;
}

export const zeroCounts = (): ClassCounts => ({ calls: 0, units: 0, errors: 0, limited: 0, invalid: 0 });

/** Adds a history row (one outcome) to `into`. */
export function addTotals(into: ClassCounts, r: Pick<UsageTotals, 'outcome' | 'calls' | 'cost'>): void {
  const c = outcomeClass(r.outcome ?? 'ok');
  if (c === 'limited') into.limited += r.calls;
  else if (c === 'invalid') into.invalid += r.calls;
  else {
    into.calls += r.calls;
    into.units += r.cost;
    if (c === 'error') into.errors += r.calls;
  }
}

export const DAY_MS = 24 * HOUR_MS;
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** Rows read with step `day` and by chain and outcome, as one row per day and chain: oldest day first, then by chain. */
export function dayRows(rows: readonly UsageTotals[]): DayUsage[] {
  const out = new Map<string, DayUsage>();
  for (const r of rows) {
    const day = dayOf(r.start ?? 0);
    const chain = r.chain ?? '';
    const slot = `${day}\u0000${chain}`;
    let d = out.get(slot);
    if (d === undefined) {
      d = { day, chain, ...zeroCounts() };
      out.set(slot, d);
    }
    addTotals(d, r);
  }
  return [...out.values()].sort((a, b) =>
    a.day === b.day ? (a.chain < b.chain ? -1 : a.chain > b.chain ? 1 : 0) : a.day < b.day ? -1 : 1,
  );
}

/** Rows read by method and outcome, as one row per method: the busiest first. */
export function methodRows(rows: readonly UsageTotals[]): MethodUsage[] {
  const byMethod = new Map<string, { counts: ClassCounts; latency: number[] }>();
  for (const r of rows) {
    const method = r.method ?? 'other';
    let m = byMethod.get(method);
    if (m === undefined) {
      m = { counts: zeroCounts(), latency: new Array<number>(LATENCY_BUCKETS).fill(0) };
      byMethod.set(method, m);
    }
    addTotals(m.counts, r);
    // Refusals answer at once: their latency would hide the served calls'.
    const c = outcomeClass(r.outcome ?? 'ok');
    if (c === 'ok' || c === 'error') r.latency.forEach((n, i) => ((m.latency[i] as number) += n));
  }
  return [...byMethod]
    .map(([method, { counts, latency }]) => ({
      method,
      ...counts,
      errorRate: counts.calls === 0 ? null : counts.errors / counts.calls,
      p50Ms: latencyAtMost(latency, 0.5),
      p95Ms: latencyAtMost(latency, 0.95),
      p99Ms: latencyAtMost(latency, 0.99),
    }))
    .sort((a, b) => b.calls + b.limited + b.invalid - (a.calls + a.limited + a.invalid) || (a.method < b.method ? -1 : 1));
}
