// The usual reading of a JSON-RPC node's answer to one call: 429 backs off, 5xx and
// anything that is not a JSON object is the node failing, an error member is the
// chain's answer unless it says the node lacks the state (pruned).

import { isObjectText } from '../../src/jsonrpc/raw-json.js';
import type { NodeReply, Verdict } from '../../src/plugin.js';

const LIMIT = /limit/i;

export function jsonRpcVerdict(reply: NodeReply, pruned: RegExp): Verdict {
  if (reply.status === 429) return 'throttled';
  if (reply.status >= 500 || reply.status < 200) return 'node-failure';
  if (!isObjectText(reply.text)) return 'node-failure';
  const err = reply.error;
  if (err === undefined) return reply.status < 300 ? 'ok' : 'node-failure';
  // -32005 from a node is its own rate limit (geth, erigon): back off, do not blame.
  if (err.code === -32005 && LIMIT.test(err.message)) return 'throttled';
  return pruned.test(err.message) ? 'pruned' : 'chain-error';
}

/** Splits `eth_getBalance` into its namespace and name (empty namespace when none). */
export function splitMethod(method: string): [string, string] {
  const i = method.indexOf('_');
  return i < 0 ? ['', method] : [method.slice(0, i), method.slice(i + 1)];
}
