// Small builders shared by the plugin unit tests: a handler from a plugin and its
// options, inbound requests, calls, and a fake NodeClient that records what it was asked.

import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import type { Call, ChainHandler, ChainPlugin, InboundRequest, NodeClient, ParsedRequest, UpstreamRequest } from '../../../src/plugin.js';

export const handler = (p: ChainPlugin, options: Record<string, unknown> = {}): ChainHandler =>
  p.create({ chain: 'c', options, limits: DEFAULT_JSONRPC_LIMITS });

/** A JSON-RPC item as the envelope parser makes it (raw text is never empty). */
export const call = (method: string, params?: unknown): Call => ({ method, params, id: '1', raw: JSON.stringify({ method, params }) });

export const inbound = (over: Partial<InboundRequest>): InboundRequest => ({
  method: 'GET',
  path: '/',
  query: '',
  headers: {},
  body: Buffer.alloc(0),
  ...over,
});

export const post = (body: string, path = '/'): InboundRequest => inbound({ method: 'POST', path, body: Buffer.from(body) });

export function passthrough(parsed: ParsedRequest): Extract<ParsedRequest, { kind: 'passthrough' }> {
  if (parsed.kind !== 'passthrough') throw new Error(`expected a passthrough, got ${parsed.kind}`);
  return parsed;
}

export function jsonrpc(parsed: ParsedRequest): Extract<ParsedRequest, { kind: 'jsonrpc' }> {
  if (parsed.kind !== 'jsonrpc') throw new Error(`expected jsonrpc, got ${parsed.kind}`);
  return parsed;
}

/** A node that answers every request with `status` and `text`, remembering the requests. */
export function fakeNode(status: number, text: string): NodeClient & { seen: UpstreamRequest[] } {
  const seen: UpstreamRequest[] = [];
  return {
    name: 'n1',
    role: 'full',
    seen,
    request: async (req) => {
      seen.push(req);
      return { status, text };
    },
    grpcUnary: () => Promise.reject(new Error('not a gRPC node')),
  };
}

/** The error a promise rejects with (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

/** The error a function throws (fails the test when it returns). */
export function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}
