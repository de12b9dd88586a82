// Assembling and running a gateway from a validated config: key store and cache,
// usage and admission, one runtime per chain endpoint, the traffic and admin
// listeners, and the account dashboard (on the admin listener or its own).
// `start` returns a serving gateway; `close` releases everything in reverse order
// after in-flight requests have drained.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { AccountKeys } from './accounts/account-keys.js';
import { AccountService, type AccountRules } from './accounts/account-service.js';
import { SigninThrottle } from './accounts/signin-throttle.js';
import { KeyCache } from './auth/key-cache.js';
import { KeyService } from './auth/key-service.js';
import type { KeyStore } from './auth/key-store.js';
import { openStore, type StoreBundle } from './store/open-store.js';
import { closeChainRuntime, createChainRuntime, runtimeOptions, type ChainRuntime, type RuntimeOptions } from './chain-runtime.js';
import { MemoryCacheStore, RedisCacheStore } from './cache/cache-store.js';
import { ConfigError, loadConfig } from './config/load.js';
import type { GatewayConfig } from './config/types.js';
import { GatewayError } from './errors.js';
import { createAdminApp, type Lifecycle } from './http/admin-app.js';
import type { EndpointInfo } from './http/dashboard/account-api.js';
import { loadAssets } from './http/dashboard/assets.js';
import { createDashboardApp, dashboardMiddleware, type DashboardDeps } from './http/dashboard/dashboard.js';
import { restErrorText } from './http/answers.js';
import { EndpointTable } from './http/endpoints.js';
import { GrpcListener } from './grpc/listener.js';
import { GrpcRelay } from './grpc/relay.js';
import { createTrafficHandler } from './http/traffic-handler.js';
import { Pipeline } from './http/pipeline.js';
import { createLogger, type Logger } from './log.js';
import { Metrics } from './metrics/metrics.js';
import { loadedPlugin } from './plugin-loader.js';
import type { Limiter } from './quota/limiter.js';
import { WsGateway } from './ws/ws-gateway.js';
import type { CallAccess } from './calls/access.js';

export interface GatewayOptions {
  readonly logger?: Logger;
  /** Clock for limits and key expiry (tests move it). */
  readonly now?: () => number;
  /** Wait at most this long for the first health probes before serving. */
  readonly firstProbeWaitMs?: number;
}

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/**
 * Requests Node's parser refuses never reach Koa (oversized headers, CR/LF in a
 * header, conflicting lengths): answer them in the error table's shape and close.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const e = new GatewayError(err.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : 'INVALID_REQUEST', {
    message: err.code === 'HPE_HEADER_OVERFLOW' ? undefined : 'Malformed HTTP request',
  });
  const body = restErrorText(e);
  const reason = e.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request';
  socket.end(
    `HTTP/1.1 ${e.status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Route tables of the two listeners: HTTP chains by host and path, gRPC chains by host. */
function routeTables(chains: readonly ChainRuntime[]): { http: EndpointTable<ChainRuntime>; grpc: EndpointTable<ChainRuntime> } {
  const routes = (t: 'http' | 'grpc') =>
    chains.filter((rt) => rt.config.transport === t).map((rt) => ({ path: rt.config.route.path, host: rt.config.route.host, target: rt }));
  return { http: new EndpointTable(routes('http')), grpc: new EndpointTable(routes('grpc')) };
}

function accountRules(config: GatewayConfig): AccountRules {
  return { tiers: config.tiers, sessionTtlMs: config.dashboard.sessionTtlMs, signinTokenTtlMs: config.dashboard.signinTokenTtlMs };
}

export class Gateway {
  private lifecycle: Lifecycle = 'starting';
  private chains: ChainRuntime[] = [];
  private byName = new Map<string, ChainRuntime>();
  private ws: WsGateway | undefined;
  private table: EndpointTable<ChainRuntime> = new EndpointTable([]);
  private grpcTable: EndpointTable<ChainRuntime> = new EndpointTable([]);
  private grpc: GrpcListener | undefined;
  private readonly servers: Server[] = [];
  url = '';
  adminUrl = '';
  /** host:port of the gRPC listener ('' when no chain endpoint uses gRPC). */
  grpcAddress = '';
  /** The dashboard's address (`…/dashboard`, from dashboard.publicUrl when set), '' when it is off. */
  dashboardUrl = '';
  /** The listener serving the dashboard (the admin listener or its own), '' when it is off. */
  dashboardListenUrl = '';
  private throttle: SigninThrottle | undefined;

  private reloading: Promise<boolean> | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    public config: GatewayConfig,
    readonly logger: Logger,
    readonly metrics: Metrics,
    readonly bundle: StoreBundle,
    readonly keys: KeyService,
    readonly accounts: AccountService,
    readonly limiter: Limiter,
    private readonly caches: RuntimeOptions['caches'],
    private readonly now: () => number,
  ) {}

  private setChains(chains: ChainRuntime[]): void {
    this.chains = chains;
    this.byName = new Map(chains.map((c) => [c.name, c]));
    ({ http: this.table, grpc: this.grpcTable } = routeTables(chains));
  }

  static async start(config: GatewayConfig, options: GatewayOptions = {}): Promise<Gateway> {
    const logger = options.logger ?? createLogger(config.log.level, process.stdout, { batchMs: 100 });
    const now = options.now ?? Date.now;
    const metrics = new Metrics();
    const bundle = await openStore(config.store, {
      live: true,
      now,
      onHealth: (up) => {
        logger[up ? 'info' : 'error'](up ? 'store reachable' : 'store unreachable', { event: 'store', kind: config.store.kind, up });
      },
      onFallback: () => metrics.storeFallbacks.inc({ policy: config.store.onFailure }),
    });
    metrics.watchStore(() => bundle.up());
    const store = bundle.keys;
    const caches = {
      memory: new MemoryCacheStore(config.cache.maxBytes, config.cache.maxEntryBytes),
      redis:
        bundle.redis === undefined
          ? undefined
          : new RedisCacheStore(bundle.redis, config.store.prefix, config.cache.maxEntryBytes, config.cache.redisMaxTtlMs),
    };
    metrics.watchCache(() => caches.memory.bytes());
    const limiter = bundle.limiter;
    const accounts = new AccountService(bundle.accounts, store, accountRules(config), now);
    const gw = new Gateway(
      config,
      logger,
      metrics,
      bundle,
      new KeyService(store, config.tiers, config.keys.rotationGraceSeconds, accounts.resolveForKeys),
      accounts,
      limiter,
      caches,
      now,
    );

    gw.setChains(
      Object.values(config.chains).map((c) =>
        createChainRuntime(c, loadedPlugin(c.plugin), metrics, logger, runtimeOptions(config.server, caches, now)),
      ),
    );
    metrics.watchPools(() => gw.chains.map((c) => c.pool));
    metrics.watchInFlight(() => gw.chains.map((c) => [c.name, c.load.inFlight] as const));

    const keyCache = new KeyCache(
      store,
      {
        ttlMs: config.keys.cacheTtlMs,
        maxEntries: config.keys.cacheMaxEntries,
        negativeTtlMs: config.keys.negativeTtlMs,
        onStoreError: config.store.onFailure,
      },
      { hit: () => metrics.keyCache.add(1, 'hit'), miss: () => metrics.keyCache.add(1, 'miss') },
      now,
    );
    const pipeline = new Pipeline({
      keys: keyCache,
      limiter,
      tiers: () => gw.config.tiers,
      metrics,
      logger,
      maxBodyBytes: config.server.maxBodyBytes,
      requestTimeoutMs: config.server.requestTimeoutMs,
      now,
      touch: (id, at) => store.touch(id, at),
    });
    const onRequest = createTrafficHandler({
      endpoints: () => gw.table,
      pipeline,
      metrics,
      logger,
      draining: () => gw.lifecycle === 'draining',
      maxPathLength: () => gw.config.server.maxPathLength,
    });
    const dashboard = config.dashboard.enabled ? await gw.dashboardDeps(now) : undefined;
    const onOwnPort = dashboard !== undefined && config.dashboard.port !== undefined;
    const admin = createAdminApp({
      chains: () => gw.chains,
      metrics,
      lifecycle: () => gw.lifecycle,
      store: () => ({ kind: bundle.kind, up: bundle.up(), policy: config.store.onFailure }),
      keys: gw.keys,
      limiter,
      adminToken: config.admin.token,
      maxBodyBytes: 64 * 1024,
      dashboard: dashboard === undefined || onOwnPort ? undefined : dashboardMiddleware(dashboard),
    });

    // The admin listener comes first, so readiness answers 503 while the first probes run.
    const adminServer = createServer(admin.callback());
    const a = await listen(adminServer, config.server.adminHost, config.server.adminPort);
    gw.adminUrl = urlOf(config.server.adminHost, a.port);
    let dashboardServer: Server | undefined;
    if (dashboard !== undefined) {
      let base = gw.adminUrl;
      if (onOwnPort) {
        dashboardServer = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, createDashboardApp(dashboard).callback());
        const d = await listen(dashboardServer, config.dashboard.host, config.dashboard.port ?? 0);
        base = urlOf(config.dashboard.host, d.port);
      }
      gw.dashboardListenUrl = base;
      gw.dashboardUrl = `${config.dashboard.publicUrl ?? base}/dashboard`;
    }
    const firstProbes = Promise.all(gw.chains.map((c) => c.prober.probeAll()));
    for (const c of gw.chains) c.prober.start();
    await Promise.race([firstProbes, new Promise((r) => setTimeout(r, options.firstProbeWaitMs ?? 3_000).unref())]);

    const sc = config.server;
    const traffic = createServer(
      {
        keepAliveTimeout: sc.keepAliveTimeoutMs,
        headersTimeout: sc.headersTimeoutMs,
        // The whole request, body included, must arrive within the client deadline.
        requestTimeout: sc.requestTimeoutMs + sc.headersTimeoutMs,
        maxHeaderSize: sc.maxHeaderBytes,
      },
      onRequest,
    );
    traffic.maxConnections = sc.maxConnections;
    traffic.on('clientError', answerClientError);
    gw.ws = new WsGateway({
      endpoints: () => gw.table,
      runtime: (name) => gw.byName.get(name),
      keys: keyCache,
      store,
      slots: bundle.slots,
      access: pipeline.access,
      metrics,
      logger,
      now,
      draining: () => gw.lifecycle === 'draining',
      server: () => gw.config.server,
    });
    gw.ws.attach(traffic);
    gw.servers.push(traffic, adminServer);
    if (dashboardServer !== undefined) gw.servers.push(dashboardServer);
    const t = await listen(traffic, config.server.host, config.server.port);
    gw.url = config.server.publicUrl ?? urlOf(config.server.host, t.port);
    if (gw.chains.some((c) => c.config.transport === 'grpc')) await gw.startGrpc(keyCache, store, pipeline.access);
    gw.lifecycle = 'ready';
    logger.info('gateway listening', {
      event: 'start',
      url: gw.url,
      admin: gw.adminUrl,
      dashboard: gw.dashboardUrl || undefined,
      chains: gw.chains.length,
    });
    return gw;
  }

  /** The gRPC listener and its relay, on the same key cache, limits and metrics as HTTP. */
  private async startGrpc(keys: KeyCache, store: KeyStore, access: CallAccess): Promise<void> {
    const sc = this.config.server;
    const relay = new GrpcRelay({
      keys,
      access,
      maxBodyBytes: sc.maxBodyBytes,
      maxResponseBytes: sc.maxResponseBytes,
      requestTimeoutMs: sc.requestTimeoutMs,
      requestReadTimeoutMs: sc.headersTimeoutMs,
      now: this.now,
      touch: (id, at) => store.touch(id, at),
    });
    this.grpc = new GrpcListener({
      endpoints: () => this.grpcTable,
      relay,
      metrics: this.metrics,
      logger: this.logger,
      draining: () => this.lifecycle === 'draining',
      maxPathLength: () => this.config.server.maxPathLength,
      maxHeaderBytes: sc.maxHeaderBytes,
      maxConnections: sc.maxConnections,
      idleTimeoutMs: sc.keepAliveTimeoutMs,
    });
    await this.grpc.listen(sc.grpcHost, sc.grpcPort);
    this.grpcAddress = this.grpc.address;
  }

  /** What the dashboard reads; config is read through functions so a reload applies at once. */
  private async dashboardDeps(now: () => number): Promise<DashboardDeps> {
    const d = this.config.dashboard;
    this.throttle = new SigninThrottle(d.signinAttemptsPerMinute, now);
    return {
      accounts: this.accounts,
      accountKeys: new AccountKeys(this.keys, this.limiter, {
        tiers: () => this.config.tiers,
        chains: () => this.chains.map((c) => c.name),
        now,
      }),
      keys: this.keys,
      limiter: this.limiter,
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

  /**
   * Every chain endpoint's public URL, in config order, with the plugin's sample
   * request: gRPC ones with the :authority to send, WebSocket-serving ones with their
   * ws:// URL.
   */
  endpoints(): EndpointInfo[] {
    return this.chains.map((c) => {
      const { host, path } = c.config.route;
      const base = { chain: c.name, plugin: c.config.plugin, archiveOnly: c.config.archiveOnly, sample: c.handler.sample };
      if (c.config.transport === 'grpc') {
        const url = `grpc://${this.grpcAddress || `${this.config.server.grpcHost}:${this.config.server.grpcPort}`}`;
        return host === undefined ? { ...base, url } : { ...base, url, authority: host };
      }
      const url = `${host !== undefined ? `http://${host}` : this.url}${path ?? ''}`;
      return c.handler.websocket === undefined ? { ...base, url } : { ...base, url, ws: url.replace(/^http/, 'ws') };
    });
  }

  /**
   * Re-read the config file: the new config is validated whole, then swapped in.
   * Unchanged chain endpoints keep their runtime; endpoints whose nodes did not change
   * keep their nodes' health and breakers; replaced runtimes close after their
   * in-flight calls. An invalid file is refused, logged and counted; the old config
   * keeps serving. Listener addresses and the key store are read only at start.
   */
  reload(): Promise<boolean> {
    this.reloading ??= this.doReload().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async doReload(): Promise<boolean> {
    let next: GatewayConfig;
    try {
      next = await loadConfig(this.config.file);
    } catch (err) {
      this.metrics.configReloads.inc({ result: 'failed' });
      const problems = err instanceof ConfigError ? err.problems.join('; ') : (err as Error).message;
      this.logger.error('config reload refused; the previous config keeps serving', { event: 'reload', ok: false, problems });
      return false;
    }
    const previous = new Map(this.chains.map((c) => [c.name, c]));
    const chains = Object.values(next.chains).map((c) => {
      const old = previous.get(c.name);
      if (old !== undefined && JSON.stringify(old.config) === JSON.stringify(c)) return old;
      return createChainRuntime(
        c,
        loadedPlugin(c.plugin),
        this.metrics,
        this.logger,
        runtimeOptions(next.server, this.caches, this.now),
        old,
      );
    });
    const retired = [...previous.values()].filter((old) => !chains.includes(old));
    for (const c of chains) if (!previous.has(c.name) || previous.get(c.name) !== c) c.prober.start();
    this.setChains(chains);
    if (this.grpc === undefined && chains.some((c) => c.config.transport === 'grpc')) {
      this.logger.warn('gRPC chain endpoints are served after a restart (no gRPC listener is running)', { event: 'reload' });
    }
    this.keys.configure(next.tiers, next.keys.rotationGraceSeconds);
    this.accounts.configure(accountRules(next));
    this.throttle?.configure(next.dashboard.signinAttemptsPerMinute);
    const restartOnly = ['host', 'port', 'adminHost', 'adminPort', 'grpcHost', 'grpcPort'] as const;
    const dashboardRestartOnly = ['enabled', 'host', 'port', 'publicUrl', 'trustProxy'] as const;
    if (
      restartOnly.some((k) => next.server[k] !== this.config.server[k]) ||
      dashboardRestartOnly.some((k) => next.dashboard[k] !== this.config.dashboard[k]) ||
      next.store.path !== this.config.store.path
    ) {
      this.logger.warn('listener addresses, the dashboard listener and the key store change only on restart', { event: 'reload' });
    }
    this.config = next;
    this.logger.level = next.log.level;
    await Promise.all(
      retired.map((old) =>
        closeChainRuntime(
          old,
          chains.find((c) => c.name === old.name),
        ),
      ),
    );
    this.metrics.configReloads.inc({ result: 'ok' });
    this.logger.info('config reloaded', { event: 'reload', ok: true, chains: chains.length, replaced: retired.length });
    return true;
  }

  get store(): KeyStore {
    return this.bundle.keys;
  }

  runtimes(): readonly ChainRuntime[] {
    return this.chains;
  }

  /**
   * Graceful stop: readiness turns 503, the traffic listener stops accepting, in-flight
   * requests finish (cut after server.shutdownTimeoutMs), then nodes, usage (flushed)
   * and the store close; the admin listener goes last so readiness is visible meanwhile.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.lifecycle = 'draining';
    const [traffic, admin, dashboard] = this.servers;
    const cut = setTimeout(() => traffic?.closeAllConnections(), this.config.server.shutdownTimeoutMs);
    const grpcClosed = this.grpc?.close(this.config.server.shutdownTimeoutMs);
    // WebSocket clients are told first (1001), so the listener's close does not wait on them.
    await this.ws?.close();
    if (traffic !== undefined) await closeServer(traffic);
    clearTimeout(cut);
    await grpcClosed;
    await Promise.all(this.chains.map((c) => closeChainRuntime(c)));
    await this.bundle.close();
    for (const server of [dashboard, admin]) {
      if (server === undefined) continue;
      server.closeAllConnections();
      await closeServer(server);
    }
    this.logger.info('gateway stopped', { event: 'stop' });
  }
}
