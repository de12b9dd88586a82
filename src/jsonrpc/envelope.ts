// JSON-RPC 2.0 envelopes: reading a request body into items (with raw ids and raw
// item text kept for relaying) and writing the gateway's own error answers.
// JSON-RPC is a transport, not a chain: plugins of JSON-RPC families call this.

import { GatewayError } from '../errors.js';
import type { Call, InvalidItem, JsonLimits, RpcItem } from '../plugin.js';
import { fewOpenings, memberRaw, nestingDepth, splitArray } from './raw-json.js';

export type JsonRpcLimits = JsonLimits;

export const DEFAULT_JSONRPC_LIMITS: JsonRpcLimits = { maxDepth: 32, maxMethodLength: 128 };

export interface ParsedBody {
  readonly batch: boolean;
  readonly items: readonly RpcItem[];
}

function invalid(id: string | undefined, message: string): InvalidItem {
  return { invalid: true, id, message };
}

function readItem(value: unknown, raw: string, limits: JsonRpcLimits): RpcItem {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return invalid(undefined, 'Invalid request: each request must be a JSON object');
  }
  const obj = value as Record<string, unknown>;
  let id: string | undefined;
  if ('id' in obj) {
    const t = typeof obj.id;
    if (obj.id !== null && t !== 'string' && t !== 'number') {
      return invalid(undefined, 'Invalid request: id must be a string, a number or null');
    }
    id = memberRaw(raw, 'id');
  }
  if (obj.jsonrpc !== '2.0') return invalid(id, 'Invalid request: "jsonrpc" must be "2.0"');
  if (typeof obj.method !== 'string' || obj.method.length === 0) {
    return invalid(id, 'Invalid request: "method" must be a non-empty string');
  }
  if (obj.method.length > limits.maxMethodLength) {
    return invalid(id, `Invalid request: "method" is longer than ${limits.maxMethodLength} characters`);
  }
  if ('params' in obj && (obj.params === null || typeof obj.params !== 'object')) {
    return invalid(id, 'Invalid request: "params" must be an array or an object');
  }
  const call: Call = { method: obj.method, params: obj.params, id, raw };
  return call;
}

/**
 * Parse a JSON-RPC request body. Throws PARSE_ERROR for text that is not JSON and
 * INVALID_REQUEST for an empty batch or a body nested too deep; item-level problems
 * become InvalidItems so the rest of a batch is still served.
 */
export function parseJsonRpcBody(text: string, limits: JsonRpcLimits = DEFAULT_JSONRPC_LIMITS): ParsedBody {
  const depth = fewOpenings(text, limits.maxDepth) ? 0 : nestingDepth(text, limits.maxDepth);
  if (depth > limits.maxDepth) {
    throw new GatewayError('INVALID_REQUEST', { message: `Invalid request: JSON nested deeper than ${limits.maxDepth}` });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new GatewayError('PARSE_ERROR', { cause });
  }
  if (Array.isArray(value)) {
    if (value.length === 0) throw new GatewayError('INVALID_REQUEST', { message: 'Invalid request: empty batch' });
    const raws = splitArray(text);
    if (raws === undefined || raws.length !== value.length) throw new GatewayError('PARSE_ERROR');
    const items = new Array<RpcItem>(value.length);
    for (let i = 0; i < value.length; i++) items[i] = readItem(value[i], raws[i] as string, limits);
    return { batch: true, items };
  }
  return { batch: false, items: [readItem(value, text.trim(), limits)] };
}

/** A JSON-RPC error answer; `id` is raw JSON text (null when unknown). */
export function rpcErrorText(id: string | undefined, code: number, message: string, data?: unknown): string {
  const dataPart = data === undefined ? '' : `,"data":${JSON.stringify(data)}`;
  return `{"jsonrpc":"2.0","id":${id ?? 'null'},"error":{"code":${code},"message":${JSON.stringify(message)}${dataPart}}}`;
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
