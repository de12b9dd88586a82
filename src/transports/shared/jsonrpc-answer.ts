// A JSON-RPC request (one object or a batch) through the call path, for HTTP and
// WebSocket alike: a batch over the tier's cap is refused whole, invalid items get
// their own error (a request of invalid items only is charged as invalid), the valid
// ones go through the call path together, and the answer is assembled in request
// order from the nodes' item text (never re-serialised). What the gateway writes
// itself is in the endpoint's JSON-RPC dialect (`chain.rpc`).
// Notifications get no item; a request of notifications only has no body (HTTP 204).

import type { CallResult } from '../../exec/attempts/attempts.js';
import type { Principal } from '../../exec/principal.js';
import type { CallPath, OwnCalls, RunResult } from '../../exec/call-path.js';
import { resultOutcome } from '../../exec/call-usage.js';
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

/** The answer; without a promise when the call path needs none (every call answered from a cache in this process). */
export function answerJsonRpc(path: CallPath, run: JsonRpcRun): RpcAnswer | Promise<RpcAnswer> {
  const { chain, principal, request } = run;
  const { items, batch } = request;
  if (batch && items.length > principal.tier.maxBatch) return tooLarge(path, run);
  const exchange = chain.jsonrpc;
  if (exchange === undefined) throw new Error(`plugin "${chain.config.plugin}" made JSON-RPC calls but has no jsonrpc codec`);
  const calls: JsonRpcCall[] = [];
  const results = new Array<CallResult<string> | undefined>(items.length);
  const at: number[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as RpcItem;
    if (item.kind === 'invalid') {
      results[i] = new GatewayError('INVALID_REQUEST', { message: item.message });
      run.trace.invalidCalls++;
    } else {
      calls.push(item);
      at.push(i);
    }
  }
  if (calls.length === 0) return allInvalid(path, run, results);
  const out = path.run({ chain, principal, calls, exchange, cache: exchange, own: run.own, deadline: run.deadline, trace: run.trace });
  if (out instanceof Promise) return out.then((o) => answered(run, results, at, o));
  return answered(run, results, at, out);
}

async function tooLarge(path: CallPath, run: JsonRpcRun): Promise<RpcAnswer> {
  const { chain, principal, request, trace } = run;
  const max = principal.tier.maxBatch;
  const e = new GatewayError('BATCH_TOO_LARGE', { message: `Batch of ${request.items.length} is over this tier's limit of ${max}` });
  const charged = await path.refused(chain, principal, 'batch', trace);
  const answer = charged.error ?? e;
  trace.outcome = outcomeOf(answer);
  return refusedWhole(answer, chain.rpc, charged.admission);
}

/** No valid item: charged as invalid, each item answered with its own error (or the rate refusal, whole). */
async function allInvalid(path: CallPath, run: JsonRpcRun, results: Array<CallResult<string> | undefined>): Promise<RpcAnswer> {
  const { chain, trace } = run;
  const charged = await path.refused(chain, run.principal, 'invalid', trace);
  if (charged.error !== undefined) {
    // Refused whole: one refusal, not an invalid call per item.
    trace.invalidCalls = 0;
    trace.outcome = outcomeOf(charged.error);
    return refusedWhole(charged.error, chain.rpc, charged.admission);
  }
  return assembled(run, results, charged.admission, undefined);
}

function answered(
  run: JsonRpcRun,
  results: Array<CallResult<string> | undefined>,
  at: readonly number[],
  out: RunResult<string>,
): RpcAnswer {
  for (let k = 0; k < at.length; k++) results[at[k] as number] = out.results[k];
  return assembled(run, results, out.admission, out.cache);
}

function assembled(
  run: JsonRpcRun,
  results: ReadonlyArray<CallResult<string> | undefined>,
  admission: Admission | undefined,
  cache: RpcAnswer['cache'],
): RpcAnswer {
  const { items, batch } = run.request;
  // The request's outcome is its first item's.
  run.trace.outcome = resultOutcome(results[0]);
  const { rpc } = run.chain;
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
