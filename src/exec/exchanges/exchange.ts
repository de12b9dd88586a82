// What the attempt loop asks of each kind of call: how to send calls to one node and
// read back each one's answer and verdict (an exchange), and how its answers are kept
// in and given back from the response cache (a cache codec). One adapter per kind:
// JSON-RPC items and batches, HTTP passthrough, gRPC (committed at the first byte),
// and WebSocket subscribe. Outcomes are typed here, once, for metrics and usage.

import type { CachedAnswer } from '../../cache/cache-store.js';
import type { Call, Routing, Verdict } from '../../plugin/contract.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { Cancel } from '../../pool/failures.js';
import type { UpstreamOutcome } from '../outcome.js';

/** One call's answer from one node, with the verdict the plugin gave it. */
export interface Sent<A> {
  /** Undefined for a notification (a call that gets no answer). */
  readonly answer: A | undefined;
  readonly verdict: Verdict;
  /**
   * The answer was paired with its call by what the gateway sent, so it may be cached
   * (an answer a node gave under a fixed id and paired by position is only relayed).
   */
  readonly sure: boolean;
  /**
   * For an answer that is still arriving (a relayed gRPC stream): settles with how the
   * node ended it, so the node's metrics and breaker hear of a failure midway.
   */
  readonly settled?: Promise<UpstreamOutcome>;
}

/**
 * Sends calls to one node in one request. `send` throws NodeFailure (the breaker counts
 * it) or NodeThrottled (backed off) when the node is to blame for the whole attempt.
 */
export interface Exchange<C extends Call, A> {
  /** Calls to the same kind of node may share one request (JSON-RPC batches). */
  readonly batches: boolean;
  /**
   * `cancel` gives up on the attempt (a hedge that lost): it then rejects with CallAborted.
   * `trace`: headers carrying the attempt's span to the node (traceparent), when traced.
   */
  send(
    node: PoolNode,
    calls: readonly C[],
    timeoutMs: number,
    cancel?: Cancel,
    trace?: Readonly<Record<string, string>>,
  ): Promise<Array<Sent<A>>>;
  /** A submit's answer that is not a result but means the node has it (accepted all the same). */
  alreadyAccepted?(call: C, sent: Sent<A>): boolean;
  /** The call as parts, and how their answers make its answer (see JsonRpcCodec.split). */
  split?(call: C, how: 'fit' | 'halves'): Parts<C, A> | undefined;
  /** The id an answer gives (JSON-RPC: a string `result`, e.g. a transaction hash), for reads of it right after. */
  resultId?(answer: A): string | undefined;
  /** An answer as agreement compares it (its status and text); absent: calls of this kind are never compared. */
  agreeable?(answer: A): { readonly status: number; readonly text: string };
  /** Node state named by ids: what the call path needs to keep calls on the node holding it. */
  readonly state?: StateIds<C, A>;
}

export interface Parts<C extends Call, A> {
  readonly calls: readonly C[];
  join(answers: readonly A[]): A;
  /** How the client should cut the call when its node-call budget stops the parts (see SplitPolicy.tooLarge). */
  tooLarge?(refused: A | undefined): string;
}

/** Reading and rewriting state ids in calls and answers (JSON-RPC: `result` of a create, the first param of a use). */
export interface StateIds<C extends Call, A> {
  /** The node's id in a create's answer. */
  created(answer: A): string | undefined;
  /** The answer with the client's id in place of the node's. */
  withId(answer: A, id: string): A;
  /** The use call with the node's id in place of the client's. */
  use(call: C, nodeId: string): C;
  /** The chain's answer for an id the gateway does not hold for this key. */
  notFound(call: C): A;
  /** Did the node answer that it no longer holds the state? */
  gone(answer: A): boolean;
}

/** How answers of a kind are kept in the response cache and given back to another caller. */
export interface CacheCodec<C extends Call, A> {
  /** The cache key of a call (without the chain), or undefined when it is never cached. */
  key(call: C, routing: Routing): string | undefined;
  /** What to keep of a good answer, or undefined when it must not be kept. */
  keep(answer: A): CachedAnswer | undefined;
  /** A kept answer, given to this call. */
  give(entry: CachedAnswer, call: C): A;
  /** A leader's answer given to a caller that waited on the same call (coalescing). */
  share(answer: A, call: C): A;
}

/** Why a call moved to another node. */
export type RetryReason = 'failure' | 'throttled' | 'pruned';

/** What the attempt loop reports, for metrics. */
export interface ForwardObserver {
  upstream(node: PoolNode, outcome: UpstreamOutcome, seconds: number): void;
  retry(reason: RetryReason): void;
}
