// The gateway's own answers, in the style of the endpoint: a JSON-RPC error object
// (id null: a refusal of the whole request never reads the body for ids), or
// `{"error":{"code","message"}}` for REST. The code is the JSON-RPC code of the one
// error table, so clients learn one set of numbers.

import type { GatewayError } from '../../errors.js';
import { rpcErrorText } from '../../jsonrpc/envelope.js';
import type { ErrorStyle } from '../../plugin/contract.js';

export function restErrorText(err: GatewayError): string {
  return `{"error":{"code":${err.rpcCode},"message":${JSON.stringify(err.message)}}}`;
}

/** One error object for a whole request, in the endpoint's style. */
export function errorText(err: GatewayError, style: ErrorStyle): string {
  return style === 'rest' ? restErrorText(err) : rpcErrorText(undefined, err.rpcCode, err.message);
}
