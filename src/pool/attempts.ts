// Bookkeeping of one client request's attempts across nodes: never the same node
// twice, at most `maxAttempts`, nothing after the deadline, and which table error
// to answer when every attempt failed (503 none tried, 504 all timed out, 502 else).

import { GatewayError } from '../errors.js';
import type { Routing } from '../plugin.js';
import type { NodePool } from './pool.js';
import type { PoolNode } from './pool-node.js';

export class Attempts {
  readonly tried = new Set<PoolNode>();
  count = 0;
  private timeouts = 0;
  private failures = 0;

  constructor(
    readonly pool: NodePool,
    readonly deadline: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The next node to try for this routing, or undefined when the budget is spent. */
  next(routing: Routing): PoolNode | undefined {
    if (this.count >= this.pool.config.maxAttempts || this.remaining() <= 0) return undefined;
    const node = this.pool.select(routing, this.tried);
    if (node !== undefined) {
      this.tried.add(node);
      this.count++;
    }
    return node;
  }

  remaining(): number {
    return this.deadline - this.now();
  }

  timeoutFor(): number {
    return Math.max(1, Math.min(this.pool.config.attemptTimeoutMs, this.remaining()));
  }

  failed(timedOut: boolean): void {
    if (timedOut) this.timeouts++;
    else this.failures++;
  }

  /** The error for calls no attempt could answer. */
  error(): GatewayError {
    if (this.timeouts + this.failures === 0) {
      return new GatewayError('NO_HEALTHY_NODE', { headers: { 'retry-after': '1' } });
    }
    if (this.failures === 0 || (this.remaining() <= 0 && this.timeouts > 0)) return new GatewayError('UPSTREAM_TIMEOUT');
    return new GatewayError('UPSTREAM_FAILED');
  }
}
