// The usual reading of a JSON-RPC node's answer to one call, and method-name
// splitting for plugins that classify by the name after the namespace. 429 backs
// off; 5xx and anything that is not a JSON object is the node failing; an error
// member is the chain's answer unless it says the node lacks the state (pruned).

import { isObjectText } from '../jsonrpc/raw-json.js';
import type { JsonRpcReply, Verdict } from '../plugin/contract.js';

/** -32005 with these words is a node's own rate limit (geth/erigon behind a limiter): back off. */
const RATE_LIMITED = /rate limit|rate exceeded|too many requests/i;
const METHOD_NOT_FOUND = -32601;

export function jsonRpcVerdict(reply: JsonRpcReply, pruned: RegExp): Verdict {
  const s = reply.status;
  if (s === 429) return 'throttled';
  if (s >= 500 || s < 200) return 'node_failure';
  if (!isObjectText(reply.text)) return 'node_failure';
  const err = reply.error;
  // A non-2xx answer without a JSON-RPC error is a proxy's or the node's failure. One
  // with an error object (Besu answers invalid params with 400) is the chain's answer:
  // calling it a node failure would let one client's bad call open every breaker.
  if (err === undefined) return s < 300 ? 'ok' : 'node_failure';
  if (err.code === -32005 && RATE_LIMITED.test(err.message)) return 'throttled';
  // geth: "the method x does not exist/is not available" is not about pruned state.
  if (err.code === METHOD_NOT_FOUND) return 'chain_error';
  return pruned.test(err.message) ? 'pruned' : 'chain_error';
}

/** Splits `eth_getBalance` into its namespace and name (empty namespace when none). */
export function splitMethod(method: string): [string, string] {
  const i = method.indexOf('_');
  return i < 0 ? ['', method] : [method.slice(0, i), method.slice(i + 1)];
}

/**
 * Every `<namespace>_<name>` of the given namespaces and names, each with what
 * `make` says about it: built once per chain, so a known method costs one map lookup.
 */
export function methodTable<T>(
  namespaces: Iterable<string>,
  names: Iterable<string>,
  make: (method: string, ns: string, name: string) => T,
): Map<string, T> {
  const table = new Map<string, T>();
  const list = [...names];
  for (const ns of namespaces) for (const name of list) table.set(`${ns}_${name}`, make(`${ns}_${name}`, ns, name));
  return table;
}
