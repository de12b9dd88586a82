// One JSON-RPC call to a node outside the call path, for a plugin's probe or describe:
// the node's result or its error object; throws when the node answers no JSON-RPC at all.

import type { NodeClient, RpcErrorInfo } from '../plugin/contract.js';

export type NodeRpcAnswer = { readonly result: unknown } | { readonly error: RpcErrorInfo };

export async function nodeRpc(node: NodeClient, method: string, params: unknown[], timeoutMs: number): Promise<NodeRpcAnswer> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const res = await node.http.request({ method: 'POST', path: '/', body }, timeoutMs);
  let v: unknown;
  try {
    v = JSON.parse(res.text);
  } catch {
    throw new Error(`${method} answered HTTP ${res.status} without JSON`);
  }
  const a = v as { result?: unknown; error?: { code?: unknown; message?: unknown } } | null;
  if (a !== null && typeof a === 'object' && typeof a.error === 'object' && a.error !== null) {
    return { error: { code: Number(a.error.code), message: String(a.error.message ?? '') } };
  }
  if (a !== null && typeof a === 'object' && 'result' in a && res.status >= 200 && res.status < 300) return { result: a.result };
  throw new Error(`${method} answered HTTP ${res.status} with no JSON-RPC answer`);
}
