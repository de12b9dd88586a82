// The first stage: each call's permissions and the plugin's routing (CallAccess.route).
// A refused call gets its error in its place at once and goes no further (its label is
// kept for usage history); the others become records, and the request's cost is theirs.

import type { ChainRuntime } from '../../chain/runtime.js';
import { isGatewayError } from '../../errors.js';
import type { Call } from '../../plugin/contract.js';
import type { CallAccess } from '../access.js';
import type { Principal } from '../principal.js';
import type { CallResult } from '../attempts/attempts.js';
import { callRecord, type CallRecord } from '../call-record.js';

export interface Routed<C extends Call, A> {
  readonly records: Array<CallRecord<C, A>>;
  /** Units the routed calls cost together. */
  readonly cost: number;
  /** The plugin's labels of the calls refused, by slot; undefined when none was. */
  readonly refusedLabels: string[] | undefined;
}

export function routeCalls<C extends Call, A>(
  access: CallAccess,
  chain: ChainRuntime,
  principal: Principal,
  calls: readonly C[],
  results: Array<CallResult<A>>,
): Routed<C, A> {
  const records: Array<CallRecord<C, A>> = [];
  let cost = 0;
  let refusedLabels: string[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as C;
    const routing = access.route(chain, principal, call);
    if (isGatewayError(routing)) {
      results[i] = routing;
      (refusedLabels ??= [])[i] = access.labelOf(chain, call);
      continue;
    }
    records.push(callRecord(i, call, routing));
    cost += routing.cost;
  }
  return { records, cost, refusedLabels };
}
