// What one answered request adds to usage history (src/quota/usage-rollup.ts): one
// entry per call, not per request. The call path leaves its call records and results
// on the request's trace; the request's record (request-record.ts) hands them here
// with what only the transport knows (bytes, status, what the client waited). A batch's
// bytes go to its calls in equal whole shares (the remainder to the first), and each
// call's latency is the request's. A request that became no call counts as one, with
// the request's label and outcome; so does a request of one call, whose outcome the
// transport may have had the last word on. Nothing here allocates for a call that
// succeeded.

import type { KeyRecord } from '../auth/key-store.js';
import { ERRORS, isGatewayError, type ErrorCode, type GatewayError } from '../errors.js';
import type { Call } from '../plugin/contract.js';
import { hourOf, latencyBucket } from '../quota/usage-history.js';
import type { UsageRollup } from '../quota/usage-rollup.js';
import type { CallResult } from './attempts/attempts.js';
import type { CallRecord } from './call-record.js';
import { errorOutcome, type ClientOutcome } from './outcome.js';

/** What a result counts as in metrics, usage and the log. */
export function resultOutcome<A>(r: CallResult<A> | undefined): ClientOutcome {
  if (r === undefined) return 'ok';
  if (isGatewayError(r)) return errorOutcome(r.code);
  return r.verdict === 'ok' ? 'ok' : 'chain_error';
}

/** The calls of a request as the call path and the JSON-RPC reader leave them on its trace. */
export interface CallsTrace {
  /** Every call handed to the call path, by slot: its result; undefined when none was. */
  results: ReadonlyArray<CallResult<unknown> | undefined> | undefined;
  /** The routed ones among them, in slot order (the others were refused at routing). */
  routed: ReadonlyArray<CallRecord<Call, unknown>> | undefined;
  /** The plugin's labels of the calls refused at routing, by slot. */
  refusedLabels: ReadonlyArray<string | undefined> | undefined;
  /** JSON-RPC items refused as invalid before the call path: calls too. */
  invalidCalls: number;
  /** Units a request (or the calls) refused whole was charged (CallPath.refused). */
  charged: number;
}

/** The request as usage history reads it. */
export interface AnsweredRequest extends CallsTrace {
  readonly key: KeyRecord | undefined;
  readonly label: string;
  readonly outcome: ClientOutcome;
  readonly node: string | undefined;
  readonly bytesIn: number;
  readonly bytesOut: number;
}

/** The request as the log and the failed-call log name it. */
export interface RequestFacts {
  readonly requestId: string;
  readonly chain: string;
  readonly transport: 'http' | 'ws' | 'grpc';
  readonly status: number | undefined;
}

const CODES = new Map<string, ErrorCode>((Object.keys(ERRORS) as ErrorCode[]).map((c) => [errorOutcome(c), c]));

const nodeCallsOf = (rec: CallRecord<Call, unknown>): number => rec.work?.sent ?? rec.nodeCalls ?? 0;

/** Adds the request's calls to `usage`; a request without a key (refused before one was known) adds nothing. */
export function recordUsage(usage: UsageRollup, t: AnsweredRequest, facts: RequestFacts, ms: number): void {
  const key = t.key;
  if (key === undefined) return;
  const now = usage.now();
  const hour = hourOf(now);
  const bucket = latencyBucket(ms);
  const results = t.results;
  const routed = t.routed;
  const handed = results === undefined ? 0 : results.length;
  const n = Math.max(1, handed + t.invalidCalls);
  const inShare = Math.floor(t.bytesIn / n);
  const outShare = Math.floor(t.bytesOut / n);
  let bytesIn = t.bytesIn - inShare * (n - 1);
  let bytesOut = t.bytesOut - outShare * (n - 1);
  const { id, account } = key;
  const chain = facts.chain;

  if (n === 1) {
    const rec = routed !== undefined && routed.length === 1 ? routed[0] : undefined;
    const cost = (rec?.charged ?? 0) + t.charged;
    const method = rec?.routing.label ?? t.refusedLabels?.[0] ?? t.label;
    usage.add(hour, id, account, chain, method, t.outcome, cost, rec === undefined ? 0 : nodeCallsOf(rec), bytesIn, bytesOut, bucket);
    if (t.outcome !== 'ok' && usage.keepsFailed) {
      const r = results?.[0];
      const err = isGatewayError(r) ? r : undefined;
      failed(usage, now, key, chain, method, t.outcome, err, rec?.by?.name ?? t.node, facts, ms, true);
    }
    return;
  }

  // What a request refused whole was charged lands on its first call.
  let extra = t.charged;
  let j = 0;
  for (let i = 0; i < handed; i++) {
    let rec: CallRecord<Call, unknown> | undefined;
    if (routed !== undefined && j < routed.length && (routed[j] as CallRecord<Call, unknown>).slot === i) rec = routed[j++];
    const r = (results as ReadonlyArray<CallResult<unknown> | undefined>)[i];
    const outcome = resultOutcome(r);
    const method = rec?.routing.label ?? t.refusedLabels?.[i] ?? 'other';
    usage.add(
      hour,
      id,
      account,
      chain,
      method,
      outcome,
      (rec?.charged ?? 0) + extra,
      rec === undefined ? 0 : nodeCallsOf(rec),
      bytesIn,
      bytesOut,
      bucket,
    );
    if (outcome !== 'ok' && usage.keepsFailed) {
      failed(usage, now, key, chain, method, outcome, isGatewayError(r) ? r : undefined, rec?.by?.name, facts, ms, false);
    }
    extra = 0;
    bytesIn = inShare;
    bytesOut = outShare;
  }
  for (let i = 0; i < t.invalidCalls; i++) {
    usage.add(hour, id, account, chain, 'other', 'invalid_request', extra, 0, bytesIn, bytesOut, bucket);
    if (usage.keepsFailed) failed(usage, now, key, chain, 'other', 'invalid_request', undefined, undefined, facts, ms, false);
    extra = 0;
    bytesIn = inShare;
    bytesOut = outShare;
  }
}

function failed(
  usage: UsageRollup,
  at: number,
  key: KeyRecord,
  chain: string,
  method: string,
  outcome: ClientOutcome,
  err: GatewayError | undefined,
  node: string | undefined,
  facts: RequestFacts,
  ms: number,
  single: boolean,
): void {
  usage.addFailed({
    at,
    keyId: key.id,
    chain,
    method,
    outcome,
    // The answer's own status over HTTP (a batch's for its chain errors); elsewhere the error table's.
    status: facts.transport === 'http' && (single || err === undefined) ? facts.status : err?.status,
    code: err?.code ?? CODES.get(outcome),
    node,
    latencyMs: Math.round(ms * 10) / 10,
    requestId: facts.requestId,
  });
}
