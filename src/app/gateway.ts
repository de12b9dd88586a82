// The composition root: a gateway built from a validated config as a short list of
// parts, each made by a factory of src/app/ — the logger, the core (services, response
// caches, one runtime per chain endpoint, operators' holds on their nodes), the admin
// listener (with the dashboard), who-is-calling and the call path, the traffic listener
// (HTTP and WebSocket), the gRPC listener — and closed in reverse order once in-flight
// requests have drained (after SIGTERM's delay, shutdown()). Every listener reads the
// server limits through `limits()` when it uses them, so a reload (src/app/reload.ts)
// applies them alike. Its part in a cluster is src/cluster/'s.

import { type AdminListeners, startAdmin } from './admin.js';
import { callParts } from './call-parts.js';
import { startGrpc } from './grpc.js';
import { LiveConfig } from './live-config.js';
import { openLogging, workerIndex } from './logging.js';
import { firstProbes, openCore, watchCore, type CoreParts } from './parts.js';
import { applyConfig, readConfig } from './reload.js';
import type { ClusterRole } from './roles.js';
import { Shutdown } from './shutdown.js';
import { startTraffic, type TrafficListener } from './traffic.js';
import type { KeyStore } from '../auth/key-store.js';
import type { ChainRuntime } from '../chain/runtime.js';
import { endpointInfo } from './chain-set.js';
import type { Channel } from '../cluster/channel.js';
import { joinPrimary } from '../cluster/worker-state.js';
import type { GatewayConfig, ServerConfig } from '../config/types.js';
import type { GrpcListener } from '../transports/grpc/listener.js';
import type { Lifecycle } from '../admin/admin-app.js';
import type { EndpointInfo } from '../admin/dashboard/account-api.js';
import type { Logger } from '../ops/log.js';
import type { RotatingFile } from '../ops/log-file.js';
import { Metrics } from '../ops/metrics/metrics.js';
import type { UsageHistory } from '../quota/usage-history.js';
import type { Services } from './services.js';
import { startTracing, Tracing } from '../ops/trace/tracing.js';

export type { ClusterRole, PrimaryHooks } from './roles.js';

export interface GatewayOptions {
  readonly logger?: Logger;
  /** Clock for limits and key expiry (tests move it). */
  readonly now?: () => number;
  /** Wait at most this long for the first health probes before serving. */
  readonly firstProbeWaitMs?: number;
  /** Its part in a cluster (server.workers > 1, src/cluster/); absent: the one process serving everything. */
  readonly cluster?: ClusterRole;
  /** Where usage history is written instead of the store's own (an embedding's record, tests); absent: the store's, if it keeps one. */
  readonly history?: UsageHistory;
}

export class Gateway {
  /** Readiness: 503 unless ready (a cluster's primary sets it from its workers, src/cluster/primary-state.ts). */
  lifecycle: Lifecycle = 'starting';
  private admin: AdminListeners | undefined;
  private traffic: TrafficListener | undefined;
  private grpc: GrpcListener | undefined;
  private reloading: Promise<boolean> | undefined;
  private readonly stop = new Shutdown(
    () => ({
      traffic: this.traffic,
      grpc: this.grpc,
      admin: this.admin?.servers ?? [],
      core: this.core,
      tracing: this.tracing,
      logger: this.logger,
      logFile: this.logFile,
      limits: this.live.limits,
    }),
    () => {
      this.lifecycle = 'draining';
    },
  );
  /** The traffic listener's public URL (a cluster's primary: its workers'). */
  url = '';
  /** host:port of the gRPC listener ('' when no chain endpoint uses gRPC). */
  grpcAddress = '';
  /** Spans of requests, from `tracing:` at start (off without an endpoint). */
  tracing: Tracing = Tracing.off;
  /** The config in force, read through by every listener. */
  private readonly live: LiveConfig;

  private constructor(
    config: GatewayConfig,
    readonly logger: Logger,
    readonly metrics: Metrics,
    private readonly core: CoreParts,
    private readonly now: () => number,
    /** The log file this gateway opened (log.file), closed last. */
    private readonly logFile: RotatingFile | undefined,
  ) {
    this.live = new LiveConfig(config);
  }

  static async start(config: GatewayConfig, options: GatewayOptions = {}): Promise<Gateway> {
    const role = options.cluster;
    const hooks = role?.role === 'primary' ? role.hooks : undefined;
    const primary = role?.role === 'worker' ? role.primary : undefined;
    const { logger, file } = await openLogging(config, options.logger, primary === undefined ? undefined : workerIndex());
    const now = options.now ?? Date.now;
    const metrics = new Metrics();
    const core = await openCore(config, { logger, metrics, now, hooks, primary, history: options.history });
    const gw = new Gateway(config, logger, metrics, core, now, file);
    watchCore(metrics, core);
    gw.tracing = startTracing(config.tracing, metrics, logger);
    if (primary === undefined) {
      await gw.startAdmin(hooks?.scrape);
      await firstProbes(core.chains, options.firstProbeWaitMs ?? 3_000);
    }
    if (hooks !== undefined) {
      // The primary serves no traffic; it is ready when its workers are.
      logger.info('cluster primary started', { event: 'start', admin: gw.adminUrl, chains: core.chains.all.length });
      return gw;
    }
    if (primary !== undefined) await joinPrimary({ ...core, holdStore: core.services.bundle.holds }, primary);
    await gw.startListeners(primary);
    gw.lifecycle = 'ready';
    logger.info('gateway listening', {
      event: 'start',
      url: gw.url,
      admin: gw.adminUrl,
      dashboard: gw.dashboardUrl || undefined,
      chains: core.chains.all.length,
    });
    return gw;
  }

  get config(): GatewayConfig {
    return this.live.config;
  }

  get services(): Services {
    return this.core.services;
  }

  get chains(): CoreParts['chains'] {
    return this.core.chains;
  }

  /**
   * Writes the usage this process gathered to the record now, rather than at the next
   * usage.flushInterval (an embedding that reads history at once, tests). A cluster's
   * workers gather their own: this writes the calling process's only.
   */
  flushUsage(): Promise<void> {
    return this.core.usage.flush();
  }

  /** Operators' holds on nodes, applied to the chain runtimes by name. */
  get holds(): CoreParts['holds'] {
    return this.core.holds;
  }

  get store(): KeyStore {
    return this.core.services.bundle.keys;
  }

  get keys(): Services['keys'] {
    return this.core.services.keys;
  }

  get accounts(): Services['accounts'] {
    return this.core.services.accounts;
  }

  /** The admin listener's URL ('' in a cluster's worker, which serves none). */
  get adminUrl(): string {
    return this.admin?.url ?? '';
  }

  /** The dashboard's address (`…/dashboard`, from dashboard.publicUrl when set), '' when it is off. */
  get dashboardUrl(): string {
    return this.admin?.dashboardUrl ?? '';
  }

  /** The listener serving the dashboard (the admin listener or its own), '' when it is off. */
  get dashboardListenUrl(): string {
    return this.admin?.dashboardListenUrl ?? '';
  }

  runtimes(): readonly ChainRuntime[] {
    return this.core.chains.all;
  }

  /** Server limits as they are now: every listener reads them here, when it uses them. */
  limits(): ServerConfig {
    return this.live.limits();
  }

  /** Every chain endpoint's public URL, in config order, with the plugin's sample request. */
  endpoints(): EndpointInfo[] {
    const sc = this.config.server;
    return endpointInfo(this.core.chains.all, this.url, this.grpcAddress || `${sc.grpcHost}:${sc.grpcPort}`);
  }

  /** The admin listener first, so readiness answers 503 while the first probes run. */
  private async startAdmin(scrape?: () => Promise<string>): Promise<void> {
    const { live, metrics, logger, now } = this;
    const { chains, services, holds, history } = this.core;
    const lifecycle = (): Lifecycle => this.lifecycle;
    this.admin = await startAdmin({
      live,
      chains,
      services,
      holds,
      metrics,
      logger,
      now,
      lifecycle,
      scrape,
      history,
      endpoints: () => this.endpoints(),
    });
  }

  /** The traffic listener, then the gRPC listener when an endpoint needs it: one key cache and call path for all. */
  private async startListeners(primary: Channel | undefined): Promise<void> {
    const { live, metrics, logger, now, tracing } = this;
    const { chains, services } = this.core;
    const calls = callParts({
      config: () => live.config,
      services,
      metrics,
      now,
      trustedProxies: live.trustedProxies,
      primary,
      usage: this.core.usage,
    });
    const draining = (): boolean => this.stop.stopping;
    this.traffic = await startTraffic({ live, chains, calls, services, metrics, logger, now, tracing, draining, open: this.stop.open });
    this.url = this.traffic.url;
    if (chains.grpc().size === 0) return;
    this.grpc = await startGrpc({ live, chains, calls, metrics, logger, tracing, draining });
    this.grpcAddress = this.grpc.address;
  }

  /** Re-read the config file and swap it in (src/app/reload.ts); false when the file is refused. */
  reload(): Promise<boolean> {
    this.reloading ??= this.doReload().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async doReload(): Promise<boolean> {
    const next = await this.readConfig();
    if (next === undefined) return false;
    await this.apply(next);
    return true;
  }

  /** The config file read and validated whole; undefined (logged, counted) when it is refused. */
  readConfig(): Promise<GatewayConfig | undefined> {
    return readConfig(this.config.file, this.metrics, this.logger);
  }

  /** Swap in a validated config (a cluster's primary validates once and sends it to every worker); returns what needs a restart. */
  apply(next: GatewayConfig): Promise<string[]> {
    const { live, metrics, logger } = this;
    return applyConfig(
      {
        ...this.core,
        live,
        metrics,
        logger,
        throttle: this.admin?.throttle,
        trafficWithoutGrpc: this.traffic !== undefined && this.grpc === undefined,
        servesAdmin: this.admin !== undefined,
      },
      next,
    );
  }

  /**
   * What SIGTERM does: readiness turns 503 at once while every listener keeps serving
   * as before for `delayMs` (server.shutdownDelayMs), so load balancers take this
   * instance out of rotation before it stops accepting; then close(). A close() during
   * the wait (a second signal) ends it early.
   */
  shutdown(delayMs = this.config.server.shutdownDelayMs): Promise<void> {
    return this.stop.shutdown(delayMs);
  }

  /** Graceful stop (src/app/shutdown.ts): in-flight requests answered, then everything closed, admin last. */
  close(): Promise<void> {
    return this.stop.close();
  }

  /**
   * Close the traffic listener and nothing else: connections already accepted are served
   * as before. A cluster's worker does this when the primary asks, so that every copy of
   * the shared socket is closed before any worker answers with `connection: close` (a
   * client that reconnects then is refused at connect, never accepted by the kernel into
   * a queue no process reads).
   */
  stopAccepting(): void {
    this.stop.stopAccepting();
  }
}
