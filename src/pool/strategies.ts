// Choosing one node among those eligible for a call. Each strategy is a function
// over a candidate list the pool fills (no allocation per pick).
// round-robin: equal nodes. weighted: unequal capacity. least-latency: nodes of
// differing speed or distance (EWMA, with some exploration so a recovered node is
// measured again). priority: backups that only take traffic when primaries are out.

import type { StrategyName } from '../config/types.js';
import type { PoolNode } from './pool-node.js';

export interface Strategy {
  pick(candidates: readonly PoolNode[], count: number): PoolNode;
}

class RoundRobin implements Strategy {
  private next = 0;
  pick(c: readonly PoolNode[], n: number): PoolNode {
    const i = this.next++ % n;
    if (this.next > 1e9) this.next = 0;
    return c[i] as PoolNode;
  }
}

/** nginx's smooth weighted round-robin: exact proportions, no bursts to one node. */
class Weighted implements Strategy {
  pick(c: readonly PoolNode[], n: number): PoolNode {
    let total = 0;
    let best = c[0] as PoolNode;
    for (let i = 0; i < n; i++) {
      const node = c[i] as PoolNode;
      node.currentWeight += node.weight;
      total += node.weight;
      if (node.currentWeight > best.currentWeight) best = node;
    }
    best.currentWeight -= total;
    return best;
  }
}

export const EXPLORATION = 0.05;

class LeastLatency implements Strategy {
  constructor(private readonly random: () => number) {}
  pick(c: readonly PoolNode[], n: number): PoolNode {
    if (n > 1 && this.random() < EXPLORATION) return c[Math.floor(this.random() * n) % n] as PoolNode;
    let best = c[0] as PoolNode;
    for (let i = 1; i < n; i++) {
      const node = c[i] as PoolNode;
      // An unmeasured node counts as fastest so it gets measured.
      if ((node.ewmaMs ?? 0) < (best.ewmaMs ?? 0)) best = node;
    }
    return best;
  }
}

class Priority implements Strategy {
  private readonly rr = new RoundRobin();
  pick(c: readonly PoolNode[], n: number): PoolNode {
    let top = Infinity;
    for (let i = 0; i < n; i++) top = Math.min(top, (c[i] as PoolNode).priority);
    // Compact the top priority group to the front of the scratch list.
    let m = 0;
    const list = c as PoolNode[];
    for (let i = 0; i < n; i++) {
      const node = list[i] as PoolNode;
      if (node.priority === top) list[m++] = node;
    }
    return this.rr.pick(list, m);
  }
}

export function createStrategy(name: StrategyName, random: () => number = Math.random): Strategy {
  switch (name) {
    case 'round-robin':
      return new RoundRobin();
    case 'weighted':
      return new Weighted();
    case 'least-latency':
      return new LeastLatency(random);
    case 'priority':
      return new Priority();
  }
}
