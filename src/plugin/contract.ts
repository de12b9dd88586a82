// The chain-plugin contract. A plugin knows one chain family's protocol; the core
// knows none. A plugin's handler turns wire requests into typed calls (its codecs, one
// per wire format it serves), says how each call is routed as data (classify), reads
// what a node answered (each codec's judge) and probes a node's head. Built-in and
// third-party plugins import this through the public SDK (`noderouter/plugin`).
// Types only, plus the identity helper `definePlugin`.

import type { IncomingHttpHeaders } from 'node:http';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Verdict } from '../exec/outcome.js';

export type NodeRole = 'full' | 'archive';

/** How an HTTP endpoint answers errors: JSON-RPC error objects, or `{"error":{code,message}}`. */
export type ErrorStyle = 'jsonrpc' | 'rest';

// ---- calls: what a codec makes of a request -----------------------------------------

/** One JSON-RPC item (over HTTP POST or a WebSocket message). */
export interface JsonRpcCall<M = unknown> {
  readonly kind: 'jsonrpc';
  readonly method: string;
  /** Parsed params (undefined when absent). */
  readonly params: unknown;
  /** Raw JSON text of the id exactly as sent; undefined for notifications. */
  readonly id: string | undefined;
  /** Raw JSON text of the whole item: relayed to a node as it is, never re-serialised. */
  readonly raw: string;
  /** What the plugin read at parse time for classify and judge. */
  readonly meta: M;
}

/** One HTTP request passed through to a node as it is (REST, the CometBFT URI form). */
export interface PassthroughCall<M = unknown> {
  readonly kind: 'passthrough';
  /** The name permissions match and costs resolve against: the path, or the method of a URI call. */
  readonly method: string;
  readonly request: UpstreamRequest;
  readonly meta: M;
}

/** One gRPC call; its message and metadata travel with the transport, unread by the core. */
export interface GrpcCall<M = unknown> {
  readonly kind: 'grpc';
  /** `/package.Service/Method`. */
  readonly method: string;
  readonly meta: M;
}

export type Call<M = unknown> = JsonRpcCall<M> | PassthroughCall<M> | GrpcCall<M>;

/** A JSON-RPC item the parser refused before any routing (invalid envelope). */
export interface InvalidItem {
  readonly kind: 'invalid';
  /** Raw id when one could be read, else undefined (answered with null). */
  readonly id: string | undefined;
  readonly message: string;
}

export type RpcItem<M = unknown> = JsonRpcCall<M> | InvalidItem;

/** A JSON-RPC body: one object or a batch; each item is routed on its own. */
export interface JsonRpcRequest<M = unknown> {
  readonly kind: 'jsonrpc';
  readonly batch: boolean;
  readonly items: readonly RpcItem<M>[];
}

/** What an HTTP codec makes of a request. */
/** The kinds of call an HTTP codec may turn requests into; each needs its codec on the handler. */
export type HttpCallKind = 'jsonrpc' | 'passthrough';

/** What an HTTP codec makes of a request; `K`: the kinds of call it makes. */
export type ParsedRequest<M = unknown, K extends HttpCallKind = HttpCallKind> =
  | ParsedCalls<M>[K]
  /** The endpoint does not serve this shape (wrong HTTP method, unknown path style). */
  | { readonly kind: 'unsupported'; readonly status: 404 | 405; readonly message: string };

/** A request read as calls, by the kind of call. */
export interface ParsedCalls<M = unknown> {
  readonly jsonrpc: JsonRpcRequest<M>;
  readonly passthrough: { readonly kind: 'passthrough'; readonly call: PassthroughCall<M> };
}

/** What is sent to a node for a passthrough call, below the node's base URL. */
export interface UpstreamRequest {
  readonly method: 'GET' | 'POST';
  /** Path and query below the node's base path, starting with '/'. */
  readonly path: string;
  /** Headers to send (lower-case names), e.g. a height header the plugin read. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

// ---- replies: what a node answered, as judges read it -----------------------------------

/** The chain's own error object of a JSON-RPC answer. */
export interface RpcErrorInfo {
  readonly code: number;
  readonly message: string;
}

/** A node's answer to one JSON-RPC item. */
export interface JsonRpcReply {
  readonly kind: 'jsonrpc';
  readonly status: number;
  /** The item's raw JSON text. */
  readonly text: string;
  /** The error member, when the answer carries one. */
  readonly error: RpcErrorInfo | undefined;
}

/** A node's answer to a passthrough request. */
export interface PassthroughReply {
  readonly kind: 'passthrough';
  readonly status: number;
  readonly text: string;
}

/** The status a node ended a gRPC call with (from trailers, or a trailers-only answer). */
export interface GrpcReply {
  readonly kind: 'grpc';
  /** gRPC status code: 0 OK, 5 NOT_FOUND, 14 UNAVAILABLE … */
  readonly code: number;
  /** The status message, percent-decoded ('' when absent). */
  readonly message: string;
}

export type Reply = JsonRpcReply | PassthroughReply | GrpcReply;

/** How the core treats a node's answer: src/exec/outcome.ts. */
export type { Verdict };

/**
 * What checking a good answer against itself showed (a codec's `check`): `verified`, the
 * answer proves itself (an EVM block's hash recomputed from its header); `mismatch`, it
 * does not, so the node lies or is broken; `unchecked`, nothing here to check (another
 * method, an empty result).
 */
export type AnswerCheck = 'verified' | 'mismatch' | 'unchecked';

/**
 * What a chain does with answer checks (`chains.<name>.verify`): none made (`off`),
 * mismatches counted and relayed (`observe`), or refused as the node failing and the
 * call tried on another node (`enforce`).
 */
export type VerifyMode = 'off' | 'observe' | 'enforce';

// ---- routing: policies as data ------------------------------------------------------------

/** What the pool knows about the chain right now, for classification. */
export interface PoolView {
  /** Best head height among healthy nodes, or undefined before the first probe. */
  readonly head: number | undefined;
  /** Lowest earliest-retained height among full nodes that report one. */
  readonly fullEarliest: number | undefined;
}

/** How a call is routed and what the core may do with it. */
export interface Routing {
  /** The call reads state only an archive node holds (permission-gated). */
  readonly archive: boolean;
  /** When set, only nodes known to retain this height may answer (SDK chains report it). */
  readonly minHeight?: number;
  /**
   * Full nodes hold everything this call reads: the latest state, a height within the
   * history they keep, or nothing of the chain's past (a chain id, a submit). An archive
   * node's answer to it is then no archive state, so an archive node may take it for a
   * key without archive access when no full node can. Left out, the call may read state
   * only archive nodes still hold (a block hash cannot be placed by height): for such a
   * key it goes to full nodes only, and an archive node's answer is never cached.
   */
  readonly fullHolds?: boolean;
  /** Units charged against the caller's rate limit and quotas (1 for an ordinary call). */
  readonly cost: number;
  /** A bounded label for metrics: a known method name or "other". */
  readonly label: string;
  /**
   * When set, a good answer may be kept this long and given to identical calls
   * (Infinity: as long as the cache keeps it). Never set for pending state, writes, or
   * answers that may still change.
   */
  readonly cacheTtlMs?: number;
  /** The block height a cached answer depends on, so a reorg there can evict it. */
  readonly cacheHeight?: number;
  /**
   * Request headers (lower-case) that change the answer of a passthrough call besides
   * its method and path, so they are part of its cache key (the key header never is).
   */
  readonly cacheVary?: readonly string[];
  /**
   * 'safe' (the default): a failed attempt may be tried on another node. 'never': once
   * the call may have reached a node it is not sent again (submits), so a client never
   * gets an answer other than the one of the node that accepted it.
   */
  readonly retry?: 'safe' | 'never';
  /**
   * When set, the endpoint does not serve this call and answers it with this message
   * (the error table's "method not found") without reaching a node: node
   * administration methods that operators have not opened, for instance.
   */
  readonly refuse?: string;
  /** Like `refuse`, for params the endpoint will not take (-32602 "invalid params"), e.g. a getLogs range over the limit. */
  readonly invalid?: string;
  /**
   * The call reads the chain's latest state: the core sends it only to nodes that have
   * reached the head it serves, so no client sees the chain go back, and pins it to that
   * height when some node is already ahead.
   */
  readonly latest?: LatestPolicy;
  /** A read that may go to a second node when the first is slow to answer; the first answer wins. */
  readonly hedge?: boolean;
  /** JSON-RPC: the call creates state on the node that answers it (a filter), or uses such state by its id. */
  readonly state?: StatePolicy;
  /** A submit (a transaction): sent once to every full node at once (or one, per chain config); never retried. */
  readonly broadcast?: boolean;
  /** Prefer the nodes that accepted the submit with this id (a transaction hash): reads of it right after. */
  readonly after?: string;
  /** JSON-RPC: the call is over what one node answers at once: split by the codec's `split` to fit, its parts' answers joined. */
  readonly split?: boolean;
  /**
   * The call is directed at contracts: keys restricted to some contracts may make it
   * only when every address it names is theirs. Read only for such keys.
   */
  readonly targets?: TargetReader;
}

/** The contract addresses a call targets, read from the call on demand (no work for keys without a contracts list). */
export interface TargetReader {
  /**
   * Addresses as the chain writes them (hex ones in lower case). An empty list: the
   * call names none and may reach any contract (a getLogs without `address`, a call
   * with state overrides), so a contracts-restricted key may not make it. Undefined:
   * this call targets no contract after all (a subscription to new heads).
   */
  of(call: Call): readonly string[] | undefined;
}

/** How a call at the chain's latest state is kept on one head. */
export interface LatestPolicy {
  /** The same call reading exactly `height` (EVM: `latest` → "0x…"), of the same kind; absent when the call cannot name one. */
  pin?<C extends Call>(call: C, height: number): C;
  /** For reads of the head itself: the height an answer gives, and the answer giving another. */
  readonly head?: HeadReader;
}

export interface HeadReader {
  height(answer: string): number | undefined;
  withHeight(answer: string, height: number): string;
}

/**
 * Node state named by an id the node made (EVM filters). The client gets an id of the
 * gateway's (never the node's, so one key cannot use another's), mapped to the node.
 */
export type StatePolicy =
  /** The answer's `result` is the id of state made on the node that answered. */
  | { readonly role: 'create' }
  /** The call uses state by the id in its first param; `release`: the state is gone after it. */
  | { readonly role: 'use'; readonly id: string; readonly release?: boolean };

/** A call made as parts: what to send instead, and how the parts' answers make its answer. */
export interface SplitPolicy {
  /** The calls to make instead, in order (each under the call's own id). */
  readonly calls: readonly JsonRpcCall[];
  /** One answer from the parts' good answers (each an item's raw text, in order), under the call's id. */
  join(answers: readonly string[]): string;
  /**
   * The message for a call stopped at its node-call budget before its parts were all
   * answered: how the client should cut it (getLogs: "range too large: split it into
   * ranges of N blocks"). `refused`: the node's answer refusing the call these parts
   * come from as too big, when one did (its limit may be in it).
   */
  tooLarge?(refused: string | undefined): string;
}

// ---- nodes ----------------------------------------------------------------------------

/** The result of probing one node. */
export interface NodeHead {
  readonly height: number;
  /** Lowest height the node still serves, when the protocol tells it. */
  readonly earliest?: number;
  /** Hash of the head block, when cheap to know (reorg detection). */
  readonly hash?: string;
  /** How the head block the probe read checked out, when the chain verifies answers and the probe can tell. */
  readonly check?: AnswerCheck;
}

/**
 * What a node says it serves (`ChainHandler.describe`). Every part is optional: what the
 * family's protocol tells, and what the node answered.
 */
export interface NodeDescription {
  /**
   * The chain the node is on, in the family's own terms: an EVM chain id in decimal
   * ("1"), an SDK chain's network id ("cosmoshub-4"), objectx's chain identifier.
   */
  readonly chainId?: string;
  /** Its software and version (EVM web3_clientVersion, an SDK app's name and version). */
  readonly client?: string;
  /** The oldest height it still holds state for. */
  readonly earliest?: number;
  /** What the state it holds shows: archive (from the chain's first blocks) or full (pruned). */
  readonly role?: NodeRole;
  /** Optional namespaces that answer (EVM: debug, trace). */
  readonly namespaces?: readonly string[];
}

/** An HTTP client to one node, given to probes. */
export interface HttpNodeClient {
  request(req: UpstreamRequest, timeoutMs: number): Promise<{ status: number; text: string }>;
}

/** What `GrpcNodeClient.unary` resolves with. */
export interface GrpcUnaryReply {
  readonly code: number;
  readonly message: string;
  /** The first response message, without its prefix (empty when the call failed). */
  readonly data: Buffer;
}

/** A gRPC client to one node (cleartext HTTP/2), given to probes of gRPC plugins. */
export interface GrpcNodeClient {
  /**
   * One unary call: `message` is the encoded request (without the 5-byte prefix),
   * `metadata` extra lower-case headers. Rejects on connection failure, timeout or an
   * answer that is not gRPC.
   */
  unary(path: string, message: Buffer, metadata: Readonly<Record<string, string>>, timeoutMs: number): Promise<GrpcUnaryReply>;
}

/** One node as a probe sees it; each client is made on first use. */
export interface NodeClient {
  readonly name: string;
  readonly role: NodeRole;
  readonly http: HttpNodeClient;
  readonly grpc: GrpcNodeClient;
}

// ---- codecs: one per wire format a chain endpoint serves ----------------------------------

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

/**
 * How a family frames JSON-RPC. '2.0': `"jsonrpc":"2.0"` in every request and answer.
 * '1.0' as Bitcoin Core speaks it: requests `{"method","params","id"}` with "jsonrpc"
 * absent or "1.0" (or "2.0", as Bitcoin Core takes it), every answer
 * `{"result","error","id"}` with one of them null.
 */
export type JsonRpcDialect = '2.0' | '1.0';

/** JSON-RPC, over HTTP POST and WebSocket messages. */
export interface JsonRpcCodec<M> {
  /**
   * The dialect the family's clients and nodes speak (absent: '2.0'). Every answer the
   * gateway writes itself on the endpoint (its errors, cache hits, shared answers,
   * subscription answers) is in it; `parse` should read in it too (parseJsonRpcBody's
   * `dialect` option). Nodes' answers are relayed as they came.
   */
  readonly dialect?: JsonRpcDialect;
  /** Read a JSON-RPC body; throws GatewayError (PARSE_ERROR, INVALID_REQUEST) for a body that is no request at all. */
  parse(text: string): JsonRpcRequest<M>;
  judge(call: JsonRpcCall<M>, reply: JsonRpcReply): Verdict;
  /**
   * Ids a node may answer with instead of the caller's (CometBFT answers abci_info
   * with -1). Any other id in a single answer marks the answer as not this call's.
   */
  readonly fixedReplyIds?: readonly string[];
  /** Present when the family has JSON-RPC pub/sub: the endpoint then serves WebSocket clients. */
  readonly subscriptions?: SubscriptionCodec;
  /** Node state named by ids the node makes (EVM filters): how the family names and forgets it; absent: the family keeps none. */
  readonly state?: StateConvention;
  /** A submit's answer that means the node has it already ("already known"): counted as accepted. */
  alreadyAccepted?(reply: JsonRpcReply): boolean;
  /**
   * Check a good answer against itself, on chains that verify answers (never called when
   * `verify` is off, nor for answers judged other than `ok`). The core counts what it
   * shows and, under `enforce`, refuses a mismatch as the node failing.
   */
  check?(call: JsonRpcCall<M>, reply: JsonRpcReply): AnswerCheck;
  /**
   * A call as parts: 'fit' cuts it into parts each within the family's limit (a getLogs
   * range over getLogsMaxRange), 'halves' in two (after a node answered it as oversize);
   * undefined when it cannot be cut.
   */
  split?(call: JsonRpcCall<M>, how: 'fit' | 'halves', view: PoolView): SplitPolicy | undefined;
}

/** JSON-RPC pub/sub in the convention geth and Sui share: `{"method":…,"params":{"subscription":<id>,"result":…}}`. */
/** How a family's nodes name and forget state (routings say which calls make and use it: StatePolicy). */
export interface StateConvention {
  /** The error for a state id the gateway does not hold for this key (geth: "filter not found"). */
  readonly notFound: RpcErrorInfo;
  /** A new id of the gateway's for state a node made, as raw JSON, shaped as the family's clients expect (geth: a hex string). */
  newId(): string;
  /** How long a node keeps state nobody uses (geth: a filter not polled for 5 minutes): the gateway forgets it after as long. */
  readonly idleMs: number;
}

export interface SubscriptionCodec {
  /** Subscribe method → its unsubscribe method (`eth_subscribe` → `eth_unsubscribe`). */
  readonly methods: Readonly<Record<string, string>>;
  /** A new client subscription id, as raw JSON (the gateway's ids stay the same when the node under them changes). */
  newId(): string;
  /** The error an unsubscribe of an id the connection does not hold is answered with, as the family's nodes answer it. */
  readonly unknownId: RpcErrorInfo;
  /** How the family's unsubscribe names its subscription and is answered (geth and Sui alike: `idFirstUnsubscribe`). */
  readonly unsubscribe: UnsubscribeConvention;
}

/** How a family's unsubscribe call names the subscription it ends, and what it answers. */
export interface UnsubscribeConvention {
  /** The subscription id (raw JSON) an unsubscribe's params name, or undefined when they name none. */
  idOf(params: unknown): string | undefined;
  /** The params (raw JSON) of an unsubscribe of subscription `id` (raw JSON), as sent to a node. */
  params(id: string): string;
  /** The result (raw JSON) of an unsubscribe that ended a subscription. */
  readonly done: string;
}

/**
 * The traffic listener's reading of an HTTP request: into a JSON-RPC request (through
 * the jsonrpc codec) or a passthrough call (judged by the passthrough codec).
 */
/** `K`: the kinds of call `parse` makes; the handler must carry the codec of each (see ChainHandler). */
export interface HttpCodec<M, K extends HttpCallKind = HttpCallKind> {
  readonly errorStyle: ErrorStyle;
  /** Turn a request into calls; throws GatewayError (PARSE_ERROR, INVALID_REQUEST) on bad input. */
  parse(req: InboundRequest): ParsedRequest<M, K>;
}

/** Passthrough calls: requests relayed to a node as they are. */
export interface PassthroughCodec<M> {
  judge(call: PassthroughCall<M>, reply: PassthroughReply): Verdict;
  /** Node answer headers relayed to the client besides content-type (lower-case). */
  readonly relayHeaders?: readonly string[];
}

/** One gRPC call as the core hands it to a plugin, the `apikey` metadata already removed. */
export interface InboundGrpcCall {
  /** The call's path, `/package.Service/Method` (checked for that shape by the core). */
  readonly path: string;
  /** Request headers as received: custom metadata (lower-case names), `grpc-*` and pseudo-headers. */
  readonly metadata: IncomingHttpHeaders;
  /** The request message without its 5-byte prefix; undefined when the client compressed it. */
  readonly message: Buffer | undefined;
}

/** gRPC calls on the gRPC listener, relayed without the schema. */
export interface GrpcCodec<M> {
  /** Throws GatewayError (INVALID_REQUEST, answered INVALID_ARGUMENT) on bad metadata. */
  parse(call: InboundGrpcCall): GrpcCall<M>;
  /**
   * The verdict on a status a node answered before anything was relayed, and on the
   * final status of a relayed call (for metrics). The core itself blames the node for
   * transport failures (refused, reset, timeout, an HTTP status other than 200).
   */
  judge(call: GrpcCall<M>, reply: GrpcReply): Verdict;
}

/** A harmless request that shows an endpoint answering (the dashboard and the CLI print it). */
export interface SampleRequest {
  readonly method: 'GET' | 'POST';
  /** Below the endpoint's URL, starting with '/'. */
  readonly path: string;
  /** JSON text for POST. */
  readonly body?: string;
}

/**
 * A chain endpoint's instance of a plugin: one codec per kind of call it makes, and how
 * the HTTP listener reads requests. Which listeners serve it follows from its codecs:
 * `http` on the traffic listener, `jsonrpc.subscriptions` as WebSocket upgrades there,
 * `grpc` on the gRPC listener. The core hands `classify` and the judges the very call
 * objects the codecs made.
 */
export type ChainHandler<M = unknown> = HandlerParts<M> & HandlerCodecs<M>;

/**
 * The codecs an HTTP codec needs: one for each kind of call its `parse` makes, so a
 * plugin whose requests become passthrough calls without a passthrough codec (or
 * JSON-RPC items without a JSON-RPC codec) does not compile.
 */
export type HandlerCodecs<M> =
  | { readonly http?: undefined }
  | { readonly http: HttpCodec<M, 'jsonrpc'>; readonly jsonrpc: JsonRpcCodec<M> }
  | { readonly http: HttpCodec<M, 'passthrough'>; readonly passthrough: PassthroughCodec<M> }
  | { readonly http: HttpCodec<M>; readonly jsonrpc: JsonRpcCodec<M>; readonly passthrough: PassthroughCodec<M> };

export interface HandlerParts<M = unknown> {
  readonly http?: HttpCodec<M>;
  readonly jsonrpc?: JsonRpcCodec<M>;
  readonly passthrough?: PassthroughCodec<M>;
  readonly grpc?: GrpcCodec<M>;
  /** Optional: without one the dashboard shows the endpoint's URL with the key header only. */
  readonly sample?: SampleRequest;
  /**
   * Request headers the family's clients send (lower case), which pages on other origins
   * may then send too (CORS preflights allow them besides the gateway's own): a height
   * header, an SDK's client headers. Headers the gateway never reads are not needed.
   */
  readonly corsHeaders?: readonly string[];
  classify(call: Call<M>, view: PoolView): Routing;
  /** Read the node's head; throws on failure. */
  probe(node: NodeClient, timeoutMs: number): Promise<NodeHead>;
  /**
   * Optional: ask the node what it serves, at start and every `health.describeIntervalMs`
   * (each request within `timeoutMs`). Throws only when the node answers nothing; parts
   * it cannot tell are left out. A node saying another chain never joins rotation.
   */
  describe?(node: NodeClient, timeoutMs: number): Promise<NodeDescription>;
  /** Optional: how answers agree, for chains that ask several nodes (`consensus`); without it, no call is compared. */
  readonly agreement?: AgreementCodec<M>;
}

// ---- agreement: what it means for nodes' answers to agree --------------------------------

/**
 * How answers to one call are compared when the chain asks several nodes and answers
 * only when enough agree (`chains.<name>.consensus`). The core asks the nodes, counts and
 * decides; the plugin says what an answer is, once fields that rightly differ are left out.
 */
export interface AgreementRule {
  /**
   * 'same': answers agree when their canonical forms are equal. 'highest': numeric
   * answers that rightly differ by how far a node has got (a nonce, a gas price): any
   * answers agree, and the highest of them is the answer.
   */
  readonly kind: 'same' | 'highest';
  /**
   * The answer's text in the form compared: for 'same', a canonical text (fields to
   * ignore left out, members in one order); for 'highest', the number in decimal.
   * Undefined when the answer cannot be read (it agrees with nothing).
   */
  canonical(text: string): string | undefined;
}

/** Agreement across nodes for a family: which methods by default, and how each call's answers compare. */
export interface AgreementCodec<M = unknown> {
  /** Method patterns (`*` globs over the call's method name) checked when the chain's config lists none. */
  readonly defaults: readonly string[];
  /**
   * How answers to this call compare, or undefined when they may rightly differ between
   * honest nodes (a read at the latest state that names no height): such a call goes to
   * one node as usual. Asked of the call as it is sent (a `latest` read already pinned).
   */
  rule(call: Call<M>): AgreementRule | undefined;
}

/** Request limits from config that JSON-RPC parsing applies. */
export interface JsonLimits {
  readonly maxDepth: number;
  readonly maxMethodLength: number;
  /** Items a batch may have on this gateway (the largest tier cap): the parser stops counting past it. */
  readonly maxBatch: number;
}

/** Options of a plugin without a schema: any block passes. */
export type UntypedOptions = Readonly<Record<string, unknown>>;

/** The options a plugin's `create` gets: typed from its `optionsSchema` (TypeBox), else untyped. */
export type OptionsOf<S extends TSchema | undefined> = S extends TSchema ? Readonly<Static<S>> : UntypedOptions;

export interface PluginContext<O = UntypedOptions> {
  /** The chain endpoint's name from config. */
  readonly chain: string;
  /** Pass to parseJsonRpcBody. */
  readonly limits: JsonLimits;
  /** The plugin's own options block from config, valid against its `optionsSchema` (typed from it). */
  readonly options: O;
  /** Whether the chain checks answers (`chains.<name>.verify`); absent: off. A probe checks what it reads unless off. */
  readonly verify?: VerifyMode;
}

/**
 * The version of this contract. A plugin names the one it was written for (`contract: 2`);
 * the loader refuses a plugin written for another, saying which, so a plugin built
 * against an older SDK fails at load with a clear error instead of misbehaving later.
 */
export const CONTRACT_VERSION = 2;

export interface ChainPlugin<M = unknown, S extends TSchema | undefined = TSchema | undefined> {
  readonly name: string;
  /** The contract the plugin was written for: this one (see CONTRACT_VERSION). */
  readonly contract: typeof CONTRACT_VERSION;
  /**
   * The shape of the `options` block of a chain using this plugin, built with `Type`
   * (TypeBox, re-exported by `noderouter/plugin`): check-config checks it with the
   * path of each problem, and the config's JSON Schema (config/noderouter.schema.json)
   * carries it so editors check and complete the options. Without one, any options
   * pass. Give an `errorMessage` to say what a setting accepts.
   */
  readonly optionsSchema?: S;
  /**
   * Optional: checks across options the schema cannot express, run once the options
   * match `optionsSchema`. Returns problems as `[pathBelowOptions, message]` pairs; an
   * empty list means valid.
   */
  validateOptions?(options: OptionsOf<S>): Array<[string, string]>;
  /** No I/O: config validation calls it to learn which listeners serve the chain. */
  create(ctx: PluginContext<OptionsOf<S>>): ChainHandler<M>;
}

/** Identity helper so a plugin module gets the contract's type inference: `ctx.options` typed from `optionsSchema`. */
export function definePlugin<M, S extends TSchema | undefined = undefined>(plugin: ChainPlugin<M, S>): ChainPlugin<M, S> {
  return plugin;
}
