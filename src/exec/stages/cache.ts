// The response cache around the calls: before admission, each cacheable call's key
// (an answer at the latest state holds for the served head it was given at) and its
// kept answer, if any; after the calls, each good answer a node gave surely to its own
// call, kept for its routing's time. A chain whose cache is off never enters here.

import type { CachedAnswer } from '../../cache/cache-store.js';
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

/** A lookup as it is made. */
type Tally = { -readonly [K in keyof Lookup]: number };

/** The lookup of a request nothing of which is cached: nothing allocated. */
export const NO_LOOKUP: Lookup = Object.freeze({ cacheable: 0, hits: 0, hitCost: 0 });

/**
 * Each cacheable call's key and kept answer. At once (no promise) when the store is in
 * this process; a store over the network is asked call by call.
 */
export function lookup<C extends Call, A>(
  store: ResponseCache,
  codec: CacheCodec<C, A>,
  pool: NodePool,
  records: ReadonlyArray<CallRecord<C, A>>,
): Lookup | Promise<Lookup> {
  return lookFrom(store, codec, pool, records, 0, { cacheable: 0, hits: 0, hitCost: 0 });
}

function lookFrom<C extends Call, A>(
  store: ResponseCache,
  codec: CacheCodec<C, A>,
  pool: NodePool,
  records: ReadonlyArray<CallRecord<C, A>>,
  from: number,
  found: Tally,
): Lookup | Promise<Lookup> {
  for (let i = from; i < records.length; i++) {
    const rec = records[i] as CallRecord<C, A>;
    let part = codec.key(rec.call, rec.routing);
    if (part === undefined) continue;
    if (rec.routing.latest !== undefined && pool.servedHead !== undefined) part += `\u0000@${pool.servedHead}`;
    found.cacheable++;
    const key = store.key(part);
    rec.key = key;
    const entry = store.get(key);
    if (entry instanceof Promise)
      return entry.then((e) => {
        answered(codec, rec, e, found);
        return lookFrom(store, codec, pool, records, i + 1, found);
      });
    answered(codec, rec, entry, found);
  }
  return found.cacheable === 0 ? NO_LOOKUP : found;
}

function answered<C extends Call, A>(codec: CacheCodec<C, A>, rec: CallRecord<C, A>, entry: CachedAnswer | undefined, found: Tally): void {
  if (entry === undefined) return;
  rec.result = { answer: codec.give(entry, rec.call), verdict: 'ok', sure: true };
  rec.hit = true;
  found.hits++;
  found.hitCost += rec.routing.cost;
}

/** Keep a call's answer: a good one a node gave surely to this call, on a routing with a time to keep it. */
export function keep<C extends Call, A>(store: ResponseCache, codec: CacheCodec<C, A>, rec: CallRecord<C, A>): void {
  const r = rec.result;
  if (rec.key === undefined || rec.hit || r === undefined || rec.routing.cacheTtlMs === undefined) return;
  if (isGatewayError(r) || !r.sure || r.verdict !== 'ok' || r.answer === undefined) return;
  const entry = codec.keep(r.answer);
  if (entry !== undefined) store.set(rec.key, entry, rec.routing.cacheTtlMs, rec.routing.cacheHeight);
}
