// A worker process of a cluster: the config comes from the primary (validated there
// once), traffic and gRPC are served on the listeners node:cluster shares, and
// everything that must be one across workers is asked of the primary or pushed by it
// (cluster/primary.ts): health, holds, key changes, reloads, metrics, shutdown.

import type { StoreChange } from '../auth/key-store.js';
import type { GatewayConfig } from '../config/types.js';
import { Gateway } from '../app/gateway.js';
import { loadPlugins } from '../plugin/loader.js';
import type { PoolHealth } from '../pool/pool.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';
import { Channel } from './channel.js';
import { adoptHealth, adoptHolds, type WorkerState } from './worker-state.js';

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
  let stopAsked = false;
  // The primary says when (cluster/primary.ts stop): first stop accepting, then close.
  const stop = (): void => {
    const gw = state.gateway;
    if (gw === undefined) process.exit(0);
    stopping ??= gw
      .close()
      // Ordered link: once the primary answers, every count sent before has arrived.
      .then(() => primary.request('bye'))
      .catch(() => undefined)
      .then(() => gw.logger.flush())
      .then(() => process.exit(0));
  };
  primary.handle('health', (body) => {
    if (state.gateway !== undefined) adoptHealth(workerState(state.gateway), body as PoolHealth);
  });
  primary.handle('holds', (body) =>
    state.gateway === undefined ? undefined : adoptHolds(workerState(state.gateway), body as ReadonlyMap<string, NodeHoldRecord>),
  );
  primary.handle('keys', (body) => state.gateway?.store.sync(body as StoreChange));
  primary.handle('reload', async (body) => {
    const next = body as GatewayConfig;
    await loadChainPlugins(next);
    await state.gateway?.apply(next);
  });
  primary.handle('metrics', async () => metricsJson(state.gateway));
  primary.handle('stopAccepting', () => {
    stopAsked = true;
    state.gateway?.stopAccepting();
    return true;
  });
  primary.handle('shutdown', () => stop());
  // The primary is gone: nothing shared is left to ask; stop at once.
  process.on('disconnect', () => {
    primary.close();
    stop();
  });
  // Signals are the primary's to act on (it tells every worker when to stop accepting
  // and when to close, cluster/primary.ts); Ctrl-C or a group's SIGTERM reaching this
  // process too must not make it close on its own.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
  // Reloads come from the primary (it validates once); a hangup of the terminal is not a reason to exit.
  process.on('SIGHUP', () => undefined);
  const config = await primary.request<GatewayConfig>('config');
  await loadChainPlugins(config);
  const gateway = await Gateway.start(config, { cluster: { role: 'worker', primary } });
  state.gateway = gateway;
  // Asked to stop accepting while it started: it must not keep the shared socket open.
  if (stopAsked) gateway.stopAccepting();
  const ready: WorkerReady = { url: gateway.url, grpcAddress: gateway.grpcAddress, pid: process.pid };
  primary.note('ready', ready);
}

function workerState(gateway: Gateway): WorkerState {
  return { chains: gateway.chains, holds: gateway.holds, holdStore: gateway.services.bundle.holds };
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
