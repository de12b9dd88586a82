// JSON-RPC calls through the response cache: hits are answered with the cached
// result under the caller's own id; misses go to nodes (a lone call shares any
// identical call in flight), and good answers are kept as long as the plugin said.
// A node's answer is relayed as sent to the caller that asked for it.

import type { ResponseCache } from '../cache/response-cache.js';
import type { ChainRuntime } from '../chain-runtime.js';
import { memberRaw } from '../jsonrpc/raw-json.js';
import type { ForwardTrace, ItemResult, RoutedCall } from '../pool/forwarder.js';

export interface CacheLookup {
  /** Cache key per routed call (undefined: not cacheable). */
  readonly keys: Array<string | undefined>;
  /** Answer text per routed call served from the cache. */
  readonly hits: Array<string | undefined>;
  readonly hitCount: number;
  readonly hitCost: number;
  readonly cacheable: number;
}

/** No cache, or nothing cacheable: the lookup of an endpoint without a cache. */
export const NONE: CacheLookup = { keys: [], hits: [], hitCount: 0, hitCost: 0, cacheable: 0 };

function withId(id: string, member: 'result' | 'error', raw: string): string {
  return `{"jsonrpc":"2.0","id":${id},"${member}":${raw}}`;
}

/** The same answer for another caller: its id, the node's result or error untouched. */
function reframe(text: string, id: string): string {
  const result = memberRaw(text, 'result');
  if (result !== undefined) return withId(id, 'result', result);
  const error = memberRaw(text, 'error');
  return error !== undefined ? withId(id, 'error', error) : text;
}

export async function lookupCached(cache: ResponseCache | undefined, routed: readonly RoutedCall[]): Promise<CacheLookup> {
  if (cache === undefined) return NONE;
  const keys = new Array<string | undefined>(routed.length);
  const hits = new Array<string | undefined>(routed.length);
  let hitCount = 0;
  let hitCost = 0;
  let cacheable = 0;
  for (let k = 0; k < routed.length; k++) {
    const { call, routing } = routed[k] as RoutedCall;
    if (routing.cacheTtlMs === undefined || call.id === undefined) continue;
    cacheable++;
    const key = cache.key(`${call.method}\u0000${JSON.stringify(call.params ?? null)}`);
    keys[k] = key;
    const v = await cache.get(key);
    if (v !== undefined) {
      hits[k] = withId(call.id, 'result', v.body);
      hitCount++;
      hitCost += routing.cost;
    }
  }
  return { keys, hits, hitCount, hitCost, cacheable };
}

function keep(cache: ResponseCache, key: string, rc: RoutedCall, answer: ItemResult): void {
  if (typeof answer !== 'string') return;
  const result = memberRaw(answer, 'result');
  // Errors, and empty answers that may fill later (null), are never kept.
  if (result === undefined || result === 'null') return;
  cache.set(key, { status: 200, body: result }, rc.routing.cacheTtlMs as number, rc.routing.cacheHeight);
}

/** Answers for every routed call, in order: cached, coalesced or from nodes. */
export async function answerCalls(
  chain: ChainRuntime,
  routed: readonly RoutedCall[],
  look: CacheLookup,
  deadline: number,
  trace: ForwardTrace,
): Promise<ItemResult[]> {
  const cache = chain.cache;
  if (cache === undefined || look.cacheable === 0) return chain.forwarder.jsonRpc(routed, deadline, trace);
  const out = new Array<ItemResult>(routed.length);
  const missing: RoutedCall[] = [];
  const at: number[] = [];
  for (let k = 0; k < routed.length; k++) {
    const hit = look.hits[k];
    if (hit !== undefined) out[k] = hit;
    else {
      missing.push(routed[k] as RoutedCall);
      at.push(k);
    }
  }
  if (missing.length === 0) return out;
  const onlyKey = missing.length === 1 ? look.keys[at[0] as number] : undefined;
  if (onlyKey !== undefined) {
    const rc = missing[0] as RoutedCall;
    const { value, leader } = await cache.coalesce(onlyKey, () => chain.forwarder.jsonRpc([rc], deadline, trace));
    const answer = value[0];
    if (leader) keep(cache, onlyKey, rc, answer);
    out[at[0] as number] = !leader && typeof answer === 'string' ? reframe(answer, rc.call.id as string) : answer;
    return out;
  }
  const answers = await chain.forwarder.jsonRpc(missing, deadline, trace);
  for (let m = 0; m < missing.length; m++) {
    const k = at[m] as number;
    const key = look.keys[k];
    if (key !== undefined) keep(cache, key, missing[m] as RoutedCall, answers[m]);
    out[k] = answers[m];
  }
  return out;
}
