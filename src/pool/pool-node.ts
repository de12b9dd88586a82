// One node as its pool sees it: its clients (HTTP, and gRPC made on first use), what
// probes learned (head, retention, lag), whether it is in rotation, its circuit
// breaker, and a latency EWMA. Mechanism only: the plugin decides what an answer is,
// the attempt loop decides whose fault a failure was and tells the breaker (opossum,
// used as a state machine: attempts run outside it, and only outcomes that are the
// node's own are recorded; while it is closed they are counted by breaker-window.ts).

import CircuitBreaker from 'opossum';
import type { BreakerConfig, NodeConfig } from '../config/types.js';
import type { NodeClient, NodeDescription, NodeRole } from '../plugin/contract.js';

import { BreakerWindow } from './breaker-window.js';
import { GrpcClient } from './grpc-client.js';
import type { UpstreamNode } from './upstream.js';

export type BreakerState = 'closed' | 'half-open' | 'open';

/**
 * An operator's hold on a node: `cordoned` takes no new calls (calls bound to state it
 * holds, like filter polls, and its WebSocket subscriptions stay); `draining` takes
 * none at all and its subscriptions move to other nodes. Calls in flight finish.
 */
export type NodeHold = 'cordoned' | 'draining';

/** Something a node said of itself that config or the other nodes contradict (src/pool/describe.ts). */
export interface Mismatch {
  readonly kind: 'chain' | 'role';
  /** What the node said (the chain id, the role): a mismatch is logged once per thing said. */
  readonly said: string;
  readonly text: string;
}

/** Why a node the majority disputed is out of rotation. */
export const DISPUTED = 'disputed by the majority';

const EWMA_ALPHA = 0.2;
const SUCCEEDED = (): Promise<void> => Promise.resolve();
const THROTTLE_BACKOFF_MS = 1_000;

export class PoolNode implements NodeClient {
  readonly name: string;
  /** The configured role, else the one its description shows (full until then). */
  role: NodeRole;
  readonly weight: number;
  readonly priority: number;
  /** Head height from the last good probe. */
  head: number | undefined;
  /** Lowest retained height, when the protocol reports it. */
  earliest: number | undefined;
  headHash: string | undefined;
  /** Why its head is not believed (head-check.ts), '' when it is. */
  implausible = '';
  /** The last head believed, and when: what the next head may grow from. */
  trustedHead: number | undefined;
  trustedAt = 0;
  lag = 0;
  consecutiveProbeFailures = 0;
  /** False while probes fail or the node lags; readmitted when healthy and caught up. */
  inRotation = true;
  /** Why the node is out of rotation ('' when in). */
  outReason = '';
  /** The operator's hold (cordon or drain), set by name from the shared hold state; undefined: none. */
  hold: NodeHold | undefined;
  throttledUntil = 0;
  /** Out of rotation until then for disagreeing with the majority (consensus.ts); probes bring it back after. */
  disputedUntil = 0;
  /** Timeouts of its own in a row, the last one's time, its ejections so far, and until when the last one lasts (outliers.ts). */
  slowInRow = 0;
  lastSlowAt = 0;
  ejections = 0;
  ejectedUntil = 0;
  /** Its calls compared by agreement in the current window, and how many the majority disputed. */
  readonly agreement = { since: 0, compared: 0, disputed: 0 };
  /** What the node said it serves at its last description, and when (the pool's clock); undefined before. */
  described: NodeDescription | undefined;
  describedAt: number | undefined;
  /** Why it is taken for another chain's node ('' when it is not): it stays out of rotation. */
  wrongChain = '';
  mismatches: readonly Mismatch[] = [];
  /** Mismatches already logged (kind=said). */
  readonly loggedMismatches = new Set<string>();
  /** Smoothed latency of successful calls; undefined until the first one. */
  ewmaMs: number | undefined;
  /** Smoothed absolute deviation of that latency (how much it varies). */
  ewmaDevMs = 0;
  /** Running weight of the smooth weighted round-robin. */
  currentWeight = 0;
  readonly breaker: CircuitBreaker<[() => Promise<unknown>], unknown>;
  /** The closed breaker's counts of this node's calls and failures. */
  private readonly window: BreakerWindow;
  private h2: GrpcClient | undefined;
  /** A half-open breaker lets one trial through: taken while an attempt on this node is out. */
  private trialTaken = false;

  constructor(
    readonly config: NodeConfig,
    readonly http: UpstreamNode,
    breaker: BreakerConfig,
  ) {
    this.name = config.name;
    this.role = config.role ?? 'full';
    this.weight = config.weight;
    this.priority = config.priority;
    this.window = new BreakerWindow(breaker.rollingWindowMs, breaker.volumeThreshold, breaker.errorThresholdPercentage);
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
    });
  }

  get breakerState(): BreakerState {
    if (this.breaker.closed) return 'closed';
    return this.breaker.halfOpen ? 'half-open' : 'open';
  }

  /** May a new call be sent here now? Not held, probes and breaker agree, no 429 backoff, a half-open breaker's one trial not taken. */
  available(now: number): boolean {
    return this.hold === undefined && this.healthy(now);
  }

  /** May a call bound to state this node holds (a filter poll) be sent here? A cordon lets it; a drain does not. */
  availableForState(now: number): boolean {
    return this.hold !== 'draining' && this.healthy(now);
  }

  /** Could it take calls, operator holds aside? */
  healthy(now: number): boolean {
    if (!this.inRotation || now < this.throttledUntil) return false;
    return this.breaker.closed || (this.breaker.pendingClose && !this.trialTaken);
  }

  /** Requests and gRPC calls to the node not yet answered (health probes included). */
  get inFlight(): number {
    return this.http.active + (this.h2?.active ?? 0);
  }

  /** An attempt goes to this node: on a half-open breaker it is the trial. */
  take(): void {
    if (!this.breaker.closed) this.trialTaken = true;
  }

  /**
   * How an attempt ended, as the breaker counts it: 'ok', the node's own failure, or
   * `undefined` when it was neither (the request's doing, the client leaving, a 429).
   */
  settle(outcome: 'ok' | Error | undefined): void {
    this.trialTaken = false;
    if (outcome !== undefined) this.count(outcome);
  }

  private count(outcome: 'ok' | Error): void {
    if (this.breaker.closed) {
      if (this.window.record(outcome !== 'ok', performance.now())) this.breaker.open();
      return;
    }
    this.breaker.fire(outcome === 'ok' ? SUCCEEDED : () => Promise.reject(outcome)).catch(() => undefined);
  }

  /** Failures of the node its closed breaker counts now (those in its window). */
  get breakerFailures(): number {
    return this.window.failuresAt(performance.now());
  }

  /** The node's HTTP/2 client for gRPC calls, connected on first use. */
  get grpc(): GrpcClient {
    return (this.h2 ??= new GrpcClient(this.config.url, this.config.headers));
  }

  /** A failure known only after the call was answered (a relayed stream that broke): the breaker counts it. */
  recordFailure(err: Error): void {
    this.count(err);
  }

  observeLatency(ms: number): void {
    if (this.ewmaMs === undefined) {
      this.ewmaMs = ms;
      return;
    }
    this.ewmaDevMs += EWMA_ALPHA * (Math.abs(ms - this.ewmaMs) - this.ewmaDevMs);
    this.ewmaMs += EWMA_ALPHA * (ms - this.ewmaMs);
  }

  /**
   * About the 95th percentile of this node's recent latency (mean plus twice the mean
   * deviation, as TCP estimates its retransmit timeout); undefined before any answer.
   */
  get slowMs(): number | undefined {
    return this.ewmaMs === undefined ? undefined : this.ewmaMs + 2 * this.ewmaDevMs;
  }

  throttle(now: number): void {
    this.throttledUntil = now + THROTTLE_BACKOFF_MS;
  }

  async close(): Promise<void> {
    this.breaker.shutdown();
    await Promise.all([this.http.close(), this.h2?.close()]);
  }
}
