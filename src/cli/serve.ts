// `noderouter serve [--devnet]`: the gateway (with server.workers > 1, a primary and its
// workers, src/cluster/), what it serves printed, a reload on SIGHUP or when the file
// changes, and a graceful stop on SIGTERM (after server.shutdownDelayMs) or SIGINT.

import cluster from 'node:cluster';
import type { ClusterPrimary } from '../cluster/primary.js';
import { describeDuration } from '../config/duration.js';
import { watchConfig } from '../config/watch-config.js';
import type { GatewayConfig } from '../config/types.js';
import type { Devnet } from '../devnet/index.js';
import type { Gateway } from '../app/gateway.js';
import type { ParsedArgs } from './args.js';
import { commandConfig, out } from './common.js';
import { startDemo, type Demo } from './demo.js';

export async function serveCommand(args: ParsedArgs): Promise<number> {
  // A worker of a cluster: its config comes from the primary.
  if (cluster.isWorker) {
    const { runWorker } = await import('../cluster/worker.js');
    await runWorker();
    return new Promise<number>(() => undefined);
  }
  const config = await commandConfig(args);
  // The server's modules load only for the commands that run it: the key and account
  // commands start in a fraction of the time.
  const [{ startConfigDevnet }, { ClusterPrimary }, { Gateway }] = await Promise.all([
    import('../devnet/from-config.js'),
    import('../cluster/primary.js'),
    import('../app/gateway.js'),
  ]);
  const devnet = args.options.has('devnet') ? await startConfigDevnet(config) : undefined;
  const primary = config.server.workers > 1 ? await ClusterPrimary.start(config) : undefined;
  const gateway = primary?.gateway ?? (await Gateway.start(config));
  const demo = devnet === undefined ? undefined : await startDemo(gateway, config);
  printServing(gateway, config, primary, devnet);
  if (demo !== undefined) printDemo(gateway, config, demo);
  const reload = (): void => void (primary === undefined ? gateway.reload() : primary.reload());
  process.on('SIGHUP', reload);
  stopOnSignals(gateway, primary, devnet, watchConfig(config.file, reload));
  return new Promise<number>(() => undefined);
}

function printServing(gateway: Gateway, config: GatewayConfig, primary: ClusterPrimary | undefined, devnet: Devnet | undefined): void {
  out('');
  out(`noderouter is serving ${gateway.url} (admin ${gateway.adminUrl})`);
  if (primary !== undefined) out(`workers: ${config.server.workers} (pids ${primary.pids().join(' ')})`);
  if (gateway.dashboardUrl !== '') out(`dashboard: ${gateway.dashboardUrl}`);
  if (devnet?.controlUrl !== undefined) out(`devnet control: ${devnet.controlUrl}`);
  out('endpoints:');
  for (const e of gateway.endpoints()) {
    const extra = e.authority !== undefined ? ` (:authority ${e.authority})` : e.ws !== undefined ? `  ${e.ws}` : '';
    out(`  ${e.chain.padEnd(18)} ${e.plugin.padEnd(9)} ${e.url}${extra}`);
  }
}

function printDemo(gateway: Gateway, config: GatewayConfig, demo: Demo): void {
  out('');
  out(`demo key (shown once; earlier demo keys are revoked): ${demo.key}`);
  // The first HTTP endpoint with a sample request from its plugin.
  const first = gateway.endpoints().find((e) => e.sample !== undefined && e.authority === undefined && e.url.startsWith('http'));
  const sample = first?.sample;
  if (first !== undefined && sample !== undefined) {
    const url = `${first.url}${sample.path === '/' ? '' : sample.path}`;
    if (sample.body === undefined) out(`try: curl -s -H 'apikey: ${demo.key}' ${url}`);
    else {
      out(`try: curl -s -H 'apikey: ${demo.key}' -H 'content-type: application/json' \\`);
      out(`       -d '${sample.body}' ${url}`);
    }
  }
  if (demo.link === undefined) return;
  out('');
  out(`demo account sign-in link (works once, ${describeDuration(config.dashboard.signinTokenTtlMs)}):`);
  out(`  ${demo.link}`);
}

/**
 * SIGTERM (an orchestrator) waits server.shutdownDelayMs with readiness 503 before it
 * stops accepting; SIGINT (Ctrl-C) and a second signal stop accepting at once.
 */
function stopOnSignals(gateway: Gateway, primary: ClusterPrimary | undefined, devnet: Devnet | undefined, unwatch: () => void): void {
  let stopping: Promise<void> | undefined;
  const stop = (signal: 'SIGINT' | 'SIGTERM'): void => {
    unwatch();
    gateway.logger.info('shutting down', { event: 'signal', signal });
    if (primary !== undefined) {
      // Every worker drains as this process would; the shared state closes after the last.
      if (stopping !== undefined) void primary.stop('SIGINT');
      stopping ??= primary
        .stop(signal)
        .then(() => devnet?.close())
        .then(() => gateway.logger.flush())
        .then(() => process.exit(0));
      return;
    }
    if (stopping !== undefined || signal === 'SIGINT') void gateway.close();
    stopping ??= (signal === 'SIGTERM' ? gateway.shutdown() : gateway.close())
      .then(() => devnet?.close())
      .then(() => gateway.logger.flush())
      .then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
