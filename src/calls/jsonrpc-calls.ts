// Answering a JSON-RPC request (one object or a batch) for any transport: each item
// is checked and classified, the valid ones are admitted together as one request,
// sent to nodes together, and the answer is assembled in request order from the
// nodes' item text (never re-serialised). Notifications get no item; a request of
// notifications only has no body (HTTP answers 204). The caller writes the answer.

import type { KeyRecord } from '../auth/key-store.js';
import type { ChainRuntime } from '../chain-runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { rpcErrorText } from '../jsonrpc/envelope.js';
import { isInvalid, type Call, type ParsedRequest, type Routing } from '../plugin.js';
import type { ItemResult, RoutedCall } from '../pool/forwarder.js';
import type { Admission } from '../quota/admission.js';
import type { CallAccess } from './access.js';
import { outcomeOf, type RequestOutcome } from './request-record.js';
import { answerCalls, lookupCached, NONE, type CacheLookup } from './cached-calls.js';

export type { RequestOutcome };

export type JsonRpcRequest = Extract<ParsedRequest, { kind: 'jsonrpc' }>;

/** The answer to write: status for HTTP, body (null: nothing to send), extra headers. */
export interface RpcAnswer {
  readonly status: number;
  readonly body: string | null;
  /** Retry-After and the like, from a refusal that answers the whole request. */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** The rate limiter's view, for RateLimit-* headers (undefined when nothing was admitted). */
  readonly admission: Admission | undefined;
  /** x-cache value when some call was cacheable. */
  readonly cache: 'HIT' | 'MISS' | undefined;
}

/** Calls a transport answers itself once they are admitted (WebSocket subscriptions). */
export interface OwnCalls {
  claims(call: Call): boolean;
  answer(call: Call, routing: Routing): Promise<ItemResult>;
}

function itemOutcome(r: ItemResult): string {
  if (r === undefined) return 'ok';
  if (typeof r !== 'string') return outcomeOf(r);
  return r.includes('"error"') ? 'chain_error' : 'ok';
}

function refusedWhole(items: JsonRpcRequest['items'], batch: boolean, e: GatewayError): RpcAnswer {
  const body = batch
    ? `[${items.map((it) => rpcErrorText(it.id, e.rpcCode, e.message)).join(',')}]`
    : rpcErrorText(items[0]?.id, e.rpcCode, e.message);
  return { status: e.status, body, headers: e.headers, admission: undefined, cache: undefined };
}

async function answerRouted(
  chain: ChainRuntime,
  routed: readonly RoutedCall[],
  deadline: number,
  result: RequestOutcome,
  own: OwnCalls | undefined,
  look: CacheLookup,
): Promise<ItemResult[]> {
  if (own === undefined || !routed.some((r) => own.claims(r.call))) return answerCalls(chain, routed, look, deadline, result);
  // Own calls are answered by the transport; the rest go to nodes as one request.
  const out = new Array<ItemResult>(routed.length);
  const rest: RoutedCall[] = [];
  const at: number[] = [];
  const mine: Array<Promise<void>> = [];
  routed.forEach((r, k) => {
    if (own.claims(r.call)) {
      mine.push(
        own.answer(r.call, r.routing).then((a) => {
          out[k] = a;
        }),
      );
    } else {
      rest.push(r);
      at.push(k);
    }
  });
  if (rest.length > 0) {
    const answers = await chain.forwarder.jsonRpc(rest, deadline, result);
    rest.forEach((_, m) => {
      out[at[m] as number] = answers[m];
    });
  }
  await Promise.all(mine);
  return out;
}

export async function answerJsonRpc(
  access: CallAccess,
  chain: ChainRuntime,
  record: KeyRecord,
  tier: TierConfig,
  parsed: JsonRpcRequest,
  result: RequestOutcome,
  deadline: number,
  own?: OwnCalls,
): Promise<RpcAnswer> {
  const { items, batch } = parsed;
  const n = items.length;
  if (batch && n > tier.maxBatch) {
    const e = new GatewayError('BATCH_TOO_LARGE', { message: `Batch of ${n} is over this tier's limit of ${tier.maxBatch}` });
    result.outcome = outcomeOf(e);
    return refusedWhole(items, true, e);
  }
  const results = new Array<ItemResult>(n);
  const routed: RoutedCall[] = [];
  const slots: number[] = [];
  let cost = 0;
  for (let i = 0; i < n; i++) {
    const item = items[i] as (typeof items)[number];
    if (isInvalid(item)) {
      results[i] = new GatewayError('INVALID_REQUEST', { message: item.message });
      continue;
    }
    const routing = access.route(chain, record, tier, item);
    if (isGatewayError(routing)) {
      results[i] = routing;
      continue;
    }
    if (slots.length === 0) result.label = routing.label;
    routed.push({ call: item, routing });
    slots.push(i);
    cost += routing.cost;
  }

  let admission: Admission | undefined;
  let cache: RpcAnswer['cache'];
  if (routed.length > 0) {
    const look = chain.cache === undefined ? NONE : await lookupCached(chain.cache, routed);
    if (look.cacheable > 0) cache = look.hitCount === routed.length ? 'HIT' : 'MISS';
    // Cached answers count like any other unless the tier says they are free.
    const charge = tier.cacheHitsFree ? cost - look.hitCost : cost;
    let admitted = charge > 0 ? access.admit(chain, record, tier, charge) : undefined;
    if (admitted instanceof Promise) admitted = await admitted;
    if (isGatewayError(admitted)) {
      for (const i of slots) results[i] = admitted;
    } else if (admitted?.error !== undefined) {
      admission = admitted.admission;
      for (const i of slots) results[i] = admitted.error;
    } else {
      admission = admitted?.admission;
      const answers = await answerRouted(chain, routed, deadline, result, own, look);
      // Usage counts errors among admitted calls only: refused items were never calls.
      let errors = 0;
      for (let k = 0; k < slots.length; k++) {
        const r = answers[k];
        results[slots[k] as number] = r;
        if (itemOutcome(r) !== 'ok') errors++;
      }
      if (errors > 0) access.countErrors(record.id, chain.name, errors);
    }
  }
  result.outcome = itemOutcome(results[0]);
  return batch
    ? batchAnswer(items, results, admission, cache)
    : singleAnswer(items[0] as (typeof items)[number], results[0], admission, cache);
}

function singleAnswer(
  item: JsonRpcRequest['items'][number],
  r: ItemResult,
  admission: Admission | undefined,
  cache: RpcAnswer['cache'],
): RpcAnswer {
  if (r === undefined) return { status: 204, body: null, headers: undefined, admission, cache };
  if (typeof r === 'string') return { status: 200, body: r, headers: undefined, admission, cache };
  return { status: r.status, body: rpcErrorText(item.id, r.rpcCode, r.message), headers: r.headers, admission, cache };
}

function batchAnswer(
  items: JsonRpcRequest['items'],
  results: readonly ItemResult[],
  admission: Admission | undefined,
  cache: RpcAnswer['cache'],
): RpcAnswer {
  const parts: string[] = [];
  let onlyError: GatewayError | undefined;
  let allSameError = true;
  for (let i = 0; i < items.length; i++) {
    const r = results[i];
    const item = items[i] as JsonRpcRequest['items'][number];
    if (typeof r === 'string') {
      parts.push(r);
      allSameError = false;
    } else if (r !== undefined) {
      parts.push(rpcErrorText(item.id, r.rpcCode, r.message));
      if (onlyError === undefined) onlyError = r;
      else if (onlyError.code !== r.code) allSameError = false;
    }
  }
  if (parts.length === 0) return { status: 204, body: null, headers: undefined, admission, cache };
  // A batch refused as a whole (rate limit, no node) carries that status; else 200.
  const whole = allSameError && onlyError !== undefined && onlyError.status !== 200 ? onlyError : undefined;
  return { status: whole?.status ?? 200, body: `[${parts.join(',')}]`, headers: whole?.headers, admission, cache };
}
