// JSON-RPC envelopes: reading a request body into items (with raw ids and raw item
// text kept for relaying), in the dialect the plugin speaks (2.0, or 1.0 as Bitcoin
// Core reads it). JSON-RPC is a transport, not a chain: plugins of JSON-RPC families
// call this. The gateway's own answers are written by dialect.ts.

import { GatewayError } from '../errors.js';
import type { Call, InvalidItem, JsonLimits, JsonRpcCall, JsonRpcRequest, RpcItem } from '../plugin/contract.js';
import { JSONRPC_2, rewrittenItem, type JsonRpcDialect } from './dialect.js';
import { ENVELOPE_NAMES, memberNameProblem, unambiguousId, type ExactNames } from './member-names.js';
import { fewOpenings, memberRaw, nestingDepth, splitArray } from './raw-json.js';

export type JsonRpcLimits = JsonLimits;

export const DEFAULT_JSONRPC_LIMITS: JsonRpcLimits = { maxDepth: 32, maxMethodLength: 128, maxBatch: 1000 };

/** What a plugin reads of an item at parse time (its `meta`), from the method and params. */
export type MetaReader<M> = (method: string, params: unknown) => M;

const NO_META: MetaReader<undefined> = () => undefined;

function invalid(id: string | undefined, message: string): InvalidItem {
  return { kind: 'invalid', id, message };
}

/** A raw id fit to echo: a string, a number or null (not an object a client slipped in). */
function echoable(id: string | undefined): string | undefined {
  if (id === undefined) return undefined;
  const c = id.charCodeAt(0);
  return c === 34 || c === 45 || (c >= 48 && c <= 57) || id === 'null' ? id : undefined;
}

/** Bitcoin Core's reading of "jsonrpc": absent, null or "1.0" is a legacy item, "2.0" a 2.0 one (its notifications included). */
function legacyVersionProblem(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '1.0' || v === '2.0') return undefined;
  return typeof v === 'string' ? 'Invalid request: JSON-RPC version not supported' : 'Invalid request: "jsonrpc" must be a string';
}

function readItem<M>(
  value: unknown,
  raw: string,
  limits: JsonRpcLimits,
  meta: MetaReader<M>,
  names: ExactNames,
  dialect: JsonRpcDialect,
): RpcItem<M> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return invalid(undefined, 'Invalid request: each request must be a JSON object');
  }
  // What JSON.parse read must be what a Go node reads (last duplicate wins, names match
  // in any case): an item where they could differ is refused, and nothing of it is sent.
  const nameProblem = memberNameProblem(raw, names);
  if (nameProblem !== undefined) return invalid(echoable(unambiguousId(raw)), nameProblem);
  const obj = value as Record<string, unknown>;
  const legacy = dialect === '1.0';
  let id: string | undefined;
  if ('id' in obj) {
    const t = typeof obj.id;
    // Bitcoin Core echoes any id it is sent.
    if (!legacy && obj.id !== null && t !== 'string' && t !== 'number') {
      return invalid(undefined, 'Invalid request: id must be a string, a number or null');
    }
    id = memberRaw(raw, 'id');
  }
  if (legacy) {
    const problem = legacyVersionProblem(obj.jsonrpc);
    if (problem !== undefined) return invalid(id, problem);
    // A legacy item without an id is no notification: Bitcoin Core answers it. It goes
    // under id null, so the node's answer pairs and the client gets one.
    if (id === undefined && obj.jsonrpc !== '2.0') {
      id = 'null';
      raw = `{"id":null,${raw.slice(raw.indexOf('{') + 1)}`;
    }
  } else if (obj.jsonrpc !== '2.0') return invalid(id, 'Invalid request: "jsonrpc" must be "2.0"');
  if (typeof obj.method !== 'string' || obj.method.length === 0) {
    return invalid(id, 'Invalid request: "method" must be a non-empty string');
  }
  if (obj.method.length > limits.maxMethodLength) {
    return invalid(id, `Invalid request: "method" is longer than ${limits.maxMethodLength} characters`);
  }
  // Bitcoin Core reads params null as none.
  if ('params' in obj && (obj.params === null ? !legacy : typeof obj.params !== 'object')) {
    return invalid(id, 'Invalid request: "params" must be an array or an object');
  }
  const call: JsonRpcCall<M> = { kind: 'jsonrpc', method: obj.method, params: obj.params, id, raw, meta: meta(obj.method, obj.params) };
  return call;
}

/**
 * Parse a JSON-RPC request body. Throws PARSE_ERROR for text that is not JSON and
 * INVALID_REQUEST for an empty batch or a body nested too deep; item-level problems
 * become InvalidItems so the rest of a batch is still served. `names`: member names
 * the plugin reads inside params, which must be spelt exactly (see exactNames).
 */
export interface ParseOptions<M> {
  /** What the plugin reads of each item at parse time (its `meta`). */
  readonly meta?: MetaReader<M>;
  /** Member names the plugin reads inside params, which must be spelt exactly (see exactNames). */
  readonly names?: ExactNames;
  /** How items are framed (the codec's `dialect`); absent: 2.0. */
  readonly dialect?: JsonRpcDialect;
}

export function parseJsonRpcBody(
  text: string,
  limits?: JsonRpcLimits,
  options?: { readonly names?: ExactNames; readonly dialect?: JsonRpcDialect },
): JsonRpcRequest<undefined>;
export function parseJsonRpcBody<M>(
  text: string,
  limits: JsonRpcLimits,
  options: { readonly meta: MetaReader<M>; readonly names?: ExactNames; readonly dialect?: JsonRpcDialect },
): JsonRpcRequest<M>;
export function parseJsonRpcBody<M>(
  text: string,
  limits: JsonRpcLimits = DEFAULT_JSONRPC_LIMITS,
  options: ParseOptions<M | undefined> = {},
): JsonRpcRequest<M | undefined> {
  const meta = options.meta ?? NO_META;
  const names = options.names ?? ENVELOPE_NAMES;
  const dialect = options.dialect ?? '2.0';
  const depth = fewOpenings(text, limits.maxDepth) ? 0 : nestingDepth(text, limits.maxDepth);
  if (depth > limits.maxDepth) {
    throw new GatewayError('INVALID_REQUEST', { message: `Invalid request: JSON nested deeper than ${limits.maxDepth}` });
  }
  // A batch's items, as sent; one longer than any tier allows is refused before JSON.parse builds it.
  const raws = splitArray(text, limits.maxBatch);
  if (raws !== undefined && raws.length > limits.maxBatch) {
    throw new GatewayError('BATCH_TOO_LARGE', { message: `Batch is over the largest batch allowed (${limits.maxBatch} items)` });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new GatewayError('PARSE_ERROR', { cause });
  }
  if (Array.isArray(value)) {
    if (value.length === 0) throw new GatewayError('INVALID_REQUEST', { message: 'Invalid request: empty batch' });
    if (raws === undefined || raws.length !== value.length) throw new GatewayError('PARSE_ERROR');
    const items = new Array<RpcItem<M | undefined>>(value.length);
    for (let i = 0; i < value.length; i++) items[i] = readItem(value[i], raws[i] as string, limits, meta, names, dialect);
    return { kind: 'jsonrpc', batch: true, items };
  }
  return { kind: 'jsonrpc', batch: false, items: [readItem(value, text.trim(), limits, meta, names, dialect)] };
}

/** A JSON-RPC 2.0 error answer; `id` is raw JSON text (null when unknown). The gateway writes its own in the chain's dialect (dialect.ts). */
export function rpcErrorText(id: string | undefined, code: number, message: string, data?: unknown): string {
  return JSONRPC_2.failure(id, code, message, data);
}

/** Read the error member of one JSON-RPC answer item, if it has one. */
export function replyError(text: string): { code: number; message: string } | undefined {
  // Most answers carry no error: a substring test keeps them off JSON.parse.
  if (!text.includes('"error"')) return undefined;
  const raw = memberRaw(text, 'error');
  if (raw === undefined || raw === 'null') return undefined;
  try {
    const err = JSON.parse(raw) as { code?: unknown; message?: unknown };
    return {
      code: typeof err.code === 'number' ? err.code : 0,
      message: typeof err.message === 'string' ? err.message : '',
    };
  } catch {
    return { code: 0, message: '' };
  }
}

/** Is this call a JSON-RPC item? A guard that keeps the call's own type (a generic `pin` returns what it was given). */
export function isJsonRpcCall<C extends Call>(call: C): call is C & JsonRpcCall {
  return call.kind === 'jsonrpc';
}

/** A call like `call` with other params, its id, method and JSON-RPC version as sent (pinning a height, cutting a range). */
export function withParams<C extends JsonRpcCall>(call: C, params: readonly unknown[]): C {
  const text = JSON.stringify(params);
  return { ...call, params, raw: rewrittenItem(call, call.id, text) };
}
