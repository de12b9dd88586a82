// Nodes that describe themselves: each node is asked what it serves (the plugin's
// `describe`) at start and every `health.describeIntervalMs`, never twice at once, and
// the pool makes of the answers: the chain it is on (config's chainId, else the first
// id a majority of its nodes agree on), nodes on another chain (kept out of rotation by
// health.ts), roles detected where config gives none, and mismatches with config or
// the other nodes, each reported once for as long as the node says the same thing.

import type { ChainHandler } from '../plugin/contract.js';
import type { NodePool } from './pool.js';
import type { Mismatch, PoolNode } from './pool-node.js';

export interface DescribeEvents {
  /** A mismatch the node had not shown before (log it); it stays in `node.mismatches` while it holds. */
  mismatch?(pool: NodePool, node: PoolNode, m: Mismatch): void;
  /** A node without a configured role was found to be `role` (first time, or changed). */
  detected?(pool: NodePool, node: PoolNode): void;
}

export class Describer {
  private readonly inFlight = new Set<PoolNode>();

  constructor(
    private readonly pool: NodePool,
    private readonly handler: ChainHandler,
    private readonly events: DescribeEvents = {},
  ) {}

  /** Descriptions of the nodes due one (never described, or longer ago than the cadence), not already being asked. */
  due(): Array<Promise<void>> {
    if (this.handler.describe === undefined) return [];
    const now = this.pool.now();
    const every = this.pool.config.health.describeIntervalMs;
    return this.pool.nodes
      .filter((n) => !this.inFlight.has(n) && (n.describedAt === undefined || now - n.describedAt >= every))
      .map((n) => this.describe(n));
  }

  private async describe(node: PoolNode): Promise<void> {
    this.inFlight.add(node);
    try {
      node.described = await this.handler.describe?.(node, this.pool.config.health.timeoutMs);
      node.describedAt = this.pool.now();
    } catch {
      // A node that answers nothing is the probes' business; it is asked again next round.
    } finally {
      this.inFlight.delete(node);
    }
  }

  /** After a round: the pool's chain, each node's standing on it, detected roles, and mismatches. */
  judge(): void {
    const { pool } = this;
    const said = new Map<string, number>();
    for (const n of pool.nodes) {
      const id = n.described?.chainId;
      if (id !== undefined) said.set(id, (said.get(id) ?? 0) + 1);
    }
    // The first id a majority of all the pool's nodes agree on, kept from then on.
    if (pool.chainId === undefined) {
      for (const [id, count] of said) if (count * 2 > pool.nodes.length) pool.chainId = id;
    }
    const expected = pool.chainId;
    const configured = pool.config.chainId !== undefined;
    for (const n of pool.nodes) {
      const found: Mismatch[] = [];
      const id = n.described?.chainId;
      n.wrongChain = '';
      if (id !== undefined && expected !== undefined && id !== expected) {
        n.wrongChain = `wrong chain: the node says ${id}, the chain is ${expected}`;
        const whose = configured ? 'chainId in config' : 'what most nodes say';
        found.push({ kind: 'chain', said: id, text: `the node says chain ${id}, not ${expected} (${whose}): kept out of rotation` });
      } else if (id !== undefined && expected === undefined && said.size > 1) {
        found.push({
          kind: 'chain',
          said: id,
          text: `the node says chain ${id}, and the nodes disagree with no majority: set chains.${pool.chain}.chainId`,
        });
      }
      const role = n.described?.role;
      const set = n.config.role;
      if (role !== undefined && set !== undefined && role !== set) {
        const oldest = n.described?.earliest === undefined ? '' : ` (its oldest state is at ${n.described.earliest})`;
        found.push({ kind: 'role', said: role, text: `config says ${set}, the node answers as ${role}${oldest}; config's role is kept` });
      }
      if (set === undefined && role !== undefined && role !== n.role) {
        n.role = role;
        this.events.detected?.(pool, n);
      }
      this.record(n, found);
    }
  }

  /** Keep the node's mismatches; tell of the ones not told before; forget those that no longer hold. */
  private record(node: PoolNode, found: Mismatch[]): void {
    const keys = new Set(found.map((m) => `${m.kind}=${m.said}`));
    for (const m of found) {
      const key = `${m.kind}=${m.said}`;
      if (node.loggedMismatches.has(key)) continue;
      node.loggedMismatches.add(key);
      this.events.mismatch?.(this.pool, node, m);
    }
    for (const key of node.loggedMismatches) if (!keys.has(key)) node.loggedMismatches.delete(key);
    node.mismatches = found;
  }
}
