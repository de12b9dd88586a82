// What a Cosmos SDK gRPC node says it serves (the plugin's describe): its network (the
// chain id) and app version from tendermint GetNodeInfo, else the chain id of its latest
// block's header; and the earliest height it keeps, from node Status (SDK 0.50 and later).

import { GRPC_UNIMPLEMENTED, retention, type NodeClient, type NodeDescription } from 'noderouter/plugin';
import { GET_LATEST_BLOCK, GET_NODE_INFO, NODE_STATUS } from './methods.js';
import { message, varint } from './proto.js';

const EMPTY = Buffer.alloc(0);

/** A string field, '' when absent. */
const text = (buf: Buffer | undefined, no: number): string => message(buf, no)?.toString('utf8') ?? '';

export async function describeGrpc(node: NodeClient, timeoutMs: number): Promise<NodeDescription> {
  const [info, status] = await Promise.all([
    node.grpc.unary(GET_NODE_INFO, EMPTY, {}, timeoutMs),
    node.grpc.unary(NODE_STATUS, EMPTY, {}, timeoutMs).catch(() => undefined),
  ]);
  // StatusResponse: earliest_store_height (1); 0 is proto3's absent.
  const earliest = status?.code === 0 ? varint(status.data, 1) : undefined;
  const d: { -readonly [K in keyof NodeDescription]: NodeDescription[K] } = retention(earliest === 0 ? undefined : earliest);
  if (info.code === 0) {
    // default_node_info (1): network 4; application_version (2): app_name 2, version 3.
    const network = text(message(info.data, 1), 4);
    if (network !== '') d.chainId = network;
    const app = message(info.data, 2);
    if (text(app, 2) !== '') d.client = `${text(app, 2)} ${text(app, 3)}`.trim().slice(0, 200);
  } else if (info.code === GRPC_UNIMPLEMENTED) {
    // GetLatestBlockResponse: sdk_block (3), else block (2) → header (1) → chain_id (2).
    const latest = await node.grpc.unary(GET_LATEST_BLOCK, EMPTY, {}, timeoutMs);
    const chainId = latest.code === 0 ? text(message(message(latest.data, 3) ?? message(latest.data, 2), 1), 2) : '';
    if (chainId !== '') d.chainId = chainId;
  } else throw new Error(`GetNodeInfo answered gRPC status ${info.code}`);
  return d;
}
