// An answer a node refused as too large (the plugin's `oversize` verdict) asked again
// in halves, joined, on chains whose plugin can cut the call. The whole call was sent
// and paid for at admission: its halves come on top, from what its budget has left.

import { isGatewayError } from '../../errors.js';
import type { Call } from '../../plugin/contract.js';
import type { CallRecord } from '../call-record.js';
import { NodeWork } from '../policies/node-budget.js';
import { splitCall, type PolicyContext } from '../policies/policies.js';
import { withWork } from './policy-stages.js';

/** Undefined, at once, for every call but an oversize one. */
export function halveOversize<C extends Call, A>(ctx: PolicyContext<C, A>, rec: CallRecord<C, A>): Promise<void> | undefined {
  const r = rec.result;
  if (r === undefined || isGatewayError(r) || r.verdict !== 'oversize') return undefined;
  const halves = ctx.exchange.split?.(rec.call, 'halves');
  if (halves === undefined) return undefined;
  const work = (rec.work ??= new NodeWork(ctx.principal.tier.nodeCalls, rec.routing.cost, { sent: rec.nodeCalls ?? 0 }));
  return splitCall(withWork(ctx, work), rec.routing, halves, 'oversize', 0, r.answer).then((joined) => {
    rec.result = joined;
  });
}
