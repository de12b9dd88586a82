// A JSON-RPC request (one object or a batch) through the call path, for HTTP and
// WebSocket alike: a batch over the tier's cap is refused whole, invalid items get
// their own error (a request of invalid items only is charged as invalid), the valid
// ones go through the call path together, and the answer is assembled in request
// order from the nodes' item text (never re-serialised). What the gateway writes
// itself is in the endpoint's JSON-RPC dialect (`chain.rpc`).
// Notifications get no item; a request of notifications only has no body (HTTP 204).

import type { CallResult } from '../../exec/attempts/attempts.js';
import type { Principal } from '../../exec/principal.js';
import { resultOutcome, type CallPath, type OwnCalls } from '../../exec/call-path.js';
import type { RequestOutcome } from '../../exec/request-record.js';
import { outcomeOf } from '../../exec/request-record.js';
import type { ChainRuntime } from '../../chain/runtime.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import type { RpcWriter } from '../../jsonrpc/dialect.js';
import type { JsonRpcCall, JsonRpcRequest, RpcItem } from '../../plugin/contract.js';
import type { Admission } from '../../quota/admission.js';

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

export interface JsonRpcRun {
  readonly chain: ChainRuntime;
  readonly principal: Principal;
  readonly request: JsonRpcRequest;
  readonly deadline: number;
  readonly trace: RequestOutcome;
  /** Calls the transport answers itself once admitted (WebSocket subscriptions). */
  readonly own?: OwnCalls<JsonRpcCall, string>;
}

/** A whole request refused: one error object, never one per item (a refusal costs less than the request). */
export function refusedWhole(e: GatewayError, rpc: RpcWriter, admission?: Admission): RpcAnswer {
  return { status: e.status, body: rpc.failure(undefined, e.rpcCode, e.message), headers: e.headers, admission, cache: undefined };
}

export async function answerJsonRpc(path: CallPath, run: JsonRpcRun): Promise<RpcAnswer> {
  const { chain, principal, request, trace } = run;
  const { items, batch } = request;
  const { tier } = principal;
  if (batch && items.length > tier.maxBatch) {
    const e = new GatewayError('BATCH_TOO_LARGE', { message: `Batch of ${items.length} is over this tier's limit of ${tier.maxBatch}` });
    const charged = await path.refused(chain, principal, 'batch');
    const answer = charged.error ?? e;
    trace.outcome = outcomeOf(answer);
    return refusedWhole(answer, chain.rpc, charged.admission);
  }
  const exchange = chain.jsonrpc;
  if (exchange === undefined) throw new Error(`plugin "${chain.config.plugin}" made JSON-RPC calls but has no jsonrpc codec`);
  const calls: JsonRpcCall[] = [];
  const results = new Array<CallResult<string> | undefined>(items.length);
  const at: number[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as RpcItem;
    if (item.kind === 'invalid') results[i] = new GatewayError('INVALID_REQUEST', { message: item.message });
    else {
      calls.push(item);
      at.push(i);
    }
  }
  let admission: Admission | undefined;
  let cache: RpcAnswer['cache'];
  if (calls.length === 0) {
    const charged = await path.refused(chain, principal, 'invalid');
    admission = charged.admission;
    if (charged.error !== undefined) {
      trace.outcome = outcomeOf(charged.error);
      return refusedWhole(charged.error, chain.rpc, admission);
    }
  } else {
    const out = await path.run({ chain, principal, calls, exchange, cache: exchange, own: run.own, deadline: run.deadline, trace });
    for (let k = 0; k < at.length; k++) results[at[k] as number] = out.results[k];
    admission = out.admission;
    cache = out.cache;
  }
  // The request's outcome is its first item's.
  trace.outcome = resultOutcome(results[0]);
  const { rpc } = chain;
  return batch ? batchAnswer(rpc, items, results, admission, cache) : singleAnswer(rpc, items[0] as RpcItem, results[0], admission, cache);
}

function itemText(rpc: RpcWriter, item: RpcItem, r: CallResult<string> | undefined): string | undefined {
  if (r === undefined) return undefined;
  if (isGatewayError(r)) return rpc.failure(item.id, r.rpcCode, r.message);
  return r.answer;
}

function singleAnswer(
  rpc: RpcWriter,
  item: RpcItem,
  r: CallResult<string> | undefined,
  admission: Admission | undefined,
  cache: RpcAnswer['cache'],
): RpcAnswer {
  const text = itemText(rpc, item, r);
  if (text === undefined) return { status: 204, body: null, headers: undefined, admission, cache };
  if (!isGatewayError(r)) return { status: 200, body: text, headers: undefined, admission, cache };
  return { status: r.status, body: text, headers: r.headers, admission, cache };
}

function batchAnswer(
  rpc: RpcWriter,
  items: readonly RpcItem[],
  results: ReadonlyArray<CallResult<string> | undefined>,
  admission: Admission | undefined,
  cache: RpcAnswer['cache'],
): RpcAnswer {
  const parts: string[] = [];
  let onlyError: GatewayError | undefined;
  let allSameError = true;
  for (let i = 0; i < items.length; i++) {
    const r = results[i];
    const text = itemText(rpc, items[i] as RpcItem, r);
    if (text === undefined) continue;
    parts.push(text);
    if (!isGatewayError(r)) allSameError = false;
    else if (onlyError === undefined) onlyError = r;
    else if (onlyError.code !== r.code) allSameError = false;
  }
  if (parts.length === 0) return { status: 204, body: null, headers: undefined, admission, cache };
  // A batch refused as a whole (rate limit, no node) carries that status; else 200.
  const whole = allSameError && onlyError !== undefined && onlyError.status !== 200 ? onlyError : undefined;
  return { status: whole?.status ?? 200, body: `[${parts.join(',')}]`, headers: whole?.headers, admission, cache };
}
