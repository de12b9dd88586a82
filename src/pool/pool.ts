// A chain endpoint's pool of nodes: which node may take a call now (role, retained
// height, rotation, breaker, strategy) and what the pool knows of the chain (the
// PoolView plugins classify against). Health probing lives in health.ts.

import type { ChainConfig } from '../config/types.js';
import type { PoolView, Routing } from '../plugin/contract.js';
import type { PreviousHead } from './head-check.js';
import { DISPUTED, PoolNode } from './pool-node.js';
import { createStrategy, type Strategy } from './strategies.js';
import { UpstreamNode, type UpstreamOptions, DEFAULT_UPSTREAM_OPTIONS } from './upstream.js';

export interface PoolEvents {
  /** A node left or re-entered rotation. */
  rotation?(pool: NodePool, node: PoolNode, inRotation: boolean, reason: string): void;
  breaker?(pool: NodePool, node: PoolNode, state: 'closed' | 'half-open' | 'open'): void;
  /** A node was ejected as an outlier (outliers.ts), until `until` (the pool's clock). */
  ejected?(pool: NodePool, node: PoolNode, until: number): void;
}

/** What probes decided of one node: the part of its state a cluster's primary shares with the workers. */
export interface NodeHealth {
  readonly name: string;
  readonly role: PoolNode['role'];
  readonly head: number | undefined;
  readonly earliest: number | undefined;
  readonly headHash: string | undefined;
  readonly implausible: string;
  readonly trustedHead: number | undefined;
  readonly trustedAt: number;
  readonly lag: number;
  readonly consecutiveProbeFailures: number;
  readonly inRotation: boolean;
  readonly outReason: string;
  readonly described: PoolNode['described'];
  readonly describedAt: number | undefined;
  readonly wrongChain: string;
  readonly mismatches: PoolNode['mismatches'];
}

/** Nodes a call has gone to already (a Set, or the attempt loop's own record). */
export interface Tried {
  has(node: PoolNode): boolean;
}

/** A pool's health after a probe round, as the one prober of a cluster decided it. */
export interface PoolHealth {
  readonly chain: string;
  readonly nodes: readonly NodeHealth[];
  readonly view: PoolView;
  readonly headSeenAt: number;
  readonly servedHead: number | undefined;
  readonly chainId: string | undefined;
}

export class NodePool {
  readonly chain: string;
  readonly nodes: readonly PoolNode[];
  readonly archiveOnly: boolean;
  private readonly strategy: Strategy;
  private readonly scratch: PoolNode[];
  private currentView: PoolView = { head: undefined, fullEarliest: undefined };
  /**
   * The head calls at `latest` are served at: the highest block a majority of the nodes
   * in rotation hold, never lower than one it was before (undefined before any probe).
   */
  servedHead: number | undefined;
  /** Some node in rotation is ahead of the served head: calls at `latest` are pinned to it. */
  aheadOfServed = false;
  /** When the view's head was last computed from believed heads. */
  private headSeenAt = 0;
  /** The chain its nodes must be on: config's chainId, else the first id a majority of them said (src/pool/describe.ts). */
  chainId: string | undefined;

  constructor(
    readonly config: ChainConfig,
    readonly events: PoolEvents = {},
    upstreamOptions: UpstreamOptions = DEFAULT_UPSTREAM_OPTIONS,
    /** Nodes of the pool this one replaces on a reload, kept with their health and breakers. */
    adopt?: readonly PoolNode[],
    readonly now: () => number = Date.now,
  ) {
    this.chain = config.name;
    this.chainId = config.chainId;
    this.archiveOnly = config.archiveOnly;
    this.strategy = createStrategy(config.strategy);
    this.nodes =
      adopt ??
      config.nodes.map((n) => {
        const node = new PoolNode(n, new UpstreamNode(n.url, upstreamOptions, n.headers), config.breaker);
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

  /** The head before the next round, and when it was seen: what new heads are judged by. */
  get previousHead(): PreviousHead {
    return { head: this.currentView.head, at: this.headSeenAt };
  }

  /**
   * Recompute the view after probes (allocates once per probe round, not per call).
   * The head is the highest of the heads believed: an implausible one counts for nothing.
   */
  refreshView(): void {
    let head: number | undefined;
    let fullEarliest: number | undefined;
    for (const n of this.nodes) {
      if (n.head !== undefined && n.consecutiveProbeFailures === 0 && n.implausible === '' && (head === undefined || n.head > head)) {
        head = n.head;
      }
      if (n.role === 'full' && n.earliest !== undefined && (fullEarliest === undefined || n.earliest < fullEarliest)) {
        fullEarliest = n.earliest;
      }
    }
    if (head !== undefined) this.headSeenAt = this.now();
    this.currentView = { head, fullEarliest };
  }

  /** After a probe round's rotation is decided: the served head moves on (never back). */
  updateServedHead(): void {
    const heads: number[] = [];
    for (const n of this.nodes) if (n.inRotation && n.head !== undefined && n.consecutiveProbeFailures === 0) heads.push(n.head);
    if (heads.length === 0) return;
    heads.sort((a, b) => b - a);
    // The k-th highest head, k a majority: at least k nodes hold it.
    const majority = heads[heads.length >> 1] as number;
    if (this.servedHead === undefined || majority > this.servedHead) this.servedHead = majority;
    this.aheadOfServed = (heads[0] as number) > this.servedHead;
  }

  /**
   * A node answered a read of the head with `height`: it holds that block. Believed
   * when within maxLag of the best head the probes believe (a node's word alone cannot
   * move the served head further than that), it raises the node's head and the served
   * head at once, so the next calls at latest see it too. False when not believed.
   */
  heardHead(node: PoolNode, height: number): boolean {
    const best = this.currentView.head;
    if (best === undefined || height > best + this.config.health.maxLag || !node.inRotation) return false;
    if (node.head === undefined || height > node.head) node.head = height;
    if (this.servedHead === undefined || height > this.servedHead) this.servedHead = height;
    return true;
  }

  /** What the last probe round decided (a cluster's primary sends it to every worker). */
  health(): PoolHealth {
    return {
      chain: this.chain,
      nodes: this.nodes.map((n) => ({
        name: n.name,
        role: n.role,
        head: n.head,
        earliest: n.earliest,
        headHash: n.headHash,
        implausible: n.implausible,
        trustedHead: n.trustedHead,
        trustedAt: n.trustedAt,
        lag: n.lag,
        consecutiveProbeFailures: n.consecutiveProbeFailures,
        inRotation: n.inRotation,
        outReason: n.outReason,
        described: n.described,
        describedAt: n.describedAt,
        wrongChain: n.wrongChain,
        mismatches: n.mismatches,
      })),
      view: this.currentView,
      headSeenAt: this.headSeenAt,
      servedHead: this.servedHead,
      chainId: this.chainId,
    };
  }

  /**
   * Take the health another process's prober decided (a worker of a cluster probes
   * nothing itself). Heads this process heard since only ever stay higher; the served
   * head never goes back. Nodes are matched by name; unknown ones are left alone.
   */
  adoptHealth(h: PoolHealth): void {
    const byName = new Map(h.nodes.map((n) => [n.name, n]));
    for (const node of this.nodes) {
      const n = byName.get(node.name);
      if (n === undefined) continue;
      node.role = n.role;
      node.head =
        node.head !== undefined && n.head !== undefined && node.head > n.head && n.consecutiveProbeFailures === 0 ? node.head : n.head;
      node.earliest = n.earliest;
      node.headHash = n.headHash;
      node.implausible = n.implausible;
      node.trustedHead = n.trustedHead;
      node.trustedAt = n.trustedAt;
      node.lag = n.lag;
      node.consecutiveProbeFailures = n.consecutiveProbeFailures;
      // An ejection is this process's own finding (its calls timed out): it holds until it is over.
      const ejected = node.ejectedUntil > this.now() && !node.inRotation;
      node.inRotation = ejected ? false : n.inRotation;
      if (!ejected) node.outReason = n.outReason;
      node.described = n.described;
      node.describedAt = n.describedAt;
      node.wrongChain = n.wrongChain;
      node.mismatches = n.mismatches;
    }
    this.currentView = h.view;
    this.headSeenAt = h.headSeenAt;
    this.chainId = h.chainId;
    if (h.servedHead !== undefined && (this.servedHead === undefined || h.servedHead > this.servedHead)) this.servedHead = h.servedHead;
    const served = this.servedHead;
    this.aheadOfServed = served !== undefined && this.nodes.some((n) => n.inRotation && n.head !== undefined && n.head > served);
  }

  private retains(n: PoolNode, height: number | undefined): boolean {
    if (height === undefined) return true;
    // Heights above the head are left to the node to refuse: that is the chain's answer.
    if (n.earliest !== undefined) return n.earliest <= height;
    return n.role === 'archive';
  }

  private collect(
    routing: Routing,
    tried: Tried | undefined,
    role: 'full' | 'archive' | 'any',
    now: number,
    atHead: number | undefined,
  ): number {
    let count = 0;
    for (const n of this.nodes) {
      if (role !== 'any' && n.role !== role) continue;
      if (tried !== undefined && tried.has(n)) continue;
      if (!n.available(now)) continue;
      if (routing.minHeight !== undefined && !this.retains(n, routing.minHeight)) continue;
      if (atHead !== undefined && (n.head === undefined || n.head < atHead)) continue;
      this.scratch[count++] = n;
    }
    return count;
  }

  /**
   * The node for a call, or undefined when none can take it now. Ordinary calls go to
   * full nodes, with archive nodes as the last resort unless `lastResort` is false (a
   * key without archive access asking what only archive nodes may still hold); archive
   * calls go to nodes that hold the state (archive nodes, or full nodes known to retain
   * the height). `atHead`: only nodes whose head has reached it (calls at the served head),
   * unless `below` and none of them can take the call: then a node in rotation below it
   * (the one that raised the served head went down; the caller sends the call pinned to
   * it, and a node that lacks the block yet says so). The one place nodes are chosen.
   */
  select(routing: Routing, tried?: Tried, atHead?: number, lastResort = true, below = false): PoolNode | undefined {
    const node = this.pick(routing, tried, atHead, lastResort);
    if (node !== undefined || !below || atHead === undefined) return node;
    return this.pick(routing, tried, undefined, lastResort);
  }

  /** The full nodes that may take a call now (a submit goes to each of them). */
  fullNodes(): PoolNode[] {
    const now = this.now();
    return this.nodes.filter((n) => n.role === 'full' && n.available(now));
  }

  private pick(routing: Routing, tried: Tried | undefined, atHead: number | undefined, lastResort: boolean): PoolNode | undefined {
    const now = this.now();
    let count: number;
    if (this.archiveOnly) count = this.collect(routing, tried, 'archive', now, atHead);
    else if (routing.archive) {
      count = routing.minHeight !== undefined ? this.collect(routing, tried, 'any', now, atHead) : 0;
      if (count === 0) count = this.collect(routing, tried, 'archive', now, atHead);
    } else {
      count = this.collect(routing, tried, 'full', now, atHead);
      if (count === 0 && lastResort) count = this.collect(routing, tried, 'archive', now, atHead);
    }
    if (count === 0) return undefined;
    return count === 1 ? this.scratch[0] : this.strategy.pick(this.scratch, count);
  }

  /**
   * Take a node out of rotation until `until` (the pool's clock): the majority disputed
   * its answers. Told once, through the rotation event; probes bring it back after.
   */
  disputed(node: PoolNode, until: number): void {
    node.disputedUntil = until;
    if (!node.inRotation) return;
    node.inRotation = false;
    node.outReason = DISPUTED;
    this.events.rotation?.(this, node, false, DISPUTED);
  }

  /**
   * Take a node out of rotation until `until` (the pool's clock): it timed out on calls
   * other nodes answered (outliers.ts). Told once, through the rotation event; probes
   * bring it back after.
   */
  eject(node: PoolNode, until: number, reason: string): void {
    node.ejectedUntil = until;
    this.events.ejected?.(this, node, until);
    if (!node.inRotation) return;
    node.inRotation = false;
    node.outReason = reason;
    this.events.rotation?.(this, node, false, reason);
  }

  /** True when at least one node could take an ordinary call now. */
  hasUsableNode(): boolean {
    const now = this.now();
    return this.nodes.some((n) => n.available(now) && (!this.archiveOnly || n.role === 'archive'));
  }

  /**
   * The same with operator holds left aside: what readiness asks. Cordoning every node
   * of a chain (a hold shared by every instance) must not take every instance out of
   * its load balancer, and with it every other chain.
   */
  hasHealthyNode(): boolean {
    const now = this.now();
    return this.nodes.some((n) => n.healthy(now) && (!this.archiveOnly || n.role === 'archive'));
  }

  async close(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.close()));
  }
}
