// One node as its pool sees it: the upstream client, what probes learned (head,
// retention, lag), whether it is in rotation, its circuit breaker, and a latency
// EWMA. Mechanism only: the plugin decides what a failure is, the pool decides
// what to do about it.

import CircuitBreaker from 'opossum';
import type { BreakerConfig, NodeConfig } from '../config/types.js';
import type { UpstreamNode } from './upstream.js';

export type BreakerState = 'closed' | 'half-open' | 'open';

/** Thrown inside a breaker's action for an answer the plugin judged a node failure. */
export class NodeFailure extends Error {
  constructor(
    readonly reason: 'timeout' | 'connect' | 'too-large' | 'io' | 'status' | 'garbage',
    message: string,
  ) {
    super(message);
    this.name = 'NodeFailure';
  }
}

/** Thrown for a 429 from a node: retried elsewhere, never counted by the breaker. */
export class NodeThrottled extends Error {
  constructor() {
    super('node answered 429');
    this.name = 'NodeThrottled';
  }
}

const EWMA_ALPHA = 0.2;
const THROTTLE_BACKOFF_MS = 1_000;

export class PoolNode {
  readonly name: string;
  readonly role: NodeConfig['role'];
  readonly weight: number;
  readonly priority: number;
  /** Head height from the last good probe. */
  head: number | undefined;
  /** Lowest retained height, when the protocol reports it. */
  earliest: number | undefined;
  headHash: string | undefined;
  lag = 0;
  consecutiveProbeFailures = 0;
  /** False while probes fail or the node lags; readmitted when healthy and caught up. */
  inRotation = true;
  /** Why the node is out of rotation ('' when in). */
  outReason = '';
  throttledUntil = 0;
  /** Smoothed latency of successful calls; undefined until the first one. */
  ewmaMs: number | undefined;
  /** Running weight of the smooth weighted round-robin. */
  currentWeight = 0;
  readonly breaker: CircuitBreaker<[() => Promise<unknown>], unknown>;

  constructor(
    readonly config: NodeConfig,
    readonly upstream: UpstreamNode,
    breaker: BreakerConfig,
  ) {
    this.name = config.name;
    this.role = config.role;
    this.weight = config.weight;
    this.priority = config.priority;
    this.breaker = new CircuitBreaker((fn: () => Promise<unknown>) => fn(), {
      timeout: false,
      errorThresholdPercentage: breaker.errorThresholdPercentage,
      volumeThreshold: breaker.volumeThreshold,
      rollingCountTimeout: breaker.rollingWindowMs,
      rollingCountBuckets: 10,
      resetTimeout: breaker.resetTimeoutMs,
      // Latency percentiles would keep every call's latency for the window and sort them
      // all on each failure; snapshots recompute stats every bucket. Neither is read here.
      rollingPercentilesEnabled: false,
      enableSnapshots: false,
      // A 429 is the node asking for less, not the node breaking.
      errorFilter: (err: unknown) => err instanceof NodeThrottled,
    });
  }

  get breakerState(): BreakerState {
    if (this.breaker.closed) return 'closed';
    return this.breaker.halfOpen ? 'half-open' : 'open';
  }

  /** May a call be sent here now? (Probes and breakers agree, no 429 backoff.) */
  available(now: number): boolean {
    if (!this.inRotation || now < this.throttledUntil) return false;
    return this.breaker.closed || this.breaker.pendingClose;
  }

  /** Run one call through the breaker; `fn` throws NodeFailure/NodeThrottled for bad answers. */
  call<T>(fn: () => Promise<T>): Promise<T> {
    return this.breaker.fire(fn) as Promise<T>;
  }

  observeLatency(ms: number): void {
    this.ewmaMs = this.ewmaMs === undefined ? ms : this.ewmaMs + EWMA_ALPHA * (ms - this.ewmaMs);
  }

  throttle(now: number): void {
    this.throttledUntil = now + THROTTLE_BACKOFF_MS;
  }

  close(): Promise<void> {
    this.breaker.shutdown();
    return this.upstream.close();
  }
}
