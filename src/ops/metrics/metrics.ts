// Every metric the gateway exports, declared here once with its help text, in one
// registry. Labels come from small fixed sets (chain, node, method label, outcome,
// tier, reason): never a key, account, address or URL. Node state gauges are read
// from the live pools at scrape time, so they are never stale or half-updated.

import { Counter, Gauge, Registry, collectDefaultMetrics, type Aggregator } from 'prom-client';
import type { NodePool } from '../../pool/pool.js';
import { FastCounter, FastHistogram } from './fast-series.js';

/** WebSocket state of one chain endpoint, read at scrape time. */
export interface WsGauges {
  readonly chain: string;
  readonly connections: number;
  readonly subscriptions: number;
  readonly nodeSubscriptions: number;
}

const BREAKER_VALUE = { closed: 0, 'half-open': 1, open: 2 } as const;
const HOLD_VALUE = { cordoned: 1, draining: 2 } as const;
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Metrics {
  readonly registry = new Registry();
  private pools: () => Iterable<NodePool> = () => [];

  // Updated on every request: plain series, no label hashing (fast-series.ts).
  readonly requests = new FastCounter(
    'noderouter_requests_total',
    'Client requests answered, by chain endpoint, method label (a batch: its first item), outcome (ok, chain_error or an error code) and transport (http, ws, grpc).',
    ['chain', 'method', 'outcome', 'transport'],
    this.registry,
  );

  readonly duration = new FastHistogram(
    'noderouter_request_duration_seconds',
    'Time from receiving a client request to answering it, by chain endpoint, method label (first item of a batch) and outcome.',
    ['chain', 'method', 'outcome'],
    LATENCY_BUCKETS,
    this.registry,
  );

  readonly upstream = new FastCounter(
    'noderouter_upstream_requests_total',
    'Requests sent to nodes, by chain, node and outcome (ok, chain_error, pruned, failure, timeout, throttled, cancelled: a hedge that lost or a client that left).',
    ['chain', 'node', 'outcome'],
    this.registry,
  );

  readonly nodeCallsPerCall = new FastHistogram(
    'noderouter_node_calls_per_call',
    "Node calls one client call (each batch item) caused, by chain endpoint: 1 for most calls; more for getLogs parts, retries, hedges, agreement and broadcasts, up to the tier's nodeCalls; 0 for a call that shared another's in flight. Cache hits are not counted.",
    ['chain'],
    [0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64],
    this.registry,
  );

  readonly upstreamDuration = new FastHistogram(
    'noderouter_upstream_duration_seconds',
    'Time a node took to answer one request, by chain and node.',
    ['chain', 'node'],
    LATENCY_BUCKETS,
    this.registry,
  );

  readonly retries = new Counter({
    name: 'noderouter_retries_total',
    help: 'Calls moved to another node, by chain and reason (failure, throttled, pruned = archive fallback).',
    labelNames: ['chain', 'reason'] as const,
    registers: [this.registry],
  });

  readonly hedges = new Counter({
    name: 'noderouter_hedges_total',
    help: 'Hedged reads, by chain and result (sent: a second node was asked; won: its answer came first).',
    labelNames: ['chain', 'result'] as const,
    registers: [this.registry],
  });

  readonly stateMisses = new Counter({
    name: 'noderouter_state_misses_total',
    help: 'Calls using node state (filters) the gateway could not keep on its node, by chain and reason (unknown, node_gone, expired).',
    labelNames: ['chain', 'reason'] as const,
    registers: [this.registry],
  });

  readonly broadcasts = new Counter({
    name: 'noderouter_broadcast_results_total',
    help: 'Submits (transactions) sent to every full node, by chain, node and result (accepted, known, refused, failed).',
    labelNames: ['chain', 'node', 'result'] as const,
    registers: [this.registry],
  });

  readonly consensus = new Counter({
    name: 'noderouter_consensus_total',
    help: 'Calls checked by agreement across nodes, by chain and outcome (agreed; majority, archive: answered without enough agreeing; refused: answered "nodes disagree"; failed: no node answered).',
    labelNames: ['chain', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly disagreements = new Counter({
    name: 'noderouter_node_disagreements_total',
    help: "Answers of a node that differed from the majority's on a call checked by agreement, by chain and node.",
    labelNames: ['chain', 'node'] as const,
    registers: [this.registry],
  });

  readonly splits = new Counter({
    name: 'noderouter_split_calls_total',
    help: 'Calls split into parts (getLogs ranges), by chain and why (limit: over the chain limit; oversize: a node refused it as too big).',
    labelNames: ['chain', 'reason'] as const,
    registers: [this.registry],
  });

  readonly archiveCalls = new Counter({
    name: 'noderouter_archive_calls_total',
    help: 'Calls classified as needing archive state, by chain.',
    labelNames: ['chain'] as const,
    registers: [this.registry],
  });

  readonly rejections = new Counter({
    name: 'noderouter_rejections_total',
    help: 'Calls refused by limits, by chain, tier and reason (rate, daily, monthly, batch, connections, subscriptions; invalid: a keyed request that became no call, charged against the rate).',
    labelNames: ['chain', 'tier', 'reason'] as const,
    registers: [this.registry],
  });

  readonly restricted = new Counter({
    name: 'noderouter_restriction_refusals_total',
    help: "Requests refused by their key's restrictions, by chain and reason (origin, ip, referrer, user_agent), and calls by its contracts list (contract).",
    labelNames: ['chain', 'reason'] as const,
    registers: [this.registry],
  });

  readonly keyCache = new FastCounter(
    'noderouter_key_cache_lookups_total',
    'API key lookups by the key cache, by result (hit or miss; a miss asks the store).',
    ['result'],
    this.registry,
  );

  readonly transitions = new Counter({
    name: 'noderouter_node_transitions_total',
    help: 'Nodes leaving (to="out") or re-entering (to="in") rotation, by chain and node.',
    labelNames: ['chain', 'node', 'to'] as const,
    registers: [this.registry],
  });

  readonly ejections = new Counter({
    name: 'noderouter_node_ejections_total',
    help: 'Nodes ejected from rotation as outliers (timeouts in a row on calls other nodes answered), by chain and node.',
    labelNames: ['chain', 'node'] as const,
    registers: [this.registry],
  });

  readonly breakerTransitions = new Counter({
    name: 'noderouter_breaker_transitions_total',
    help: 'Circuit breaker state changes, by chain, node and new state.',
    labelNames: ['chain', 'node', 'state'] as const,
    registers: [this.registry],
  });

  readonly answerChecks = new Counter({
    name: 'noderouter_answer_checks_total',
    help: 'Node answers checked against themselves on chains with verify on (EVM: block hashes recomputed), by chain, node, method (probe: the head probe) and result (verified, mismatch).',
    labelNames: ['chain', 'node', 'method', 'result'] as const,
    registers: [this.registry],
  });

  readonly probes = new Counter({
    name: 'noderouter_health_probes_total',
    help: 'Health probes sent to nodes, by chain, node and result (ok or failed).',
    labelNames: ['chain', 'node', 'result'] as const,
    registers: [this.registry],
  });

  readonly configReloads = new Counter({
    name: 'noderouter_config_reloads_total',
    help: 'Configuration reloads, by result (ok or failed).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly storeFallbacks = new Counter({
    name: 'noderouter_store_fallbacks_total',
    help: 'Calls decided by the store failure policy because the shared store (Redis) did not answer, by policy (fail-open or fail-closed).',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  });

  readonly cacheLookups = new FastCounter(
    'noderouter_cache_lookups_total',
    'Response cache lookups of cacheable calls, by chain and result (hit or miss).',
    ['chain', 'result'],
    this.registry,
  );

  readonly coalesced = new Counter({
    name: 'noderouter_cache_coalesced_total',
    help: 'Calls that shared an identical call already in flight instead of asking a node, by chain.',
    labelNames: ['chain'] as const,
    registers: [this.registry],
  });

  readonly wsNotifications = new Counter({
    name: 'noderouter_ws_notifications_total',
    help: 'Subscription notifications delivered to WebSocket clients, by chain endpoint.',
    labelNames: ['chain'] as const,
    registers: [this.registry],
  });

  readonly wsCloses = new Counter({
    name: 'noderouter_ws_closes_total',
    help: 'WebSocket connections closed, by chain endpoint and close code (1000 normal, 1001 going away, 1006 dropped, 1008 policy, 1009 too big, 1013 no node left).',
    labelNames: ['chain', 'code'] as const,
    registers: [this.registry],
  });

  readonly subscriptionMoves = new Counter({
    name: 'noderouter_subscription_moves_total',
    help: 'Node subscriptions moved off a node that died, lagged or left the pool, by chain and result (moved, or dropped when no node was left).',
    labelNames: ['chain', 'result'] as const,
    registers: [this.registry],
  });

  readonly traceSpans = new Counter({
    name: 'noderouter_trace_spans_exported_total',
    help: 'Spans sent to the OTLP collector (tracing.endpoint), by result (ok, or failed: the collector refused them or could not be reached).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  private storeUp: () => boolean = () => true;
  private inFlightNow: () => Iterable<readonly [string, number]> = () => [];
  private wsState: () => Iterable<WsGauges> = () => [];
  private cacheBytes: () => number = () => 0;

  constructor() {
    // prom-client calls collect() with the gauge as `this`; arrow functions read our state.
    const storeUp = (): boolean => this.storeUp();
    const pools = (): Iterable<NodePool> => this.pools();
    const cacheBytes = (): number => this.cacheBytes();
    const wsState = (): Iterable<WsGauges> => this.wsState();
    const inFlightNow = (): Iterable<readonly [string, number]> => this.inFlightNow();
    new Gauge({
      name: 'noderouter_requests_in_flight',
      help: 'Client requests being handled right now, by chain endpoint.',
      labelNames: ['chain'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [chain, n] of inFlightNow()) this.set({ chain }, n);
      },
    });
    const wsGauge = (name: string, help: string, read: (g: WsGauges) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['chain'] as const,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const g of wsState()) this.set({ chain: g.chain }, read(g));
        },
      });
    };
    wsGauge('noderouter_ws_connections', 'Open WebSocket client connections, by chain endpoint.', (g) => g.connections);
    wsGauge('noderouter_ws_subscriptions', 'Subscriptions WebSocket clients hold, by chain endpoint.', (g) => g.subscriptions);
    wsGauge(
      'noderouter_ws_node_subscriptions',
      'Subscriptions held on nodes for those clients (identical ones share one), by chain endpoint.',
      (g) => g.nodeSubscriptions,
    );
    new Gauge({
      name: 'noderouter_cache_bytes',
      help: 'Bytes held by the in-memory response cache (bounded by cache.maxBytes).',
      registers: [this.registry],
      collect() {
        this.set(cacheBytes());
      },
    });
    new Gauge({
      name: 'noderouter_store_up',
      help: 'Whether the hot state (Redis) answers (1) or not (0); the memory hot state is always up.',
      registers: [this.registry],
      aggregator: 'min',
      collect() {
        this.set(storeUp() ? 1 : 0);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'noderouter_' });
    // In a cluster, node state is the primary's probers' (workers only copy it): 'first' is the primary's.
    const nodeGauge = (
      name: string,
      help: string,
      read: (pool: NodePool) => Array<[string, number | undefined]>,
      aggregator: Aggregator = 'first',
    ): void => {
      new Gauge({
        name,
        help,
        labelNames: ['chain', 'node'] as const,
        registers: [this.registry],
        aggregator,
        collect() {
          this.reset();
          for (const pool of pools()) {
            for (const [node, value] of read(pool)) if (value !== undefined) this.set({ chain: pool.chain, node }, value);
          }
        },
      });
    };
    new Gauge({
      name: 'noderouter_served_head_height',
      help: 'The head calls at the latest state are served at, per chain: the highest block a majority of nodes in rotation hold; it never goes back.',
      labelNames: ['chain'] as const,
      registers: [this.registry],
      aggregator: 'max',
      collect() {
        this.reset();
        for (const pool of pools()) if (pool.servedHead !== undefined) this.set({ chain: pool.chain }, pool.servedHead);
      },
    });
    nodeGauge('noderouter_node_up', 'Whether a node is in rotation (1) or out (0): probes pass and it keeps up with the head.', (p) =>
      p.nodes.map((n) => [n.name, n.inRotation ? 1 : 0]),
    );
    nodeGauge(
      'noderouter_node_head_height',
      'Head height a node reported at its last good probe.',
      (p) => p.nodes.map((n) => [n.name, n.head]),
      'max',
    );
    nodeGauge('noderouter_node_lag_blocks', 'Blocks a node is behind the best head of its chain endpoint.', (p) =>
      p.nodes.map((n) => [n.name, n.lag]),
    );
    nodeGauge(
      'noderouter_node_cordon_state',
      "An operator's hold on a node: 0 none, 1 cordoned (no new calls), 2 draining (no calls; its subscriptions moved off).",
      (p) => p.nodes.map((n) => [n.name, n.hold === undefined ? 0 : HOLD_VALUE[n.hold]]),
    );
    // Each worker has its own breakers: the worst of them.
    nodeGauge(
      'noderouter_breaker_state',
      'Circuit breaker state per node: 0 closed, 1 half-open, 2 open.',
      (p) => p.nodes.map((n) => [n.name, BREAKER_VALUE[n.breakerState]]),
      'max',
    );
    new Gauge({
      name: 'noderouter_node_mismatch',
      help: 'Whether a node says something of itself that config or the other nodes contradict (1) or not (0), by chain, node and kind (chain: another chain id, kept out of rotation; role: another role than configured).',
      labelNames: ['chain', 'node', 'kind'] as const,
      registers: [this.registry],
      aggregator: 'first',
      collect() {
        this.reset();
        for (const pool of pools()) {
          for (const n of pool.nodes) {
            for (const kind of ['chain', 'role'] as const)
              this.set({ chain: pool.chain, node: n.name, kind }, n.mismatches.some((m) => m.kind === kind) ? 1 : 0);
          }
        }
      },
    });
    nodeGauge(
      'noderouter_node_latency_ewma_seconds',
      'Smoothed latency of successful calls per node (what least-latency uses).',
      (p) => p.nodes.map((n) => [n.name, n.ewmaMs === undefined ? undefined : n.ewmaMs / 1000]),
      'average',
    );
  }

  /** One answered client request, on any transport. */
  observeRequest(chain: string, method: string, outcome: string, transport: string, seconds: number): void {
    this.requests.add(1, chain, method, outcome, transport);
    this.duration.record(seconds, chain, method, outcome);
  }

  /** Where the in-flight gauge reads from at scrape time: chain → requests being handled. */
  watchInFlight(read: () => Iterable<readonly [string, number]>): void {
    this.inFlightNow = read;
  }

  /** Where the WebSocket gauges read from at scrape time. */
  watchWs(state: () => Iterable<WsGauges>): void {
    this.wsState = state;
  }

  watchStore(up: () => boolean): void {
    this.storeUp = up;
  }

  watchCache(bytes: () => number): void {
    this.cacheBytes = bytes;
  }

  /** Where node gauges read from; called again after a reload swaps the pools. */
  watchPools(pools: () => Iterable<NodePool>): void {
    this.pools = pools;
  }
}
