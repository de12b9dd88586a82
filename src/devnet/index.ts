// The devnet: simulated nodes of every family on loopback, grouped into simulated
// chains by network, with a control server to inject faults and mine blocks. Used by
// `npm start`, the tests and the benchmarks.

import { createHash } from 'node:crypto';
import { SimChain } from './chain.js';
import { startControl } from './control.js';
import type { DevnetCredentials } from './credentials.js';
import { devnetFamily } from './families.js';
import type { DevnetSettings, NodeSetup } from './family.js';
import { DevnetNodeServer } from './node-server.js';
import type { DevnetNode, NodeRole, SimulatedNode } from './types.js';

export type { DevnetNode, NodeFaults, RecordedRequest } from './types.js';
export type { DevnetCredentials } from './credentials.js';
export { devnetFamilyNames, hasDevnetFamily } from './families.js';

export interface DevnetNodeSpec {
  /** Nodes of one network share one simulated chain (hub's RPC and REST nodes). */
  readonly network: string;
  /** A devnet family: a plugin folder with a devnet module, or an installed plugin package with a devnet export. */
  readonly family: string;
  readonly name: string;
  readonly role: NodeRole;
  readonly host?: string;
  /** 0 or absent: an ephemeral port. */
  readonly port?: number;
  /** A provider's node: every request must carry these (headers, a base path with a token, query parameters). */
  readonly credentials?: DevnetCredentials;
}

export interface DevnetOptions {
  /** A block every this many ms; 0 = blocks only by `advance()`. */
  readonly blockTimeMs?: number;
  /** Blocks a full node keeps. */
  readonly fullRetention?: number;
  readonly startHeight?: number;
  readonly controlPort?: number;
  /** The control server's address; default 127.0.0.1. */
  readonly controlHost?: string;
  readonly noControl?: boolean;
  /** EVM chain id per network; default: 1 for "l1", else a stable number from the name. */
  readonly chainIds?: Readonly<Record<string, number>>;
  /** A filter not polled for this long is dropped; default 5 minutes, as geth. */
  readonly filterTimeoutMs?: number;
  /** The widest getLogs block range nodes answer; default: any (per node: the maxLogsRange fault). */
  readonly maxLogsRange?: number;
  /** The devnet's clock (filter lifetimes, request records); default Date.now. */
  readonly now?: () => number;
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

export function defaultChainId(network: string): number {
  if (network === 'l1') return 1;
  return 10_000 + (createHash('sha256').update(network).digest().readUInt32BE(0) % 90_000);
}

export async function startDevnet(specs: readonly DevnetNodeSpec[], options: DevnetOptions = {}): Promise<Devnet> {
  const chains = new Map<string, SimChain>();
  const nodes = new Map<string, SimulatedNode>();
  const blockTimeMs = options.blockTimeMs ?? 1_000;
  const settings: DevnetSettings = {
    fullRetention: options.fullRetention ?? 128,
    filterTimeoutMs: options.filterTimeoutMs ?? 300_000,
    maxLogsRange: options.maxLogsRange,
  };
  try {
    for (const s of specs) {
      if (nodes.has(s.name)) throw new Error(`devnet node name "${s.name}" is used twice`);
      const family = await devnetFamily(s.family);
      let chain = chains.get(s.network);
      if (chain === undefined) {
        chain = new SimChain(s.network, options.startHeight ?? 1_000, blockTimeMs);
        chains.set(s.network, chain);
      }
      const setup: NodeSetup = {
        name: s.name,
        network: s.network,
        family: s.family,
        role: s.role,
        chain,
        chainId: options.chainIds?.[s.network] ?? defaultChainId(s.network),
        settings,
        now: options.now ?? Date.now,
        host: s.host ?? '127.0.0.1',
        port: s.port ?? 0,
        credentials: s.credentials,
      };
      const node = family.kind === 'http' ? new DevnetNodeServer(setup, family) : family.createNode(setup);
      nodes.set(s.name, node);
      await node.listen();
    }
  } catch (err) {
    for (const n of nodes.values()) await n.close();
    for (const c of chains.values()) c.stop();
    throw err;
  }
  const control =
    options.noControl === true ? undefined : await startControl(nodes, chains, settings, options.controlPort ?? 0, options.controlHost);
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
