// The one writer of the JSON-RPC texts the gateway makes itself (its errors, cache hits,
// coalesced and node-state answers, subscription answers and notifications, items it
// rewrites for a node), in the dialect the chain's plugin declares: 2.0, or 1.0 as
// Bitcoin Core speaks it. Chosen once per chain when its runtime is built; answers
// from nodes are relayed as they came and never pass through here.

import type { JsonRpcCall, JsonRpcDialect } from '../plugin/contract.js';
import { memberRaw } from './raw-json.js';

export type { JsonRpcDialect };

export interface RpcWriter {
  readonly dialect: JsonRpcDialect;
  /** An answer carrying `result` (raw JSON) under `id` (raw JSON; null when undefined). */
  result(id: string | undefined, result: string): string;
  /** An answer carrying the error object `error` (raw JSON). */
  error(id: string | undefined, error: string): string;
  /** An error answer from the error table's code and message. */
  failure(id: string | undefined, code: number, message: string, data?: unknown): string;
  /** A subscription's notification under the client's subscription id; `result` relayed as the node sent it. */
  notification(method: string, subscription: string, result: string): string;
  /** A request the gateway makes to a node (`method` and `params` raw JSON). */
  request(id: string | number, method: string, params: string | undefined): string;
  /** The client's item under another id and params (raw JSON), its method and JSON-RPC version as sent. */
  item(call: JsonRpcCall, id: string | number | undefined, params: string | undefined): string;
}

function errorObject(code: number, message: string, data: unknown): string {
  const dataPart = data === undefined ? '' : `,"data":${JSON.stringify(data)}`;
  return `{"code":${code},"message":${JSON.stringify(message)}${dataPart}}`;
}

const V2_HEAD = '{"jsonrpc":"2.0",';

/**
 * The item's own "jsonrpc" member, to keep when the gateway rewrites it: a node
 * answers an item in the version it names (Bitcoin Core answers "2.0" items in 2.0
 * shape and legacy ones in 1.0 shape). Most 2.0 items open with it: no scan then.
 */
function versionPart(raw: string): string {
  if (raw.startsWith(V2_HEAD)) return '"jsonrpc":"2.0",';
  const v = memberRaw(raw, 'jsonrpc');
  return v === undefined ? '' : `"jsonrpc":${v},`;
}

/** The item's text with another id and params (raw JSON; undefined: none), its version and method as sent. */
export function rewrittenItem(call: JsonRpcCall, id: string | number | undefined, params: string | undefined): string {
  const method = memberRaw(call.raw, 'method') as string;
  const idPart = id === undefined ? '' : `"id":${id},`;
  const paramsPart = params === undefined ? '' : `,"params":${params}`;
  return `{${versionPart(call.raw)}${idPart}"method":${method}${paramsPart}}`;
}

export const JSONRPC_2: RpcWriter = Object.freeze({
  dialect: '2.0',
  result: (id: string | undefined, result: string) => `{"jsonrpc":"2.0","id":${id ?? 'null'},"result":${result}}`,
  error: (id: string | undefined, error: string) => `{"jsonrpc":"2.0","id":${id ?? 'null'},"error":${error}}`,
  failure: (id: string | undefined, code: number, message: string, data?: unknown) =>
    `{"jsonrpc":"2.0","id":${id ?? 'null'},"error":${errorObject(code, message, data)}}`,
  notification: (method: string, subscription: string, result: string) =>
    `{"jsonrpc":"2.0","method":${method},"params":{"subscription":${subscription},"result":${result}}}`,
  request: (id: string | number, method: string, params: string | undefined) =>
    params === undefined
      ? `{"jsonrpc":"2.0","id":${id},"method":${method}}`
      : `{"jsonrpc":"2.0","id":${id},"method":${method},"params":${params}}`,
  // The parser let only "2.0" items in.
  item(call: JsonRpcCall, id: string | number | undefined, params: string | undefined): string {
    const method = memberRaw(call.raw, 'method') as string;
    const idPart = id === undefined ? '' : `"id":${id},`;
    return params === undefined
      ? `{"jsonrpc":"2.0",${idPart}"method":${method}}`
      : `{"jsonrpc":"2.0",${idPart}"method":${method},"params":${params}}`;
  },
});

/**
 * JSON-RPC 1.0 as Bitcoin Core answers legacy requests: no "jsonrpc" member, both
 * "result" and "error" in every answer (one of them null), a notification under id null.
 */
export const JSONRPC_1: RpcWriter = Object.freeze({
  dialect: '1.0',
  result: (id: string | undefined, result: string) => `{"result":${result},"error":null,"id":${id ?? 'null'}}`,
  error: (id: string | undefined, error: string) => `{"result":null,"error":${error},"id":${id ?? 'null'}}`,
  failure: (id: string | undefined, code: number, message: string, data?: unknown) =>
    `{"result":null,"error":${errorObject(code, message, data)},"id":${id ?? 'null'}}`,
  notification: (method: string, subscription: string, result: string) =>
    `{"method":${method},"params":{"subscription":${subscription},"result":${result}},"id":null}`,
  request: (id: string | number, method: string, params: string | undefined) =>
    `{"method":${method},"params":${params ?? '[]'},"id":${id}}`,
  item: rewrittenItem,
});

/** The writer of a codec's dialect (absent: 2.0). */
export function rpcWriter(dialect: JsonRpcDialect | undefined): RpcWriter {
  return dialect === '1.0' ? JSONRPC_1 : JSONRPC_2;
}
