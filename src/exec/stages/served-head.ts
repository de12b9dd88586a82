// Calls at the latest state kept on one head, before and after they are sent: pinned to
// the served head's number while some node is already past it (a node ahead would
// otherwise answer from a newer block than the next call may get), for plugins that can
// name a height in the call; and a head read never going back: an answer below the
// served head is given at it, one above moves it up when believed (NodePool.heardHead).

import { isGatewayError } from '../../errors.js';
import type { Call, Routing } from '../../plugin/contract.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { NodePool } from '../../pool/pool.js';
import type { CallResult } from '../attempts/attempts.js';
import type { CallRecord } from '../call-record.js';

export function pinLatest<C extends Call, A>(pool: NodePool, records: ReadonlyArray<CallRecord<C, A>>): void {
  const served = pool.servedHead;
  if (served === undefined || !pool.aheadOfServed) return;
  for (const rec of records) {
    const pin = rec.routing.latest?.pin;
    if (pin !== undefined) rec.call = pin(rec.call, served);
  }
}

/** A head read's answer at the served head, or above it when the pool believes the node that gave it. */
export function atServedHead<A>(pool: NodePool, routing: Routing, r: CallResult<A>, by: PoolNode | undefined): CallResult<A> {
  const served = pool.servedHead;
  const reader = routing.latest?.head;
  if (served === undefined || reader === undefined || isGatewayError(r) || typeof r.answer !== 'string') return r;
  const h = reader.height(r.answer);
  if (h === undefined || h === served) return r;
  if (h > served && by !== undefined && pool.heardHead(by, h)) return r;
  // Head readers work on JSON-RPC answers, which are strings.
  return { ...r, answer: reader.withHeight(r.answer, served) as A };
}
