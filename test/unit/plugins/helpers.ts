// Small builders shared by the plugin unit tests: a handler from a plugin and its
// options (with its codecs reachable the way the core reaches them), inbound requests,
// calls made by the plugin's own JSON-RPC codec, and a fake node that records what it
// was asked.

import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import type {
  Call,
  ChainHandler,
  ChainPlugin,
  GrpcCall,
  GrpcReply,
  GrpcUnaryReply,
  InboundGrpcCall,
  InboundRequest,
  JsonRpcCall,
  NodeClient,
  ParsedRequest,
  PoolView,
  Routing,
  RpcErrorInfo,
  UpstreamRequest,
  Verdict,
} from '../../../src/plugin/contract.js';
export { rejection } from '../../support/rejection.js';

/** A plugin's handler as the tests drive it: its codecs' parse and judge by call kind. */
export interface TestHandler {
  readonly raw: ChainHandler;
  parse(req: InboundRequest): ParsedRequest;
  classify(call: Call, view: PoolView): Routing;
  /** The codec's judge for the call's kind (JSON-RPC items get their error member read, as the core does). */
  judge(call: Call, reply: { status: number; text: string; error?: RpcErrorInfo }): Verdict;
  parseGrpc(call: InboundGrpcCall): GrpcCall;
  judgeGrpc(call: GrpcCall, reply: Omit<GrpcReply, 'kind'>): Verdict;
  probe: ChainHandler['probe'];
}

function need<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`the plugin has no ${what} codec`);
  return v;
}

export const handler = (p: ChainPlugin, options: Record<string, unknown> = {}): TestHandler => {
  const h = p.create({ chain: 'c', options, limits: DEFAULT_JSONRPC_LIMITS });
  /** A call as the plugin's own codec makes it (its meta included). */
  const own = (c: Call): Call => {
    if (c.kind !== 'jsonrpc' || h.jsonrpc === undefined) return c;
    const item = h.jsonrpc.parse(c.raw).items[0];
    return item?.kind === 'jsonrpc' ? item : c;
  };
  return {
    raw: h,
    parse: (req) => need(h.http, 'http').parse(req),
    classify: (c, view) => h.classify(own(c), view),
    judge: (c, reply) => {
      if (c.kind === 'jsonrpc')
        return need(h.jsonrpc, 'jsonrpc').judge(own(c) as JsonRpcCall, { kind: 'jsonrpc', error: undefined, ...reply });
      if (c.kind === 'passthrough')
        return need(h.passthrough, 'passthrough').judge(c, { kind: 'passthrough', status: reply.status, text: reply.text });
      throw new Error('judge gRPC calls with judgeGrpc');
    },
    parseGrpc: (c) => need(h.grpc, 'grpc').parse(c),
    judgeGrpc: (c, reply) => need(h.grpc, 'grpc').judge(c, { kind: 'grpc', ...reply }),
    probe: (node, timeoutMs) => h.probe(node, timeoutMs),
  };
};

/** A JSON-RPC item as a client would send it; the test handler reads it through the plugin's codec. */
export const call = (method: string, params?: unknown): JsonRpcCall => {
  const raw = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  return { kind: 'jsonrpc', method, params, id: '1', raw, meta: undefined };
};

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

/** A node that answers every HTTP request with `status` and `text`, remembering the requests. */
export function fakeNode(
  status: number,
  text: string,
  unary: NodeClient['grpc']['unary'] = () => Promise.reject(new Error('not a gRPC node')),
): NodeClient & { seen: UpstreamRequest[] } {
  const seen: UpstreamRequest[] = [];
  return {
    name: 'n1',
    role: 'full',
    seen,
    http: {
      request: async (req) => {
        seen.push(req);
        return { status, text };
      },
    },
    grpc: { unary: (path, message, metadata, timeoutMs): Promise<GrpcUnaryReply> => unary(path, message, metadata, timeoutMs) },
  };
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
