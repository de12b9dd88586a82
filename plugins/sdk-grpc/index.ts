// Cosmos SDK gRPC of SDK chains, relayed without the chain's protobuf schema. A
// historical query names its height in the `x-cosmos-block-height` metadata (or, for
// GetBlockByHeight and GetValidatorSetByHeight, in the request); below what full nodes
// keep it goes to an archive node. Labels are known method paths, else "other".
// Probes ask GetLatestBlock for the head and node Status for the earliest height kept.

import {
  atHeight,
  costsOption,
  CostsSchema,
  CostTable,
  decimalHeader,
  decimalHeight,
  definePlugin,
  GRPC_RESOURCE_EXHAUSTED,
  GRPC_UNAVAILABLE,
  GRPC_UNIMPLEMENTED,
  intOption,
  OptionsSchema,
  PositiveInt,
  type ChainHandler,
  type GrpcReply,
  type NodeHead,
  type Routing,
  type Verdict,
} from 'noderouter/plugin';
import { describeGrpc } from './describe.js';
import { BROADCAST_TX, GET_LATEST_BLOCK, HEIGHT_FIELD, METHODS, NODE_STATUS } from './methods.js';
import { message, varint } from './proto.js';

const EMPTY = Buffer.alloc(0);
/** The metadata in which SDK clients pin a query to a height. */
const HEIGHT_HEADER = 'x-cosmos-block-height';
/** What the SDK says when a node no longer holds a height's state. */
const PRUNED = /version does not exist|is not available|pruned|lowest height is/i;

interface GrpcMeta {
  /** The height the call reads; undefined for the latest state. */
  readonly height: number | undefined;
  /** The request names a height the relay cannot read (a compressed message): it may reach into archive state. */
  readonly unread?: true;
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
export function grpcVerdict(reply: GrpcReply): Verdict {
  if (reply.code === 0) return 'ok';
  if (PRUNED.test(reply.message)) return 'pruned';
  if (reply.code === GRPC_UNAVAILABLE) return 'node_failure';
  if (reply.code === GRPC_RESOURCE_EXHAUSTED) return 'throttled';
  return 'chain_error';
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

function createHandler(fullHistory: number, costs: CostTable): ChainHandler<GrpcMeta> {
  // Every known method's routing, made once: classify allocates nothing for them.
  // A broadcast is sent once: a node that may have taken the transaction is never asked again.
  const known = new Map<string, Routing>(
    METHODS.map((m) => {
      const base = { archive: false, cost: costs.of(m, m), label: m };
      return [m, Object.freeze(m === BROADCAST_TX ? { ...base, fullHolds: true, retry: 'never' as const } : base)];
    }),
  );
  /** Nodes that answered Status with UNIMPLEMENTED (SDK before 0.50): not asked again. */
  const noStatus = new Set<string>();

  return {
    grpc: {
      parse(call) {
        const header = decimalHeight(decimalHeader(call.metadata[HEIGHT_HEADER], HEIGHT_HEADER));
        if (header === undefined && call.message === undefined && HEIGHT_FIELD.has(call.path)) {
          return { kind: 'grpc', method: call.path, meta: { height: undefined, unread: true } };
        }
        return { kind: 'grpc', method: call.path, meta: { height: header ?? requestHeight(call.path, call.message) } };
      },
      judge: (_call, reply) => grpcVerdict(reply),
    },
    classify(call, view): Routing {
      const r = known.get(call.method);
      const cost = r?.cost ?? costs.of(call.method, call.method);
      const label = r === undefined ? 'other' : call.method;
      const height = call.meta.height;
      // A height the relay cannot read is treated as old: archive nodes, and only for keys with archive access.
      if (call.meta.unread === true) return { archive: true, cost, label };
      // gRPC answers are not cached (the relay streams them): no cache hints.
      // Not hedged: a gRPC attempt runs on the request's own signal, so a losing one could not be cancelled alone.
      if (height !== undefined) return atHeight(height, view, fullHistory, cost, label, false);
      return r ?? { archive: false, cost, label };
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const [latest, status] = await Promise.all([
        node.grpc.unary(GET_LATEST_BLOCK, EMPTY, {}, timeoutMs),
        noStatus.has(node.name) ? undefined : node.grpc.unary(NODE_STATUS, EMPTY, {}, timeoutMs).catch(() => undefined),
      ]);
      if (latest.code !== 0) throw new Error(`GetLatestBlock answered gRPC status ${latest.code}`);
      const head = decodeLatestBlock(latest.data);
      if (status?.code === GRPC_UNIMPLEMENTED) noStatus.add(node.name);
      const earliest = status?.code === 0 ? decodeEarliest(status.data) : undefined;
      return earliest === undefined ? head : { ...head, earliest };
    },
    describe: describeGrpc,
  };
}

export default definePlugin({
  name: 'sdk-grpc',
  contract: 2,
  optionsSchema: OptionsSchema({
    fullHistory: PositiveInt(),
    costs: CostsSchema('{ "/cosmos.tx.v1beta1.Service/Simulate": 5, "/cosmwasm.wasm.v1.Query/*": 3 }'),
  }),
  create(ctx) {
    return createHandler(intOption(ctx.options, 'fullHistory', 128), new CostTable({}, costsOption(ctx.options)));
  },
});
