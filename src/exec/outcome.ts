// One vocabulary for how things end, spelt one way everywhere it is read: in verdicts,
// the attempt loop, metrics' `outcome` labels, log lines and trace attributes. Label
// values are snake_case, as Prometheus label values and the error table's lowercased
// codes (`upstream_failed`) are, so a query never has to know which metric spells an
// outcome which way. The lists are what the code can emit: the dashboards test holds
// every dashboard and alert to them.

import { ERRORS, type ErrorCode } from '../errors.js';

/**
 * How the core treats a node's answer (a plugin codec's verdict):
 * - ok / chain_error: relay to the client (a chain error is an answer, not a failure);
 * - pruned: the node lacks the state, try an archive node (when the key may have it);
 * - node_failure: counts against the node's breaker, try another node;
 * - throttled: the node said 429; back off from it without opening its breaker;
 * - oversize: the node refused the call as too big for it (a getLogs range, too many
 *   results): split in two by the codec's `bisect` and asked again, else relayed.
 */
export const VERDICTS = ['ok', 'chain_error', 'pruned', 'node_failure', 'throttled', 'oversize'] as const;
export type Verdict = (typeof VERDICTS)[number];

/**
 * How one attempt on one node ended (`noderouter_upstream_requests_total`): the answer's
 * verdict, or how it failed. `cancelled`: a hedge that lost, or an attempt the client
 * left, stopped before the node answered.
 */
export const UPSTREAM_OUTCOMES = ['ok', 'chain_error', 'pruned', 'failure', 'timeout', 'throttled', 'cancelled'] as const;
export type UpstreamOutcome = (typeof UPSTREAM_OUTCOMES)[number];

/**
 * How one client request ended (`noderouter_requests_total`, the request log line):
 * answered, the chain's own error, a table error by its lowercased code, or the client left.
 */
export type ClientOutcome = 'ok' | 'chain_error' | 'cancelled' | Lowercase<ErrorCode>;

const ERROR_OUTCOMES = Object.fromEntries(Object.keys(ERRORS).map((code) => [code, code.toLowerCase()])) as Record<
  ErrorCode,
  Lowercase<ErrorCode>
>;

export const CLIENT_OUTCOMES: readonly ClientOutcome[] = ['ok', 'chain_error', 'cancelled', ...Object.values(ERROR_OUTCOMES)];

/** A table error as an outcome label. */
export function errorOutcome(code: ErrorCode): Lowercase<ErrorCode> {
  return ERROR_OUTCOMES[code];
}

/**
 * How a call checked by agreement ended (`noderouter_consensus_total`): `agreed`;
 * `majority` or `archive`, answered without enough agreeing; `refused`, answered "nodes
 * disagree"; `failed`, no node answered, or a full node's pruned answer refused a key
 * without archive access.
 */
export const CONSENSUS_OUTCOMES = ['agreed', 'majority', 'archive', 'refused', 'failed'] as const;
export type ConsensusOutcome = (typeof CONSENSUS_OUTCOMES)[number];

/** Every value each metric's `outcome` label can take. */
export const OUTCOME_LABELS: ReadonlyMap<string, readonly string[]> = new Map<string, readonly string[]>([
  ['noderouter_requests_total', CLIENT_OUTCOMES],
  ['noderouter_request_duration_seconds', CLIENT_OUTCOMES],
  ['noderouter_upstream_requests_total', UPSTREAM_OUTCOMES],
  ['noderouter_consensus_total', CONSENSUS_OUTCOMES],
]);
