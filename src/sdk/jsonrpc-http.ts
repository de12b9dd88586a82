// The HTTP side of a JSON-RPC endpoint served at its root, as EVM and object-model
// nodes are: a POST of a JSON-RPC body at `/`; other methods get 405, other paths 404.

import type { HttpCodec, JsonRpcCodec } from '../plugin/contract.js';

/** An HTTP codec that reads POSTs at the endpoint root with the family's JSON-RPC codec. */
export function jsonRpcAtRoot<M>(jsonrpc: JsonRpcCodec<M>): HttpCodec<M, 'jsonrpc'> {
  return {
    errorStyle: 'jsonrpc',
    parse(req) {
      if (req.method !== 'POST') return { kind: 'unsupported', status: 405, message: 'JSON-RPC endpoints take POST' };
      if (req.path !== '/') return { kind: 'unsupported', status: 404, message: 'JSON-RPC is served at the endpoint root' };
      return jsonrpc.parse(req.body.toString('utf8'));
    },
  };
}
