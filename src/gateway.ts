// The composition root: a gateway built from a validated config as a short list of
// parts, each made by a small factory below — services (store, keys, accounts),
// response caches, one runtime per chain endpoint with operators' holds on its nodes,
// who-is-calling and the call path, the admin listener (with the dashboard), the
// traffic listener (HTTP and WebSocket), the gRPC listener — and closed in reverse
// order once in-flight requests have drained (after SIGTERM's delay, shutdown()).
// Every transport reads server limits through `limits()`, so a reload applies them
// alike; chain runtimes are rebuilt when a limit they hold changed.

import { createServer, type Server } from 'node:http';
import { AccountKeys } from './accounts/account-keys.js';
import { keyChangeGuard } from './accounts/key-change-guard.js';
import { SigninThrottle } from './accounts/signin-throttle.js';
import { KeyCache } from './auth/key-cache.js';
import type { KeyStore } from './auth/key-store.js';
import { MemoryCacheStore, RedisCacheStore } from './cache/cache-store.js';
import { closeChainRuntime, largestBatch, runtimeOptions, type ChainRuntime, type RuntimeOptions } from './chain-runtime.js';
import type { StoreChange } from './auth/key-store.js';
import type { Channel } from './cluster/channel.js';
import { PushedHoldStore } from './cluster/shared-holds.js';
import type { PoolHealth } from './pool/pool.js';
import type { NodeHoldRecord } from './store/hold-store.js';
import { ConfigError, loadConfig } from './config/load.js';
import type { GatewayConfig, ServerConfig } from './config/types.js';
import { CallAccess } from './exec/access.js';
import { CallPath } from './exec/call-path.js';
import { Identifier } from './exec/identify.js';
import { GrpcListener } from './grpc/listener.js';
import { GrpcRelay } from './grpc/relay.js';
import { createAdminApp, type Lifecycle } from './http/admin-app.js';
import { DisputeLog, type DisputeEntry } from './exec/disputes.js';
import type { EndpointInfo } from './http/dashboard/account-api.js';
import { loadAssets } from './http/dashboard/assets.js';
import { createDashboardApp, dashboardMiddleware, type DashboardDeps } from './http/dashboard/dashboard.js';
import { HttpCalls } from './http/http-calls.js';
import { TrustedProxies } from './exec/client-address.js';
import { ClientConnections } from './ingress/client-connections.js';
import { createTrafficHandler } from './http/traffic-handler.js';
import {
  applyTrafficLimits,
  closeServer,
  createTrafficServer,
  drainConnections,
  listen,
  OpenConnections,
  stopAccepting,
  urlOf,
} from './listeners.js';
import { createLogger, type Logger } from './log.js';
import { RotatingFile } from './log-file.js';
import { Metrics } from './metrics/metrics.js';
import { ChainSet, chainRuntimes, endpointInfo, type CacheStores } from './chain-set.js';
import { NodeHolds } from './node-holds.js';
import { openServices, reconfigureServices, type Services } from './services.js';
import { startTracing, Tracing } from './trace/tracing.js';
import { WsGateway } from './ws/ws-gateway.js';

export interface GatewayOptions {
  readonly logger?: Logger;
  /** Clock for limits and key expiry (tests move it). */
  readonly now?: () => number;
  /** Wait at most this long for the first health probes before serving. */
  readonly firstProbeWaitMs?: number;
  /** Its part in a cluster (server.workers > 1, src/cluster/); absent: the one process serving everything. */
  readonly cluster?: ClusterRole;
}

/**
 * A cluster's primary keeps the shared state (limits, usage, slots, holds, key writes),
 * the one prober per chain and the admin listener, and serves no traffic; a worker
 * serves traffic and asks the primary for the rest.
 */
export type ClusterRole =
  { readonly role: 'primary'; readonly hooks: PrimaryHooks } | { readonly role: 'worker'; readonly primary: Channel };

/** How a cluster's primary tells its workers. */
export interface PrimaryHooks {
  /** After every probe round: the pool's health. */
  health(health: PoolHealth): void;
  /** The holds in force changed: awaited before an operator's change returns. */
  holds(holds: ReadonlyMap<string, NodeHoldRecord>): Promise<void>;
  /** A key changed here: awaited before the change returns. */
  keys(change: StoreChange): Promise<void>;
  /** The /metrics text: every worker's series with this process's. */
  scrape(): Promise<string>;
}

/** What the request path shares: who is calling, and the call path. */
interface CallParts {
  readonly keyCache: KeyCache;
  readonly access: CallAccess;
  readonly identifier: Identifier;
  readonly path: CallPath;
}

export class Gateway {
  private lifecycle: Lifecycle = 'starting';
  private readonly servers: Server[] = [];
  private ws: WsGateway | undefined;
  private grpc: GrpcListener | undefined;
  private throttle: SigninThrottle | undefined;
  private reloading: Promise<boolean> | undefined;
  private closing: Promise<void> | undefined;
  /** The listeners stopped accepting: every answer closes its connection. */
  private stopping = false;
  /** The traffic listener's connections, closed one by one when it is safe (drainConnections). */
  private readonly open = new OpenConnections();
  /** The traffic listener closed (stopAccepting); settles when its last connection is gone. */
  private unlistened: Promise<void> | undefined;
  /** The wait of shutdown() before close(), and how to end it early. */
  private delaying: Promise<void> | undefined;
  private endDelay: (() => void) | undefined;
  url = '';
  adminUrl = '';
  /** host:port of the gRPC listener ('' when no chain endpoint uses gRPC). */
  grpcAddress = '';
  /** The dashboard's address (`…/dashboard`, from dashboard.publicUrl when set), '' when it is off. */
  dashboardUrl = '';
  /** The listener serving the dashboard (the admin listener or its own), '' when it is off. */
  dashboardListenUrl = '';
  /** Proxies whose X-Forwarded-For is believed (server.trustedProxies; a reload replaces them). */
  private proxies: TrustedProxies;
  /** Spans of requests, from `tracing:` at start (off without an endpoint). */
  tracing: Tracing = Tracing.off;

  private constructor(
    public config: GatewayConfig,
    readonly logger: Logger,
    readonly metrics: Metrics,
    readonly services: Services,
    private readonly caches: CacheStores,
    readonly chains: ChainSet,
    private readonly now: () => number,
    /** The log file this gateway opened (log.file), closed last. */
    private readonly logFile: RotatingFile | undefined,
    /** Operators' holds on nodes, applied to the chain runtimes by name. */
    readonly holds: NodeHolds,
    /** Who probes this gateway's pools (a cluster's worker takes the primary's health). */
    private readonly probing: Probing,
  ) {
    this.proxies = new TrustedProxies(config.server.trustedProxies);
  }

  static async start(config: GatewayConfig, options: GatewayOptions = {}): Promise<Gateway> {
    const worker = options.cluster?.role === 'worker' ? workerIndex() : undefined;
    const logPath = config.log.file === undefined || worker === undefined ? config.log.file : workerLogPath(config.log.file, worker);
    const logFile =
      options.logger === undefined && logPath !== undefined
        ? await RotatingFile.open(logPath, config.log.maxBytes, config.log.files)
        : undefined;
    const logger =
      options.logger ??
      createLogger(config.log.level, logFile ?? process.stdout, {
        batchMs: 100,
        worker,
      });
    const now = options.now ?? Date.now;
    const metrics = new Metrics();
    const cluster = options.cluster;
    const hooks = cluster?.role === 'primary' ? cluster.hooks : undefined;
    const primary = cluster?.role === 'worker' ? cluster.primary : undefined;
    const services = await openServices(config, {
      primary,
      live: true,
      now,
      onHealth: (up) =>
        logger[up ? 'info' : 'error'](up ? 'store reachable' : 'store unreachable', { event: 'store', kind: config.store.kind, up }),
      onFallback: () => metrics.storeFallbacks.inc({ policy: config.store.onFailure }),
    });
    if (hooks !== undefined) services.bundle.keys.announceTo((change) => hooks.keys(change));
    const caches = cacheStores(config, services);
    const probing: Probing = {
      probes: primary === undefined,
      judged: hooks === undefined ? undefined : (pool) => hooks.health(pool.health()),
    };
    const built = runtimeOptions(config.server, caches, largestBatch(config), probing, new DisputeLog());
    const chains = new ChainSet(chainRuntimes(config, metrics, logger, built), built);
    const holds = await NodeHolds.open(services.bundle.holds, () => chains.all, logger, {
      // A shared store is read again now and then, in case an announcement was lost (a worker's holds are pushed).
      refreshMs: config.store.kind === 'redis' && primary === undefined ? HOLDS_REFRESH_MS : 0,
      now,
      announce: hooks?.holds,
    });
    holds.apply();
    const gw = new Gateway(config, logger, metrics, services, caches, chains, now, logFile, holds, probing);
    gw.watch();
    gw.tracing = startTracing(config.tracing, metrics, logger);
    if (primary === undefined) await gw.startAdmin(hooks?.scrape);
    if (primary === undefined) await gw.firstProbes(options.firstProbeWaitMs ?? 3_000);
    if (hooks !== undefined) {
      // The primary serves no traffic; it is ready when its workers are (markReady).
      logger.info('cluster primary started', { event: 'start', admin: gw.adminUrl, chains: chains.all.length });
      return gw;
    }
    const calls = gw.callParts(primary);
    if (primary !== undefined) {
      await gw.takeFromPrimary(primary);
      chains.disputes.relay = {
        entry: (entry) => primary.note('disputes.add', entry),
        takenOut: (chain, node, until) => primary.note('nodes.disputed', [chain, node, until]),
      };
    }
    await gw.startTraffic(calls);
    if (chains.grpc().size > 0) await gw.startGrpc(calls);
    gw.lifecycle = 'ready';
    logger.info('gateway listening', {
      event: 'start',
      url: gw.url,
      admin: gw.adminUrl,
      dashboard: gw.dashboardUrl || undefined,
      chains: chains.all.length,
    });
    return gw;
  }

  get store(): KeyStore {
    return this.services.bundle.keys;
  }

  get keys(): Services['keys'] {
    return this.services.keys;
  }

  get accounts(): Services['accounts'] {
    return this.services.accounts;
  }

  runtimes(): readonly ChainRuntime[] {
    return this.chains.all;
  }

  /** Server limits as they are now: every transport reads them here, per request. */
  limits(): ServerConfig {
    return this.config.server;
  }

  private watch(): void {
    const { metrics, services, caches, chains } = this;
    metrics.watchStore(() => services.bundle.up());
    metrics.watchCache(() => caches.memory.bytes());
    metrics.watchPools(() => chains.all.map((c) => c.pool));
    metrics.watchInFlight(() => chains.all.map((c) => [c.name, c.load.inFlight] as const));
  }

  /** A cluster's primary: every worker is listening. */
  markReady(): void {
    if (this.lifecycle === 'starting') this.lifecycle = 'ready';
  }

  /** A cluster's primary: where its workers serve (endpoints and the dashboard show it). */
  serving(url: string, grpcAddress: string): void {
    this.url = url;
    this.grpcAddress = grpcAddress;
  }

  /** A cluster's primary while its workers drain: readiness says 503; close() follows when they are gone. */
  drain(): void {
    this.lifecycle = 'draining';
    this.logger.info('draining: readiness is 503, workers finish what they serve', { event: 'drain' });
  }

  /** A cluster's worker before it serves: the health and holds the primary holds now. */
  private async takeFromPrimary(primary: Channel): Promise<void> {
    const [health, holds] = await Promise.all([
      primary.request<PoolHealth[]>('health.all'),
      primary.request<Map<string, NodeHoldRecord>>('holds.all'),
    ]);
    for (const h of health) this.adoptHealth(h);
    await this.adoptHolds(holds);
  }

  /** A cluster's primary: a worker's record of nodes disagreeing (served at /health/disputes). */
  recordDispute(entry: DisputeEntry): void {
    this.chains.disputes.add(entry);
  }

  /** A cluster's primary: a worker's agreement took a node out; the primary's prober keeps it out for every worker. */
  disputeNode(chain: string, node: string, until: number): void {
    const pool = this.chains.byName(chain)?.pool;
    const target = pool?.nodes.find((n) => n.name === node);
    if (pool === undefined || target === undefined) return;
    pool.disputed(target, until);
    // Every worker takes it out now, not at the next probe round.
    this.probing.judged?.(pool);
  }

  /** A cluster's worker: health the primary's prober decided. */
  adoptHealth(health: PoolHealth): void {
    this.chains.byName(health.chain)?.prober.adopt(health);
  }

  /** A cluster's worker: the holds the primary has in force. */
  async adoptHolds(holds: ReadonlyMap<string, NodeHoldRecord>): Promise<void> {
    const store = this.services.bundle.holds;
    if (store instanceof PushedHoldStore) store.take(holds);
    await this.holds.refresh();
  }

  private callParts(primary?: Channel): CallParts {
    const { config, metrics, services, now } = this;
    const store = services.bundle.keys;
    const keyCache = new KeyCache(
      store,
      {
        ttlMs: config.keys.cacheTtlMs,
        maxEntries: config.keys.cacheMaxEntries,
        negativeTtlMs: config.keys.negativeTtlMs,
        negativeMaxEntries: config.keys.negativeMaxEntries,
        onStoreError: config.store.onFailure,
      },
      { hit: () => metrics.keyCache.add(1, 'hit'), miss: () => metrics.keyCache.add(1, 'miss') },
      now,
    );
    const access = new CallAccess({ limiter: services.bundle.limiter, tiers: () => this.config.tiers, metrics });
    const identifier = new Identifier({
      keys: keyCache,
      access,
      now,
      trustedProxies: () => this.proxies,
      metrics,
      // A worker's last uses are written by the primary (one writer of the file).
      touch: primary === undefined ? (id, at) => store.touch(id, at) : (id, at) => primary.note('keys.touch', [id, at]),
    });
    return { keyCache, access, identifier, path: new CallPath(access, metrics) };
  }

  /** The admin listener first, so readiness answers 503 while the first probes run; the dashboard on it or on its own. */
  private async startAdmin(scrape?: () => Promise<string>): Promise<void> {
    const { config, services } = this;
    const dashboard = config.dashboard.enabled ? await this.dashboardDeps() : undefined;
    const onOwnPort = dashboard !== undefined && config.dashboard.port !== undefined;
    const admin = createAdminApp({
      chains: () => this.chains.all,
      disputes: this.chains.disputes,
      metrics: this.metrics,
      lifecycle: () => this.lifecycle,
      store: () => ({ kind: services.bundle.kind, up: services.bundle.up(), policy: config.store.onFailure }),
      keys: services.keys,
      keyChanges: keyChangeGuard(services.bundle.limiter, () => this.config.keys),
      limiter: services.bundle.limiter,
      holds: this.holds,
      scrape,
      // Read per request: a reload's new token applies to the next request.
      adminToken: () => this.config.admin.token,
      maxBodyBytes: 64 * 1024,
      dashboard: dashboard === undefined || onOwnPort ? undefined : dashboardMiddleware(dashboard),
    });
    const adminServer = createServer(admin.callback());
    this.servers.push(adminServer);
    this.adminUrl = urlOf(config.server.adminHost, (await listen(adminServer, config.server.adminHost, config.server.adminPort)).port);
    if (dashboard === undefined) return;
    let base = this.adminUrl;
    if (onOwnPort) {
      const own = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, createDashboardApp(dashboard).callback());
      this.servers.push(own);
      base = urlOf(config.dashboard.host, (await listen(own, config.dashboard.host, config.dashboard.port ?? 0)).port);
    }
    this.dashboardListenUrl = base;
    this.dashboardUrl = `${config.dashboard.publicUrl ?? base}/dashboard`;
  }

  private async firstProbes(waitMs: number): Promise<void> {
    const first = Promise.all(this.chains.all.map((c) => c.prober.probeAll()));
    for (const c of this.chains.all) c.prober.start();
    await Promise.race([first, new Promise((r) => setTimeout(r, waitMs).unref())]);
  }

  /** HTTP chain traffic and WebSocket upgrades on one listener. */
  private async startTraffic(calls: CallParts): Promise<void> {
    const { config, metrics, logger } = this;
    const draining = (): boolean => this.stopping;
    const httpCalls = new HttpCalls({ identifier: calls.identifier, path: calls.path, limits: () => this.limits() });
    const onRequest = createTrafficHandler({
      endpoints: () => this.chains.http(),
      calls: httpCalls,
      metrics,
      logger,
      draining,
      maxPathLength: () => this.limits().maxPathLength,
      cors: () => this.limits().cors,
      trustedProxies: () => this.proxies,
      tracing: this.tracing,
    });
    const traffic = createTrafficServer(
      config.server,
      onRequest,
      new ClientConnections(() => this.limits().maxConnectionsPerClient),
      this.open,
    );
    this.ws = new WsGateway({
      endpoints: () => this.chains.http(),
      runtime: (name) => this.chains.byName(name),
      identifier: calls.identifier,
      keys: calls.keyCache,
      store: this.store,
      slots: this.services.bundle.slots,
      access: calls.access,
      path: calls.path,
      metrics,
      logger,
      now: this.now,
      draining,
      server: () => this.limits(),
      trustedProxies: () => this.proxies,
      tracing: this.tracing,
    });
    this.ws.attach(traffic);
    this.servers.unshift(traffic);
    const t = await listen(traffic, config.server.host, config.server.port);
    this.url = config.server.publicUrl ?? urlOf(config.server.host, t.port);
  }

  /** The gRPC listener, on the same key cache, call path and metrics as HTTP. */
  private async startGrpc(calls: CallParts): Promise<void> {
    const sc = this.config.server;
    const relay = new GrpcRelay({
      identifier: calls.identifier,
      path: calls.path,
      limits: () => {
        const l = this.limits();
        return {
          maxBodyBytes: l.maxBodyBytes,
          maxResponseBytes: l.maxResponseBytes,
          requestTimeoutMs: l.requestTimeoutMs,
          requestReadTimeoutMs: l.headersTimeoutMs,
        };
      },
    });
    this.grpc = new GrpcListener({
      endpoints: () => this.chains.grpc(),
      relay,
      metrics: this.metrics,
      logger: this.logger,
      draining: () => this.stopping,
      maxPathLength: () => this.limits().maxPathLength,
      maxHeaderBytes: sc.maxHeaderBytes,
      maxConnections: sc.maxConnections,
      maxConcurrentStreams: sc.grpcMaxConcurrentStreams,
      perClient: new ClientConnections(() => this.limits().maxConnectionsPerClient),
      idleTimeoutMs: () => this.limits().keepAliveTimeoutMs,
      trustedProxies: () => this.proxies,
      tracing: this.tracing,
    });
    await this.grpc.listen(sc.grpcHost, sc.grpcPort);
    this.grpcAddress = this.grpc.address;
  }

  /** What the dashboard reads; config is read through functions so a reload applies at once. */
  private async dashboardDeps(): Promise<DashboardDeps> {
    const { services, now } = this;
    const d = this.config.dashboard;
    this.throttle = new SigninThrottle(d.signinAttemptsPerMinute, now);
    return {
      accounts: services.accounts,
      accountKeys: new AccountKeys(services.keys, services.bundle.limiter, {
        tiers: () => this.config.tiers,
        chains: () => this.chains.all.map((c) => c.name),
        now,
        changes: keyChangeGuard(services.bundle.limiter, () => this.config.keys),
      }),
      keys: services.keys,
      limiter: services.bundle.limiter,
      throttle: this.throttle,
      assets: await loadAssets(),
      settings: { trustProxy: d.trustProxy, publicUrl: d.publicUrl },
      tiers: () => this.config.tiers,
      endpoints: () => this.endpoints(),
      adminToken: () => this.config.admin.token,
      logger: this.logger,
      now,
    };
  }

  /** Every chain endpoint's public URL, in config order, with the plugin's sample request. */
  endpoints(): EndpointInfo[] {
    const sc = this.config.server;
    return endpointInfo(this.chains.all, this.url, this.grpcAddress || `${sc.grpcHost}:${sc.grpcPort}`);
  }

  /**
   * Re-read the config file: the new config is validated whole, then swapped in.
   * Unchanged chain endpoints keep their runtime; endpoints whose nodes did not change
   * keep their nodes' health and breakers; replaced runtimes close after their
   * in-flight calls. An invalid file is refused, logged and counted; the old config
   * keeps serving. What is read only at start (listener addresses, the store …) is
   * named in the reload's log line as needing a restart (RESTART_ONLY).
   */
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
  async readConfig(): Promise<GatewayConfig | undefined> {
    try {
      return await loadConfig(this.config.file);
    } catch (err) {
      this.metrics.configReloads.inc({ result: 'failed' });
      const problems = err instanceof ConfigError ? err.problems.join('; ') : (err as Error).message;
      this.logger.error('config reload refused; the previous config keeps serving', { event: 'reload', ok: false, problems });
      return undefined;
    }
  }

  /** Swap in a validated config (a cluster's primary validates once and sends it to every worker). */
  async apply(next: GatewayConfig): Promise<void> {
    const retired = this.chains.replace(
      next,
      this.metrics,
      this.logger,
      runtimeOptions(next.server, this.caches, largestBatch(next), this.probing, this.chains.disputes),
    );
    // Kept nodes keep their holds; nodes of rebuilt runtimes get theirs by name, before any call reaches them.
    this.holds.apply();
    const needsRestart = restartOnly(this.config, next);
    if (this.ws !== undefined && this.grpc === undefined) {
      // gRPC endpoints need the gRPC listener, which only a start opens (a cluster's primary serves no traffic).
      for (const c of Object.values(next.chains)) if (c.transport === 'grpc') needsRestart.push(`chains.${c.name}`);
    }
    reconfigureServices(this.services, next);
    this.throttle?.configure(next.dashboard.signinAttemptsPerMinute);
    const token = adminTokenChange(this.config.admin.token, next.admin.token);
    this.config = next;
    // An operator rotating a leaked token must see that it took: never the token, nor anything derived from it.
    // Said once, by the process serving the admin API (a cluster's workers serve none).
    if (token !== undefined && this.adminUrl !== '')
      this.logger.warn('admin token changed', { event: 'audit', action: 'admin_token', change: token });
    this.proxies = new TrustedProxies(next.server.trustedProxies);
    this.logger.level = next.log.level;
    const traffic = this.servers[0];
    if (traffic !== undefined && this.ws !== undefined) applyTrafficLimits(traffic, next.server);
    this.grpc?.limit(next.server.maxConnections);
    await Promise.all(retired.map(([old, successor]) => closeChainRuntime(old, successor)));
    this.metrics.configReloads.inc({ result: 'ok' });
    const fields = { event: 'reload', ok: true, chains: this.chains.all.length, replaced: retired.length };
    if (needsRestart.length === 0) this.logger.info('config reloaded', fields);
    // Said on the reload's own line, so a change that did not take is never silently kept.
    else this.logger.warn('config reloaded; some changes need a restart', { ...fields, needsRestart: needsRestart.join(', ') });
  }

  /**
   * What SIGTERM does: readiness turns 503 at once while every listener keeps serving
   * as before for `delayMs` (server.shutdownDelayMs), so load balancers take this
   * instance out of rotation before it stops accepting; then close(). A close() during
   * the wait (a second signal) ends it early.
   */
  shutdown(delayMs = this.config.server.shutdownDelayMs): Promise<void> {
    if (this.closing === undefined && this.delaying === undefined) {
      this.lifecycle = 'draining';
      this.logger.info('draining: readiness is 503, requests are still served', { event: 'drain', delayMs });
      this.delaying = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        this.endDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return (this.delaying ?? Promise.resolve()).then(() => this.close());
  }

  /**
   * Graceful stop: readiness turns 503 and the listeners stop accepting; every request
   * received (or being received) is answered with `connection: close`, a kept-alive
   * connection that brings none closes after a short grace (drainConnections); whatever
   * is open server.shutdownTimeoutMs later is cut. Then nodes, usage (flushed) and the
   * store close; the admin listener goes last so readiness is visible meanwhile.
   */
  close(): Promise<void> {
    this.endDelay?.();
    this.closing ??= this.doClose();
    return this.closing;
  }

  /**
   * Close the traffic listener and nothing else: connections already accepted are served
   * as before. A cluster's worker does this when the primary asks, so that every copy of
   * the shared socket is closed before any worker answers with `connection: close` (a
   * client that reconnects then is refused at connect, never accepted by the kernel into
   * a queue no process reads).
   */
  stopAccepting(): void {
    const traffic = this.ws === undefined ? undefined : this.servers[0];
    if (traffic !== undefined) this.unlistened ??= stopAccepting(traffic);
  }

  private async doClose(): Promise<void> {
    this.lifecycle = 'draining';
    // Closed before the first answer that says `connection: close`, in the same tick.
    this.stopAccepting();
    this.stopping = true;
    const [traffic, ...others] = this.ws === undefined ? [undefined, ...this.servers] : this.servers;
    const timeoutMs = this.config.server.shutdownTimeoutMs;
    const stopWatch = drainConnections(this.open, Math.min(this.config.server.shutdownIdleMs, timeoutMs));
    const cut = setTimeout(() => {
      traffic?.closeAllConnections();
      for (const socket of this.open.sockets) socket.destroy();
    }, timeoutMs);
    const grpcClosed = this.grpc?.close(timeoutMs);
    // WebSocket clients are told first (1001), so the listener's close does not wait on them.
    await this.ws?.close();
    await this.unlistened;
    stopWatch();
    clearTimeout(cut);
    await grpcClosed;
    await Promise.all(this.chains.all.map((c) => closeChainRuntime(c)));
    this.holds.close();
    await this.tracing.shutdown();
    await this.services.bundle.close();
    for (const server of others.reverse()) {
      if (server === undefined) continue;
      server.closeAllConnections();
      await closeServer(server);
    }
    this.logger.info('gateway stopped', { event: 'stop' });
    await this.logger.flush();
    await this.logFile?.close();
  }
}

function cacheStores(config: GatewayConfig, services: Services): CacheStores {
  const { redis } = services.bundle;
  return {
    memory: new MemoryCacheStore(config.cache.maxBytes, config.cache.maxEntryBytes),
    redis:
      redis === undefined
        ? undefined
        : new RedisCacheStore(redis, config.store.prefix, config.cache.maxEntryBytes, config.cache.redisMaxTtlMs),
  };
}

const HOLDS_REFRESH_MS = 30_000;

/** A worker's own log file beside the configured one (`gateway.log` → `gateway.worker-0.log`): one writer rotates each file. */
function workerLogPath(file: string, worker: number): string {
  const dot = file.lastIndexOf('.');
  return dot > file.lastIndexOf('/') ? `${file.slice(0, dot)}.worker-${worker}${file.slice(dot)}` : `${file}.worker-${worker}`;
}

/** A cluster's worker slot (0..workers-1), as its primary forked it. */
function workerIndex(): number | undefined {
  const n = Number(process.env.NODEROUTER_WORKER);
  return Number.isInteger(n) ? n : undefined;
}

type Probing = Pick<RuntimeOptions, 'probes' | 'judged'>;

/**
 * Settings read once, at start: the listeners' addresses and what their sockets were
 * made with, the processes, the store and what is built on it (the key and response
 * caches), the dashboard's listener and proxy reading, the log file and tracing, and
 * the simulated nodes of `serve --devnet`. Everything else a reload applies.
 */
const RESTART_ONLY: Readonly<Record<string, 'all' | readonly string[]>> = {
  server: [
    'host',
    'port',
    'adminHost',
    'adminPort',
    'grpcHost',
    'grpcPort',
    'publicUrl',
    'maxHeaderBytes',
    'grpcMaxConcurrentStreams',
    'wsMaxMessageBytes',
    'workers',
  ],
  dashboard: ['enabled', 'host', 'port', 'publicUrl', 'trustProxy'],
  store: 'all',
  keys: ['cacheTtlMs', 'cacheMaxEntries', 'negativeTtlMs', 'negativeMaxEntries'],
  cache: 'all',
  log: ['file', 'maxBytes', 'files'],
  tracing: 'all',
  devnet: 'all',
};

/** The restart-only settings `next` changes, as `section.member`. */
function restartOnly(now: GatewayConfig, next: GatewayConfig): string[] {
  const changed: string[] = [];
  for (const [section, members] of Object.entries(RESTART_ONLY)) {
    const a = now[section as keyof GatewayConfig] as unknown as Readonly<Record<string, unknown>>;
    const b = next[section as keyof GatewayConfig] as unknown as Readonly<Record<string, unknown>>;
    const names = members === 'all' ? [...new Set([...Object.keys(a), ...Object.keys(b)])] : members;
    for (const m of names) if (JSON.stringify(a[m]) !== JSON.stringify(b[m])) changed.push(`${section}.${m}`);
  }
  return changed;
}

/** How admin.token changed, if it did (said in the audit line; the token never is). */
function adminTokenChange(now: string | undefined, next: string | undefined): 'set' | 'changed' | 'removed' | undefined {
  if (now === next) return undefined;
  return now === undefined ? 'set' : next === undefined ? 'removed' : 'changed';
}
