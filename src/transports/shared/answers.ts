// The gateway's own answers, in the style of the endpoint: a JSON-RPC error object in
// the endpoint's dialect (id null: a refusal of the whole request never reads the body
// for ids), or `{"error":{"code","message"}}` for REST. The code is the JSON-RPC code of
// the one error table, so clients learn one set of numbers.

import type { GatewayError } from '../../errors.js';
import type { RpcWriter } from '../../jsonrpc/dialect.js';
import type { ErrorStyle } from '../../plugin/contract.js';

export function restErrorText(err: GatewayError): string {
  return `{"error":{"code":${err.rpcCode},"message":${JSON.stringify(err.message)}}}`;
}

/** One error object for a whole request, in the endpoint's style (`rpc`: its JSON-RPC dialect). */
export function errorText(err: GatewayError, style: ErrorStyle, rpc: RpcWriter): string {
  return style === 'rest' ? restErrorText(err) : rpc.failure(undefined, err.rpcCode, err.message);
}
