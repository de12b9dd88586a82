// A chain endpoint's pool of nodes: which node may take a call now (role, retained
// height, rotation, breaker, strategy) and what the pool knows of the chain (the
// PoolView plugins classify against). Health probing lives in health.ts.

import type { ChainConfig } from '../config/types.js';
import type { PoolView, Routing } from '../plugin.js';
import { PoolNode } from './pool-node.js';
import { createStrategy, type Strategy } from './strategies.js';
import { UpstreamNode, type UpstreamOptions, DEFAULT_UPSTREAM_OPTIONS } from './upstream.js';

export interface PoolEvents {
  /** A node left or re-entered rotation. */
  rotation?(pool: NodePool, node: PoolNode, inRotation: boolean, reason: string): void;
  breaker?(pool: NodePool, node: PoolNode, state: 'closed' | 'half-open' | 'open'): void;
}

export class NodePool {
  readonly chain: string;
  readonly nodes: readonly PoolNode[];
  readonly archiveOnly: boolean;
  private readonly strategy: Strategy;
  private readonly scratch: PoolNode[];
  private currentView: PoolView = { head: undefined, fullEarliest: undefined };

  constructor(
    readonly config: ChainConfig,
    readonly events: PoolEvents = {},
    upstreamOptions: UpstreamOptions = DEFAULT_UPSTREAM_OPTIONS,
    /** Nodes of the pool this one replaces on a reload, kept with their health and breakers. */
    adopt?: readonly PoolNode[],
    private readonly now: () => number = Date.now,
  ) {
    this.chain = config.name;
    this.archiveOnly = config.archiveOnly;
    this.strategy = createStrategy(config.strategy);
    this.nodes =
      adopt ??
      config.nodes.map((n) => {
        const node = new PoolNode(n, new UpstreamNode(n.name, n.role, n.url, upstreamOptions), config.breaker);
        node.breaker.on('open', () => events.breaker?.(this, node, 'open'));
        node.breaker.on('halfOpen', () => events.breaker?.(this, node, 'half-open'));
        node.breaker.on('close', () => events.breaker?.(this, node, 'closed'));
        return node;
      });
    this.scratch = new Array<PoolNode>(this.nodes.length);
  }

  get view(): PoolView {
    return this.currentView;
  }

  /** Recompute the view after probes (allocates once per probe round, not per call). */
  refreshView(): void {
    let head: number | undefined;
    let fullEarliest: number | undefined;
    for (const n of this.nodes) {
      if (n.head !== undefined && n.consecutiveProbeFailures === 0 && (head === undefined || n.head > head)) head = n.head;
      if (n.role === 'full' && n.earliest !== undefined && (fullEarliest === undefined || n.earliest < fullEarliest)) {
        fullEarliest = n.earliest;
      }
    }
    this.currentView = { head, fullEarliest };
  }

  private retains(n: PoolNode, height: number | undefined): boolean {
    if (height === undefined) return true;
    // Heights above the head are left to the node to refuse: that is the chain's answer.
    if (n.earliest !== undefined) return n.earliest <= height;
    return n.role === 'archive';
  }

  private collect(routing: Routing, tried: ReadonlySet<PoolNode> | undefined, role: 'full' | 'archive' | 'any', now: number): number {
    let count = 0;
    for (const n of this.nodes) {
      if (role !== 'any' && n.role !== role) continue;
      if (tried !== undefined && tried.has(n)) continue;
      if (!n.available(now)) continue;
      if (routing.minHeight !== undefined && !this.retains(n, routing.minHeight)) continue;
      this.scratch[count++] = n;
    }
    return count;
  }

  /**
   * The node for a call, or undefined when none can take it now. Ordinary calls go to
   * full nodes, with archive nodes as the last resort; archive calls go to nodes that
   * hold the state (archive nodes, or full nodes known to retain the height).
   */
  select(routing: Routing, tried?: ReadonlySet<PoolNode>): PoolNode | undefined {
    const now = this.now();
    let count: number;
    if (this.archiveOnly) count = this.collect(routing, tried, 'archive', now);
    else if (routing.archive) {
      count = routing.minHeight !== undefined ? this.collect(routing, tried, 'any', now) : 0;
      if (count === 0) count = this.collect(routing, tried, 'archive', now);
    } else {
      count = this.collect(routing, tried, 'full', now);
      if (count === 0) count = this.collect(routing, tried, 'archive', now);
    }
    if (count === 0) return undefined;
    return count === 1 ? this.scratch[0] : this.strategy.pick(this.scratch, count);
  }

  /** True when at least one node could take an ordinary call now. */
  hasUsableNode(): boolean {
    const now = this.now();
    return this.nodes.some((n) => n.available(now) && (!this.archiveOnly || n.role === 'archive'));
  }

  async close(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.close()));
  }
}
