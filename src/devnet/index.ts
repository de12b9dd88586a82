// The devnet: simulated nodes of every family on loopback, grouped into simulated
// chains by network, with a control server to inject faults and mine blocks. Used by
// `npm start`, the tests and the benchmarks.

import { createHash } from 'node:crypto';
import { SimChain } from './chain.js';
import { startControl } from './control.js';
import type { Family } from './family.js';
import { evmFamily } from './evm.js';
import { DevnetNodeServer } from './node-server.js';
import { objectxFamily } from './objectx.js';
import { sdkRestFamily, sdkRpcFamily } from './sdk.js';
import { DevnetGrpcNode } from './sdk-grpc.js';

export type DevnetFamily = 'evm' | 'objectx' | 'sdk-rpc' | 'sdk-rest' | 'sdk-grpc';

export interface DevnetNodeSpec {
  /** Nodes of one network share one simulated chain (hub's RPC and REST nodes). */
  readonly network: string;
  readonly family: DevnetFamily;
  readonly name: string;
  readonly role: 'full' | 'archive';
  readonly host?: string;
  /** 0 or absent: an ephemeral port. */
  readonly port?: number;
}

export interface DevnetOptions {
  /** A block every this many ms; 0 = blocks only by `advance()`. */
  readonly blockTimeMs?: number;
  /** Blocks a full node keeps. */
  readonly fullRetention?: number;
  readonly startHeight?: number;
  readonly controlPort?: number;
  readonly noControl?: boolean;
  /** EVM chain id per network; default: 1 for "l1", else a stable number from the name. */
  readonly chainIds?: Readonly<Record<string, number>>;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
  readonly at: number;
}

export interface NodeFaults {
  latencyMs?: number;
  errorRate?: number;
  hang?: boolean;
  /** Answers wait, and are given normally once the fault is cleared (tests line calls up). */
  hold?: boolean;
  status?: number;
  html?: boolean;
  truncated?: boolean;
  stalled?: boolean;
  down?: boolean;
  /** JSON-RPC answers carry an id the caller did not send. */
  wrongId?: boolean;
  /** Batch answers come back in reverse order (allowed by JSON-RPC). */
  reorderBatch?: boolean;
  /** Batch answers lose their last item. */
  shortBatch?: boolean;
  /** Every answer is a valid JSON-RPC answer of about 1 MB. */
  hugeBody?: boolean;
}

export interface DevnetNode {
  readonly name: string;
  readonly network: string;
  readonly family: DevnetFamily;
  readonly role: 'full' | 'archive';
  readonly url: string;
  readonly received: RecordedRequest[];
  clearReceived(): void;
  setFaults(f: NodeFaults): Promise<void>;
  clearFaults(): Promise<void>;
  currentFaults(): NodeFaults;
  height(): number;
  earliest(): number;
}

export interface DevnetChain {
  readonly network: string;
  height(): number;
  advance(blocks?: number): void;
  reorg(depth: number): void;
}

export interface Devnet {
  readonly nodes: ReadonlyMap<string, DevnetNode>;
  readonly chains: ReadonlyMap<string, DevnetChain>;
  readonly controlUrl: string | undefined;
  node(name: string): DevnetNode;
  close(): Promise<void>;
}

/** HTTP families; 'sdk-grpc' nodes are gRPC servers of their own (sdk-grpc.ts). */
const FAMILIES: Readonly<Record<Exclude<DevnetFamily, 'sdk-grpc'>, Family>> = {
  evm: evmFamily,
  objectx: objectxFamily,
  'sdk-rpc': sdkRpcFamily,
  'sdk-rest': sdkRestFamily,
};

export function defaultChainId(network: string): number {
  if (network === 'l1') return 1;
  return 10_000 + (createHash('sha256').update(network).digest().readUInt32BE(0) % 90_000);
}

export async function startDevnet(specs: readonly DevnetNodeSpec[], options: DevnetOptions = {}): Promise<Devnet> {
  const chains = new Map<string, SimChain>();
  const nodes = new Map<string, DevnetNodeServer | DevnetGrpcNode>();
  const blockTimeMs = options.blockTimeMs ?? 1_000;
  try {
    for (const s of specs) {
      if (nodes.has(s.name)) throw new Error(`devnet node name "${s.name}" is used twice`);
      let chain = chains.get(s.network);
      if (chain === undefined) {
        chain = new SimChain(s.network, options.startHeight ?? 1_000, blockTimeMs);
        chains.set(s.network, chain);
      }
      const retention = options.fullRetention ?? 128;
      const node =
        s.family === 'sdk-grpc'
          ? new DevnetGrpcNode(s.name, s.network, s.role, chain, retention, s.host ?? '127.0.0.1', s.port ?? 0)
          : new DevnetNodeServer(
              s.name,
              s.network,
              s.family,
              s.role,
              chain,
              options.chainIds?.[s.network] ?? defaultChainId(s.network),
              FAMILIES[s.family],
              retention,
              s.host ?? '127.0.0.1',
              s.port ?? 0,
            );
      nodes.set(s.name, node);
      await node.listen();
    }
  } catch (err) {
    for (const n of nodes.values()) await n.close();
    for (const c of chains.values()) c.stop();
    throw err;
  }
  const control = options.noControl === true ? undefined : await startControl(nodes, chains, options.controlPort ?? 0);
  return {
    nodes,
    chains,
    controlUrl: control?.url,
    node(name) {
      const n = nodes.get(name);
      if (n === undefined) throw new Error(`no devnet node "${name}"`);
      return n;
    },
    async close() {
      await control?.close();
      for (const c of chains.values()) c.stop();
      await Promise.all([...nodes.values()].map((n) => n.close()));
    },
  };
}
