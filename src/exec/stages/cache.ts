// The response cache around the calls: before admission, each cacheable call's key
// (an answer at the latest state holds for the served head it was given at) and its
// kept answer, if any; after the calls, each good answer a node gave surely to its own
// call, kept for its routing's time. A chain whose cache is off never enters here.

import type { ResponseCache } from '../../cache/response-cache.js';
import { isGatewayError } from '../../errors.js';
import type { Call } from '../../plugin/contract.js';
import type { NodePool } from '../../pool/pool.js';
import type { CallRecord } from '../call-record.js';
import type { CacheCodec } from '../exchanges/exchange.js';

/** What the lookup found: how many calls could be cached, and the calls and units answered from the cache. */
export interface Lookup {
  readonly cacheable: number;
  readonly hits: number;
  readonly hitCost: number;
}

/** The lookup of a request nothing of which is cached: nothing allocated. */
export const NO_LOOKUP: Lookup = Object.freeze({ cacheable: 0, hits: 0, hitCost: 0 });

export async function lookup<C extends Call, A>(
  store: ResponseCache,
  codec: CacheCodec<C, A>,
  pool: NodePool,
  records: ReadonlyArray<CallRecord<C, A>>,
): Promise<Lookup> {
  let cacheable = 0;
  let hits = 0;
  let hitCost = 0;
  for (const rec of records) {
    let part = codec.key(rec.call, rec.routing);
    if (part === undefined) continue;
    if (rec.routing.latest !== undefined && pool.servedHead !== undefined) part += `\u0000@${pool.servedHead}`;
    cacheable++;
    rec.key = store.key(part);
    const entry = await store.get(rec.key);
    if (entry !== undefined) {
      rec.result = { answer: codec.give(entry, rec.call), verdict: 'ok', sure: true };
      rec.hit = true;
      hits++;
      hitCost += rec.routing.cost;
    }
  }
  return cacheable === 0 ? NO_LOOKUP : { cacheable, hits, hitCost };
}

/** Keep a call's answer: a good one a node gave surely to this call, on a routing with a time to keep it. */
export function keep<C extends Call, A>(store: ResponseCache, codec: CacheCodec<C, A>, rec: CallRecord<C, A>): void {
  const r = rec.result;
  if (rec.key === undefined || rec.hit || r === undefined || rec.routing.cacheTtlMs === undefined) return;
  if (isGatewayError(r) || !r.sure || r.verdict !== 'ok' || r.answer === undefined) return;
  const entry = codec.keep(r.answer);
  if (entry !== undefined) store.set(rec.key, entry, rec.routing.cacheTtlMs, rec.routing.cacheHeight);
}
