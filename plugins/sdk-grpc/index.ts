// Cosmos SDK gRPC of SDK chains, relayed without the chain's protobuf schema. A
// historical query names its height in the `x-cosmos-block-height` metadata (or, for
// GetBlockByHeight and GetValidatorSetByHeight, in the request); below what full nodes
// keep it goes to an archive node. Labels are known method paths, else "other".
// Probes ask GetLatestBlock for the head and node Status for the earliest height kept.

import {
  definePlugin,
  type Call,
  type ChainHandler,
  type GrpcStatusReply,
  type NodeHead,
  type Routing,
  type Verdict,
} from '../../src/plugin.js';
import { CostTable } from '../shared/costs.js';
import { atHeight, decimalHeight, HEIGHT_HEADER, headerHeight, PRUNED } from '../shared/heights.js';
import { costTable, costsOption, intOption, positiveInt, unknownKeys, type Problems } from '../shared/options.js';
import { GET_LATEST_BLOCK, HEIGHT_FIELD, METHODS, NODE_STATUS } from './methods.js';
import { message, varint } from './proto.js';

const UNIMPLEMENTED = 12;
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;
const EMPTY = Buffer.alloc(0);

interface GrpcCall extends Call {
  /** The height the call reads; undefined for the latest state. */
  readonly height: number | undefined;
}

/**
 * The head of a GetLatestBlockResponse: block_id (1) → hash (1); sdk_block (3), else
 * block (2) → header (1) → height (3). Throws when there is no height.
 */
export function decodeLatestBlock(data: Buffer): NodeHead {
  const block = message(data, 3) ?? message(data, 2);
  const height = varint(message(block, 1), 3);
  if (height === undefined || height <= 0) throw new Error('GetLatestBlock answer has no block.header.height');
  const hash = message(message(data, 1), 1);
  return hash === undefined || hash.length === 0 ? { height } : { height, hash: hash.toString('hex').toUpperCase() };
}

/** The earliest height a node keeps, from a node StatusResponse (earliest_store_height = 1). */
export function decodeEarliest(data: Buffer): number | undefined {
  const earliest = varint(data, 1);
  return earliest === undefined || earliest <= 0 ? undefined : earliest;
}

/** The node's answer: pruned words send it to archive; UNAVAILABLE and RESOURCE_EXHAUSTED are the node's trouble. */
export function grpcVerdict(reply: GrpcStatusReply): Verdict {
  if (reply.code === 0) return 'ok';
  if (PRUNED.test(reply.message)) return 'pruned';
  if (reply.code === UNAVAILABLE) return 'node-failure';
  if (reply.code === RESOURCE_EXHAUSTED) return 'throttled';
  return 'chain-error';
}

function requestHeight(path: string, msg: Buffer | undefined): number | undefined {
  const field = HEIGHT_FIELD.get(path);
  if (field === undefined || msg === undefined) return undefined;
  try {
    return decimalHeight(varint(msg, field));
  } catch {
    // A malformed request is the node's to refuse.
    return undefined;
  }
}

function createHandler(fullHistory: number, costs: CostTable): ChainHandler {
  // Every known method's routing, made once: classify allocates nothing for them.
  const known = new Map<string, Routing>(METHODS.map((m) => [m, Object.freeze({ archive: false, cost: costs.of(m, m), label: m })]));
  /** Nodes that answered Status with UNIMPLEMENTED (SDK before 0.50): not asked again. */
  const noStatus = new Set<string>();

  return {
    // The HTTP side of the contract: gRPC chains are never routed from the HTTP listener.
    errorStyle: 'rest',
    parse: () => ({ kind: 'unsupported', status: 404, message: 'gRPC endpoint: call it on the gRPC listener' }),
    judge: () => 'chain-error',
    parseGrpc(call): GrpcCall {
      const header = decimalHeight(headerHeight(call.metadata[HEIGHT_HEADER]));
      return { method: call.path, params: undefined, id: undefined, raw: '', height: header ?? requestHeight(call.path, call.message) };
    },
    classify(call, view): Routing {
      const r = known.get(call.method);
      const cost = r?.cost ?? costs.of(call.method, call.method);
      const label = r === undefined ? 'other' : call.method;
      const height = (call as Partial<GrpcCall>).height;
      // gRPC answers are not cached (the relay streams them): no cache hints.
      if (height !== undefined) return atHeight(height, view, fullHistory, cost, label, false);
      return r ?? { archive: false, cost, label };
    },
    judgeGrpc(_call, reply) {
      return grpcVerdict(reply);
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const [latest, status] = await Promise.all([
        node.grpcUnary(GET_LATEST_BLOCK, EMPTY, {}, timeoutMs),
        noStatus.has(node.name) ? undefined : node.grpcUnary(NODE_STATUS, EMPTY, {}, timeoutMs).catch(() => undefined),
      ]);
      if (latest.code !== 0) throw new Error(`GetLatestBlock answered gRPC status ${latest.code}`);
      const head = decodeLatestBlock(latest.data);
      if (status?.code === UNIMPLEMENTED) noStatus.add(node.name);
      const earliest = status?.code === 0 ? decodeEarliest(status.data) : undefined;
      return earliest === undefined ? head : { ...head, earliest };
    },
  };
}

export default definePlugin({
  name: 'sdk-grpc',
  transport: 'grpc',
  validateOptions(options): Problems {
    const problems: Problems = [];
    unknownKeys(options, ['fullHistory', 'costs'], problems);
    positiveInt(options, 'fullHistory', problems);
    costTable(options, '{ "/cosmos.tx.v1beta1.Service/Simulate": 5, "/cosmwasm.wasm.v1.Query/*": 3 }', problems);
    return problems;
  },
  create(ctx) {
    return createHandler(intOption(ctx.options, 'fullHistory', 128), new CostTable({}, costsOption(ctx.options)));
  },
});
