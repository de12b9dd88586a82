// One call of a request on its way along the call path: the call as it will be sent,
// its routing, its place in the request, and what became of it (its cache key, its
// answer, the node that answered, the node calls it made, the units it was charged).
// Every stage reads and fills the same record, so a call's facts never live in arrays
// kept side by side; the request's record hands them on to usage history.

import type { Call, Routing } from '../plugin/contract.js';
import type { PoolNode } from '../pool/pool-node.js';
import type { CallResult } from './attempts/attempts.js';
import type { NodeWork } from './policies/node-budget.js';

export interface CallRecord<C extends Call, A> {
  /** The call's place in the request: its answer goes there. */
  readonly slot: number;
  /** The call as it is sent (a read at the latest state pinned to the served head). */
  call: C;
  readonly routing: Routing;
  /** The call's key in the response cache; undefined: never cached. */
  key: string | undefined;
  /** The answer came from the cache. */
  hit: boolean;
  /** The call's answer or table error, once it has one. */
  result: CallResult<A> | undefined;
  /** The node that answered a call forwarded with the others. */
  by: PoolNode | undefined;
  /** Node calls made for the call when forwarded with the others (a follower of a coalesced call made none); undefined: not forwarded so. */
  nodeCalls: number | undefined;
  /** The node work of a call a policy took: its node calls span several forwards. */
  work: NodeWork | undefined;
  /** Units charged for the call: its cost when admitted (nothing for a free cache hit), and its work past one node call. */
  charged: number;
}

export function callRecord<C extends Call, A>(slot: number, call: C, routing: Routing): CallRecord<C, A> {
  return {
    slot,
    call,
    routing,
    key: undefined,
    hit: false,
    result: undefined,
    by: undefined,
    nodeCalls: undefined,
    work: undefined,
    charged: 0,
  };
}
