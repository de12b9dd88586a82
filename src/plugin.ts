// The chain-plugin contract. A plugin knows one chain family's protocol; the core
// knows none. Built-in plugins (plugins/<family>/) and plugins installed from npm
// export the same shape, usually through `definePlugin`.
// This module holds types only, plus the identity helper; the loader is plugin-loader.ts.

import type { IncomingHttpHeaders } from 'node:http';

export type NodeRole = 'full' | 'archive';

/** How an endpoint answers errors: JSON-RPC error objects, or `{"error":{code,message}}`. */
export type ErrorStyle = 'jsonrpc' | 'rest';

/** One HTTP request as the core hands it to a plugin, the API key already removed. */
export interface InboundRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** Path below the endpoint's prefix, normalised, always starting with '/'. */
  readonly path: string;
  /** Raw query string without the leading '?' and without any apikey parameter ('' when none). */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  /** Request body; empty for GET. */
  readonly body: Buffer;
}

/** One unit of work: a JSON-RPC item, or one passthrough HTTP request. */
export interface Call {
  /** JSON-RPC method name, or for passthrough calls the path (used for permissions and labels). */
  readonly method: string;
  /** Parsed JSON-RPC params (undefined when absent, and for passthrough calls). */
  readonly params: unknown;
  /** Raw JSON text of the JSON-RPC id exactly as sent; undefined for notifications and passthrough. */
  readonly id: string | undefined;
  /** Raw JSON text of the whole JSON-RPC item, so it can be relayed without re-serialising. */
  readonly raw: string;
}

/** A JSON-RPC item that the core refused before any routing (invalid envelope). */
export interface InvalidItem {
  readonly invalid: true;
  /** Raw id when one could be read, else undefined (answered with null). */
  readonly id: string | undefined;
  readonly message: string;
}

export type RpcItem = Call | InvalidItem;

export function isInvalid(item: RpcItem): item is InvalidItem {
  return (item as InvalidItem).invalid === true;
}

/** What a plugin makes of a request. */
export type ParsedRequest =
  /** JSON-RPC body: single object or batch; each item is routed on its own. */
  | { readonly kind: 'jsonrpc'; readonly batch: boolean; readonly items: readonly RpcItem[] }
  /** One request passed through to a node as is (REST GET, Tendermint URI form). */
  | { readonly kind: 'passthrough'; readonly call: Call; readonly upstream: UpstreamRequest }
  /** The endpoint does not serve this shape (wrong HTTP method, unknown path style). */
  | { readonly kind: 'unsupported'; readonly status: 404 | 405; readonly message: string };

/** What is sent to a node for a passthrough call (JSON-RPC bodies are POSTed by the core). */
export interface UpstreamRequest {
  readonly method: 'GET' | 'POST';
  /** Path and query to append to the node's base URL, starting with '/'. */
  readonly path: string;
  /** Extra headers to forward (lower-case names), e.g. x-cosmos-block-height. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

/** What the pool knows about the chain right now, for classification. */
export interface PoolView {
  /** Best head height among healthy nodes, or undefined before the first probe. */
  readonly head: number | undefined;
  /** Lowest earliest-retained height among full nodes that report one. */
  readonly fullEarliest: number | undefined;
}

/** How a call is routed. */
export interface Routing {
  /** The call reads state only an archive node holds (permission-gated). */
  readonly archive: boolean;
  /** When set, only nodes known to retain this height may answer (SDK chains report it). */
  readonly minHeight?: number;
  /** Units charged against the caller's rate limit and quotas (1 for an ordinary call). */
  readonly cost: number;
  /** A bounded label for metrics: a known method name or "other". */
  readonly label: string;
  /**
   * When set, a good answer may be kept this long and given to identical calls
   * (Infinity: as long as the cache keeps it). Plugins never set it for pending
   * state, writes, or answers that may still change.
   */
  readonly cacheTtlMs?: number;
  /** The block height a cached answer depends on, so a reorg there can evict it. */
  readonly cacheHeight?: number;
}

/** The chain's own error object of a JSON-RPC answer. */
export interface RpcErrorInfo {
  readonly code: number;
  readonly message: string;
}

/** A node's answer to one call: for JSON-RPC items, one item of the reply. */
export interface NodeReply {
  readonly status: number;
  /** Text of the answer (for a JSON-RPC item, that item's raw JSON). */
  readonly text: string;
  /** For JSON-RPC items: the error member when the answer carries one. */
  readonly error?: RpcErrorInfo;
}

/**
 * How the core treats a node's answer:
 * - ok / chain-error: relay to the client (a chain error is an answer, not a failure);
 * - pruned: the node lacks the state, try an archive node;
 * - node-failure: counts against the node's breaker, try another node;
 * - throttled: the node said 429; back off from it without opening its breaker.
 */
export type Verdict = 'ok' | 'chain-error' | 'pruned' | 'node-failure' | 'throttled';

/** The result of probing one node. */
export interface NodeHead {
  readonly height: number;
  /** Lowest height the node still serves, when the protocol tells it. */
  readonly earliest?: number;
  /** Hash of the head block, when cheap to know (reorg detection). */
  readonly hash?: string;
}

/** Minimal HTTP client to one node, given to probes. */
export interface NodeClient {
  readonly name: string;
  readonly role: NodeRole;
  request(req: UpstreamRequest, timeoutMs: number): Promise<{ status: number; text: string }>;
  /**
   * gRPC plugins: one unary gRPC call to the node over cleartext HTTP/2. `message` is
   * the encoded request message (without the 5-byte gRPC prefix), `metadata` extra
   * lower-case headers. Resolves with the call's status (0 = OK), its message and the
   * first response message ('' and an empty Buffer when absent); rejects on connection
   * failure, timeout or an answer that is not gRPC.
   */
  grpcUnary(path: string, message: Buffer, metadata: Readonly<Record<string, string>>, timeoutMs: number): Promise<GrpcUnaryReply>;
}

// ---- gRPC (plugins whose `transport` is 'grpc') ----------------------------------

/** One gRPC call as the core hands it to a gRPC plugin, the `apikey` metadata already removed. */
export interface InboundGrpcCall {
  /** The call's path, `/package.Service/Method`, as sent (checked for that shape by the core). */
  readonly path: string;
  /** Request headers as received: custom metadata (lower-case names), `grpc-*` and pseudo-headers. */
  readonly metadata: IncomingHttpHeaders;
  /** The request message without its 5-byte prefix; undefined when the client compressed it. */
  readonly message: Buffer | undefined;
}

/** The status a node ended a gRPC call with (from trailers, or a trailers-only answer). */
export interface GrpcStatusReply {
  /** gRPC status code: 0 OK, 5 NOT_FOUND, 14 UNAVAILABLE … */
  readonly code: number;
  /** The status message, percent-decoded ('' when absent). */
  readonly message: string;
}

/** What `NodeClient.grpcUnary` resolves with. */
export interface GrpcUnaryReply extends GrpcStatusReply {
  /** The first response message, without its prefix (empty when the call failed). */
  readonly data: Buffer;
}

/**
 * WebSocket support of a JSON-RPC family. Calls over a socket are routed like HTTP
 * calls (parse, classify, judge as usual); the methods named here open and close
 * subscriptions, which the core relays from a node's own socket in the JSON-RPC
 * pub/sub convention geth and Sui share:
 * `{"method":…,"params":{"subscription":<id>,"result":…}}`.
 */
export interface WebSocketSupport {
  /** Subscribe method → its unsubscribe method (`eth_subscribe` → `eth_unsubscribe`). */
  readonly subscriptions: Readonly<Record<string, string>>;
}

/** A harmless request that shows an endpoint answering: the account dashboard prints it as a curl line. */
export interface SampleRequest {
  readonly method: 'GET' | 'POST';
  /** Below the endpoint's URL, starting with '/'. */
  readonly path: string;
  /** JSON text for POST. */
  readonly body?: string;
}

/** A chain endpoint's instance of a plugin. */
export interface ChainHandler {
  readonly errorStyle: ErrorStyle;
  /** Present when the endpoint serves WebSocket clients (JSON-RPC families). */
  readonly websocket?: WebSocketSupport;
  /** Optional: without one the dashboard shows the endpoint's URL with the key header only. */
  readonly sample?: SampleRequest;
  /**
   * Ids a node may answer with instead of the caller's (CometBFT answers abci_info
   * with -1). Any other id in a single answer marks the answer as not this call's.
   */
  readonly fixedReplyIds?: readonly string[];
  /** Turn an inbound HTTP request into calls; throws GatewayError (PARSE_ERROR, INVALID_REQUEST) on bad input. */
  parse(req: InboundRequest): ParsedRequest;
  classify(call: Call, view: PoolView): Routing;
  judge(call: Call, reply: NodeReply): Verdict;
  /** Read the node's head; throws on failure. */
  probe(node: NodeClient, timeoutMs: number): Promise<NodeHead>;
  /**
   * gRPC plugins: the call as a Call (`method` is the gRPC path, used for permissions;
   * plugins add what routing needs, e.g. a height from metadata). Throws GatewayError
   * (INVALID_REQUEST, answered INVALID_ARGUMENT) on bad metadata. Required when the
   * plugin's transport is 'grpc'; `parse`, `judge` and `errorStyle` are then never used.
   */
  parseGrpc?(call: InboundGrpcCall): Call;
  /**
   * gRPC plugins: the verdict on a status a node answered before anything was relayed
   * (a trailers-only answer or a message-less one) and on the final status of a relayed
   * call (for metrics). 'pruned' and 'node-failure' move the call to another node while
   * nothing has reached the client. The core itself blames the node for transport
   * failures (refused, reset, timeout, an HTTP status other than 200, no grpc-status).
   */
  judgeGrpc?(call: Call, reply: GrpcStatusReply): Verdict;
}

/** Request limits from config that JSON-RPC parsing applies (see src/jsonrpc/envelope.ts). */
export interface JsonLimits {
  readonly maxDepth: number;
  readonly maxMethodLength: number;
}

export interface PluginContext {
  /** The chain endpoint's name from config. */
  readonly chain: string;
  /** Pass to parseJsonRpcBody. */
  readonly limits: JsonLimits;
  /** The plugin's own options block from config, validated by `validateOptions`. */
  readonly options: Readonly<Record<string, unknown>>;
}

export interface ChainPlugin {
  readonly name: string;
  /**
   * Which listener serves this plugin's chain endpoints: 'http' (the default: JSON-RPC
   * and REST on the traffic listener) or 'grpc' (gRPC calls on the gRPC listener,
   * routed by `:authority` to `route.host`; the handler implements parseGrpc/judgeGrpc).
   */
  readonly transport?: 'http' | 'grpc';
  /**
   * Check the `options` block of a chain using this plugin. Returns problems as
   * `[pathBelowOptions, message]` pairs; an empty list means valid.
   */
  validateOptions?(options: Readonly<Record<string, unknown>>): Array<[string, string]>;
  create(ctx: PluginContext): ChainHandler;
}

/** Identity helper so a plugin module gets the contract's type inference. */
export function definePlugin<P extends ChainPlugin>(plugin: P): P {
  return plugin;
}
