// How one attempt on a node ended, as metrics and traces name it, and an attempt sent
// with its own span when the request is traced: the span is the request span's child,
// its context goes to the node (traceparent), and it ends with the node's verdict or
// the failure. Untraced attempts never come here.

import { CallAborted, NodeFailure, NodeThrottled, type Cancel } from '../../pool/failures.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { Call } from '../../plugin/contract.js';
import type { RequestSpan } from '../../ops/trace/request-span.js';
import type { Exchange, Sent } from '../exchanges/exchange.js';
import type { UpstreamOutcome } from '../outcome.js';
import type { Attempted } from './hedge.js';

/** A failed attempt's outcome in upstream metrics. */
export function failureOutcome(err: unknown): UpstreamOutcome {
  if (err instanceof NodeThrottled) return 'throttled';
  if (err instanceof NodeFailure && err.reason === 'timeout') return 'timeout';
  return 'failure';
}

/** The verdict an attempt's answers came to: ok when every one is, else the first other. */
function verdictOf<A>(sent: ReadonlyArray<Sent<A>>): string {
  for (const s of sent) if (s.verdict !== 'ok') return s.verdict;
  return 'ok';
}

export function tracedAttempt<C extends Call, A>(
  span: RequestSpan,
  exchange: Exchange<C, A>,
  node: PoolNode,
  calls: readonly C[],
  timeoutMs: number,
  cancel: Cancel | undefined,
  hedge: boolean,
): Promise<Attempted<A>> {
  const started = performance.now();
  const attempt = span.attempt(node.name, node.role, hedge);
  return exchange.send(node, calls, timeoutMs, cancel, attempt.headers).then(
    (sent) => {
      attempt.end(verdictOf(sent));
      return { node, started, sent };
    },
    (err: unknown) => {
      attempt.end(err instanceof CallAborted ? 'cancelled' : failureOutcome(err));
      return { node, started, err };
    },
  );
}
