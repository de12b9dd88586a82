// A worker process of a cluster: the config comes from the primary (validated there
// once), traffic and gRPC are served on the listeners node:cluster shares, and
// everything that must be one across workers is asked of the primary or pushed by it
// (cluster/primary.ts): health, holds, key changes, reloads, metrics, shutdown.

import type { StoreChange } from '../auth/key-store.js';
import type { GatewayConfig } from '../config/types.js';
import { Gateway } from '../gateway.js';
import { loadPlugins } from '../plugin/loader.js';
import type { PoolHealth } from '../pool/pool.js';
import type { NodeHoldRecord } from '../store/hold-store.js';
import { Channel } from './channel.js';

/** What a worker tells the primary once it listens. */
export interface WorkerReady {
  readonly url: string;
  readonly grpcAddress: string;
  readonly pid: number;
}

/** One registry's series as prom-client's cluster aggregation reads them. */
export type MetricsJson = Array<{
  name: string;
  help: string;
  type: unknown;
  aggregator: unknown;
  values: Array<{ value: number; labels: Record<string, string | number> }>;
}>;

/** A write to a primary that is gone: 'disconnect' stops this worker; nothing else to do. */
const ignoreGone = (): void => undefined;

export async function runWorker(): Promise<void> {
  const send = process.send?.bind(process);
  if (send === undefined) throw new Error('a worker needs its primary (started by node:cluster)');
  // A write to a primary that is gone fails in this callback, not as an uncaught 'error': 'disconnect' stops this worker.
  const primary = new Channel((m) => send(m, undefined, undefined, ignoreGone));
  process.on('message', (m: unknown) => primary.receive(m));
  // Set once started; what the primary pushes before then is taken at start (takeFromPrimary).
  const state: { gateway?: Gateway } = {};
  let stopping: Promise<void> | undefined;
  const stop = (signal: 'SIGINT' | 'SIGTERM' | 'gone'): void => {
    const gw = state.gateway;
    if (gw === undefined) process.exit(0);
    // A second signal (or the primary gone) cuts the delay short.
    if (stopping !== undefined || signal !== 'SIGTERM') void gw.close();
    stopping ??= (signal === 'SIGTERM' ? gw.shutdown() : gw.close())
      // Ordered link: once the primary answers, every count sent before has arrived.
      .then(() => primary.request('bye'))
      .catch(() => undefined)
      .then(() => gw.logger.flush())
      .then(() => process.exit(0));
  };
  primary.handle('health', (body) => state.gateway?.adoptHealth(body as PoolHealth));
  primary.handle('holds', (body) => state.gateway?.adoptHolds(body as ReadonlyMap<string, NodeHoldRecord>));
  primary.handle('keys', (body) => state.gateway?.store.sync(body as StoreChange));
  primary.handle('reload', async (body) => {
    const next = body as GatewayConfig;
    await loadChainPlugins(next);
    await state.gateway?.apply(next);
  });
  primary.handle('metrics', async () => metricsJson(state.gateway));
  primary.handle('shutdown', (body) => stop(body === 'SIGINT' ? 'SIGINT' : 'SIGTERM'));
  // The primary is gone: nothing shared is left to ask; stop at once.
  process.on('disconnect', () => {
    primary.close();
    stop('gone');
  });
  // Ctrl-C reaches the whole process group: each worker stops as the primary tells it.
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // Reloads come from the primary (it validates once); a hangup of the terminal is not a reason to exit.
  process.on('SIGHUP', () => undefined);
  const config = await primary.request<GatewayConfig>('config');
  await loadChainPlugins(config);
  const gateway = await Gateway.start(config, { cluster: { role: 'worker', primary } });
  state.gateway = gateway;
  const ready: WorkerReady = { url: gateway.url, grpcAddress: gateway.grpcAddress, pid: process.pid };
  primary.note('ready', ready);
}

/** The plugins of a config the primary validated (it loaded them there; this process loads its own copy). */
async function loadChainPlugins(config: GatewayConfig): Promise<void> {
  const { problems } = await loadPlugins([...new Set(Object.values(config.chains).map((c) => c.plugin))]);
  if (problems.length > 0) throw new Error(problems.join('; '));
}

async function metricsJson(gateway: Gateway | undefined): Promise<MetricsJson> {
  if (gateway === undefined) return [];
  const all = await gateway.metrics.registry.getMetricsAsJSON();
  // Plain data only (no collect functions) crosses the link.
  return all.map((m) => ({
    name: m.name,
    help: m.help,
    type: m.type,
    aggregator: m.aggregator,
    values: m.values.map((v) => ({ value: v.value, labels: { ...v.labels } as Record<string, string | number>, ...metricName(v) })),
  }));
}

function metricName(v: object): { metricName?: string } {
  const name = (v as { metricName?: unknown }).metricName;
  return typeof name === 'string' ? { metricName: name } : {};
}
