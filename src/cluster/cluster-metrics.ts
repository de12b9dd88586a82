// A cluster's one /metrics: the primary's own series (shared state, probers, reloads),
// every worker's added up per metric, and the series only the primary knows: how many
// workers serve, how often one was forked again, and each worker's event loop lag.

import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import type { MetricsJson } from './worker.js';

/** Series the primary alone knows right: what its probers and its reloads decided (workers only copy it). */
const PRIMARY_ONLY = new Set([
  'noderouter_node_up',
  'noderouter_node_lag_blocks',
  'noderouter_node_cordon_state',
  'noderouter_node_mismatch',
  'noderouter_config_reloads_total',
  'noderouter_health_probes_total',
  'noderouter_node_transitions_total',
]);

export class ClusterMetrics {
  private readonly registry = new Registry();
  /** Worker processes serving traffic right now. */
  readonly workers: Gauge;
  /** Workers forked again after one died, by reason. */
  readonly restarts: Counter<'reason'>;
  private readonly lag: Gauge<'worker'>;

  constructor() {
    this.workers = new Gauge({
      name: 'noderouter_workers',
      help: 'Worker processes serving traffic right now (server.workers; a cluster only).',
      registers: [this.registry],
    });
    this.restarts = new Counter({
      name: 'noderouter_worker_restarts_total',
      help: 'Workers forked again after one died, by reason (exit: it exited by itself; signal: it was killed).',
      labelNames: ['reason'] as const,
      registers: [this.registry],
    });
    this.lag = new Gauge({
      name: 'noderouter_worker_eventloop_lag_p99_seconds',
      help: "99th percentile of each worker's event loop lag, by worker (0..workers-1): a worker stuck on one hot client shows here, not in the average.",
      labelNames: ['worker'] as const,
      registers: [this.registry],
    });
  }

  /** One exposition of the primary's registry and each answering worker's series (by worker slot; undefined: no answer). */
  async exposition(own: Registry, workers: ReadonlyArray<readonly [number, MetricsJson | undefined]>): Promise<string> {
    this.lag.reset();
    const fromWorkers: MetricsJson[] = [];
    for (const [index, json] of workers) {
      if (json === undefined) continue;
      const lag = json.find((m) => m.name === 'noderouter_nodejs_eventloop_lag_p99_seconds')?.values[0]?.value;
      if (lag !== undefined) this.lag.set({ worker: String(index) }, lag);
      fromWorkers.push(json.filter((m) => !PRIMARY_ONLY.has(m.name)));
    }
    const mine = await this.registry.getMetricsAsJSON();
    return AggregatorRegistry.aggregate([await own.getMetricsAsJSON(), ...fromWorkers, mine]).metrics();
  }
}
