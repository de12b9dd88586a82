// The calls no policy took, forwarded together through the attempt loop (one node
// request for a batch where the exchange batches). A lone cacheable call shares an
// identical call in flight (coalescing): one caller leads, the others get its answer
// under their own ids, having made no node call.

import type { ResponseCache } from '../../cache/response-cache.js';
import { isGatewayError } from '../../errors.js';
import type { Call } from '../../plugin/contract.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { CallResult } from '../attempts/attempts.js';
import type { CallRecord } from '../call-record.js';
import type { CacheCodec } from '../exchanges/exchange.js';
import type { PolicyContext } from '../policies/policies.js';

export async function forwardTogether<C extends Call, A>(
  ctx: PolicyContext<C, A>,
  records: ReadonlyArray<CallRecord<C, A>>,
  store: ResponseCache | undefined,
  codec: CacheCodec<C, A> | undefined,
): Promise<void> {
  const only = records.length === 1 ? (records[0] as CallRecord<C, A>) : undefined;
  const calls = only === undefined ? records.map((r) => r.call) : [only.call];
  const routings = only === undefined ? records.map((r) => r.routing) : [only.routing];
  const answeredBy: PoolNode[] = [];
  const nodeCalls: number[] = [];
  const extra = { answeredBy, nodeCalls };
  if (only === undefined || only.key === undefined || store === undefined || codec === undefined) {
    settle(records, await ctx.forward(calls, routings, extra), answeredBy, nodeCalls);
    return;
  }
  const send = (): Promise<Array<CallResult<A>>> => ctx.forward(calls, routings, extra);
  // Callers share a call in flight only with callers of the same archive access: a
  // pruned answer's archive fallback (or its refusal) is one caller's, not another's.
  const shared = ctx.archiveAllowed ? `${only.key}\u0000a` : only.key;
  const { value, leader } = await store.coalesce(shared, send);
  if (leader) {
    settle(records, value, answeredBy, nodeCalls);
    return;
  }
  // A follower: the leader keeps the answer; this caller gets it under its own id.
  const r = value[0] as CallResult<A>;
  only.result = isGatewayError(r) || r.answer === undefined ? r : { ...r, answer: codec.share(r.answer, only.call), sure: false };
}

function settle<C extends Call, A>(
  records: ReadonlyArray<CallRecord<C, A>>,
  answers: ReadonlyArray<CallResult<A>>,
  answeredBy: ReadonlyArray<PoolNode | undefined>,
  nodeCalls: readonly number[],
): void {
  for (let m = 0; m < records.length; m++) {
    const rec = records[m] as CallRecord<C, A>;
    rec.result = answers[m];
    rec.by = answeredBy[m];
    rec.nodeCalls = nodeCalls[m] ?? 0;
  }
}
