// The gateway's own answers, in the style of the endpoint: JSON-RPC error objects
// carrying the caller's raw id, or `{"error":{"code","message"}}` for REST. The code
// is the JSON-RPC code of the one error table, so clients learn one set of numbers.

import type { GatewayError } from '../errors.js';
import { rpcErrorText } from '../jsonrpc/envelope.js';
import type { ErrorStyle, RpcItem } from '../plugin.js';

export function restErrorText(err: GatewayError): string {
  return `{"error":{"code":${err.rpcCode},"message":${JSON.stringify(err.message)}}}`;
}

/** An error for a whole request: one object, or one error per item of a batch. */
export function requestErrorText(err: GatewayError, style: ErrorStyle, items: readonly RpcItem[] | undefined, batch: boolean): string {
  if (style === 'rest') return restErrorText(err);
  if (items === undefined || items.length === 0) return rpcErrorText(undefined, err.rpcCode, err.message);
  if (!batch) return rpcErrorText((items[0] as RpcItem).id, err.rpcCode, err.message);
  return `[${items.map((it) => rpcErrorText(it.id, err.rpcCode, err.message)).join(',')}]`;
}
