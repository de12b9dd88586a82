// The public plugin SDK, `noderouter/plugin`: the plugin contract and the helpers
// every family needs (JSON-RPC envelopes and raw JSON, verdicts, heights, options,
// costs, cache lifetimes, gRPC status codes). Built-in plugins import only this, as a
// third-party plugin installed from npm does; nothing else of the core is public.

// Every name is listed: what a plugin may use is decided here, never by what a module happens to export.
export { CONTRACT_VERSION, definePlugin } from '../plugin/contract.js';
export type {
  AgreementCodec,
  AgreementRule,
  AnswerCheck,
  Call,
  ChainHandler,
  ChainPlugin,
  ErrorStyle,
  GrpcCall,
  GrpcCodec,
  GrpcNodeClient,
  GrpcReply,
  GrpcUnaryReply,
  HeadReader,
  HttpCodec,
  HttpNodeClient,
  InboundGrpcCall,
  InboundRequest,
  InvalidItem,
  JsonLimits,
  JsonRpcCall,
  JsonRpcCodec,
  JsonRpcDialect,
  JsonRpcReply,
  JsonRpcRequest,
  LatestPolicy,
  NodeClient,
  NodeDescription,
  NodeHead,
  NodeRole,
  OptionsOf,
  ParsedRequest,
  PassthroughCall,
  PassthroughCodec,
  PassthroughReply,
  PluginContext,
  PoolView,
  Reply,
  Routing,
  RpcErrorInfo,
  RpcItem,
  SampleRequest,
  SplitPolicy,
  StateConvention,
  StatePolicy,
  SubscriptionCodec,
  TargetReader,
  UntypedOptions,
  UpstreamRequest,
  Verdict,
  VerifyMode,
} from '../plugin/contract.js';
// Option schemas are built with TypeBox; plugins import it from here only.
export { Type, type Static, type TSchema } from '@sinclair/typebox';
export { GatewayError, isGatewayError, type ErrorCode } from '../errors.js';
export {
  parseJsonRpcBody,
  rpcErrorText,
  replyError,
  withParams,
  isJsonRpcCall,
  DEFAULT_JSONRPC_LIMITS,
  type MetaReader,
} from '../jsonrpc/envelope.js';
export { exactNames, type ExactNames } from '../jsonrpc/member-names.js';
export { isObjectText, memberRaw, splitArray, withMemberRaw } from '../jsonrpc/raw-json.js';
export { jsonRpcVerdict, methodTable, splitMethod } from './jsonrpc-verdict.js';
export { jsonRpcAtRoot } from './jsonrpc-http.js';
export { hexSubscriptionId, idFirstUnsubscribe } from './subscriptions.js';
export { atHeight, decimalHeader, decimalHeight, fullFloor, retention, type HeightRouting } from './heights.js';
export {
  checkOptions,
  CostsSchema,
  costsOption,
  intOption,
  NameList,
  namesOption,
  OptionsSchema,
  PatternList,
  patternsOption,
  allowMethodsOption,
  PositiveInt,
  type Problems,
} from './options.js';
export { CostTable } from './costs.js';
export { DEFAULT_BLOCK_TIME_MS, FINAL_TTL_MS } from './cache.js';
export {
  GRPC_OK,
  GRPC_CANCELLED,
  GRPC_UNKNOWN,
  GRPC_INVALID_ARGUMENT,
  GRPC_DEADLINE_EXCEEDED,
  GRPC_NOT_FOUND,
  GRPC_PERMISSION_DENIED,
  GRPC_RESOURCE_EXHAUSTED,
  GRPC_FAILED_PRECONDITION,
  GRPC_UNIMPLEMENTED,
  GRPC_INTERNAL,
  GRPC_UNAVAILABLE,
  GRPC_UNAUTHENTICATED,
} from '../grpc-wire/codes.js';
export { globMatcher, matchesGlob, type Matcher } from './glob.js';
export { queryValues } from './query.js';
export { nodeRpc, type NodeRpcAnswer } from './node-rpc.js';
export { canonicalJson, jsonRpcHighest, jsonRpcSame, jsonSame } from './agreement.js';
