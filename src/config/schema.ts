// Validation of the interpolated YAML tree into GatewayConfig. Defaults live here
// and nowhere else; every problem names its path and what would be accepted.

import { isAbsolute, resolve, dirname } from 'node:path';
import type { ChainPlugin } from '../plugin.js';
import { ConfigProblems, Reader, join } from './reader.js';
import type { ChainConfig, DashboardConfig, GatewayConfig, NodeConfig, TierConfig } from './types.js';

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const ROUTE_PATH = /^(\/[A-Za-z0-9._~-]+)+$/;
const HOST = /^[A-Za-z0-9.-]+(:\d+)?$/;

const TOP = ['server', 'log', 'admin', 'dashboard', 'store', 'keys', 'cache', 'tiers', 'devnet', 'chains'] as const;
const SERVER = [
  'host',
  'port',
  'adminHost',
  'adminPort',
  'publicUrl',
  'maxBodyBytes',
  'maxHeaderBytes',
  'maxJsonDepth',
  'maxMethodLength',
  'maxPathLength',
  'maxResponseBytes',
  'shutdownTimeoutMs',
  'requestTimeoutMs',
  'headersTimeoutMs',
  'keepAliveTimeoutMs',
  'maxConnections',
  'wsMaxMessageBytes',
  'wsPingIntervalMs',
  'grpcHost',
  'grpcPort',
] as const;
const TIER = ['rate', 'burst', 'daily', 'monthly', 'maxBatch', 'archive', 'wsConnections', 'wsSubscriptions', 'cacheHitsFree'] as const;
const CHAIN = [
  'plugin',
  'network',
  'route',
  'archiveOnly',
  'strategy',
  'attemptTimeoutMs',
  'maxAttempts',
  'health',
  'breaker',
  'cache',
  'options',
  'nodes',
] as const;
const NODE = ['name', 'url', 'ws', 'role', 'weight', 'priority'] as const;
const HEALTH = ['intervalMs', 'timeoutMs', 'maxLag', 'failAfter'] as const;
const BREAKER = ['errorThresholdPercentage', 'volumeThreshold', 'rollingWindowMs', 'resetTimeoutMs'] as const;

export type PluginLookup = (name: string) => ChainPlugin | undefined;

function readTier(r: Reader, name: string, v: unknown, path: string): TierConfig {
  const t = r.section(v, path, TIER) ?? {};
  const rate = r.limit(t.rate, join(path, 'rate'), 10);
  return {
    name,
    rate,
    burst: r.limit(t.burst, join(path, 'burst'), rate === Infinity ? Infinity : rate * 2),
    daily: r.limit(t.daily, join(path, 'daily'), Infinity),
    monthly: r.limit(t.monthly, join(path, 'monthly'), Infinity),
    maxBatch: r.limit(t.maxBatch, join(path, 'maxBatch'), 100),
    archive: r.bool(t.archive, join(path, 'archive'), false),
    wsConnections: r.limit(t.wsConnections, join(path, 'wsConnections'), 10),
    wsSubscriptions: r.limit(t.wsSubscriptions, join(path, 'wsSubscriptions'), 100),
    cacheHitsFree: r.bool(t.cacheHitsFree, join(path, 'cacheHitsFree'), false),
  };
}

function readNode(r: Reader, v: unknown, path: string, transport: 'http' | 'grpc'): NodeConfig {
  const n = r.section(v, path, NODE, true) ?? {};
  const name = r.string(n.name, join(path, 'name'));
  if (name !== '' && !NAME.test(name)) r.problems.add(join(path, 'name'), 'must be lower-case letters, digits, "-" or "_"');
  const url = r.string(n.url, join(path, 'url'));
  if (url !== '') {
    let ok = false;
    try {
      const u = new URL(url);
      ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.search === '';
    } catch {
      ok = false;
    }
    if (!ok) r.problems.add(join(path, 'url'), 'must be an http:// or https:// URL without credentials or query');
    else if (transport === 'grpc' && !/^http:\/\/[^/]+\/?$/.test(url)) {
      r.problems.add(
        join(path, 'url'),
        'of a gRPC node must be http://host:port (cleartext HTTP/2, no path): TLS to gRPC nodes is not supported yet, terminate it in front of the node',
      );
    }
  }
  const ws = r.optionalString(n.ws, join(path, 'ws'));
  if (ws !== undefined) {
    let ok = false;
    try {
      const u = new URL(ws);
      ok = (u.protocol === 'ws:' || u.protocol === 'wss:') && u.username === '';
    } catch {
      ok = false;
    }
    if (!ok) r.problems.add(join(path, 'ws'), 'must be a ws:// or wss:// URL without credentials, like "ws://10.0.0.5:8546"');
  }
  return {
    name,
    url: url.replace(/\/+$/, ''),
    ws: ws ?? url.replace(/^http/, 'ws').replace(/\/+$/, ''),
    role: r.oneOf(n.role, join(path, 'role'), ['full', 'archive'] as const),
    weight: r.int(n.weight, join(path, 'weight'), 1, 1, 1000),
    priority: r.int(n.priority, join(path, 'priority'), 0, 0, 100),
  };
}

function readChain(r: Reader, name: string, v: unknown, path: string, plugins: PluginLookup): ChainConfig {
  const c = r.section(v, path, CHAIN, true) ?? {};
  if (!NAME.test(name)) r.problems.add(path, 'name must be lower-case letters, digits, "-" or "_"');
  const plugin = r.string(c.plugin, join(path, 'plugin'));
  const impl = plugin === '' ? undefined : plugins(plugin);
  const transport = impl?.transport ?? 'http';
  // A gRPC chain without a route is the default gRPC chain.
  const route = r.section(c.route, join(path, 'route'), ['path', 'host'], transport === 'http') ?? {};
  const routePath = r.optionalString(route.path, join(path, 'route.path'));
  if (routePath !== undefined && !ROUTE_PATH.test(routePath)) {
    r.problems.add(join(path, 'route.path'), 'must look like "/l1" or "/hub/rpc" (no trailing slash)');
  }
  const host = r.optionalString(route.host, join(path, 'route.host'));
  if (host !== undefined && !HOST.test(host)) r.problems.add(join(path, 'route.host'), 'must be a host name like "l1.example.com"');
  if (routePath === undefined && host === undefined && c.route !== undefined) {
    r.problems.add(join(path, 'route'), 'needs a path, a host, or both');
  }
  const options = r.named(c.options, join(path, 'options')) ?? {};
  if (plugin !== '' && impl === undefined) {
    r.problems.add(
      join(path, 'plugin'),
      `names no plugin: use a built-in one (evm, objectx, sdk-rpc, sdk-rest, sdk-grpc) or an installed npm package`,
    );
  }
  for (const [sub, message] of impl?.validateOptions?.(options) ?? []) {
    r.problems.add(join(join(path, 'options'), sub), message);
  }
  if (transport === 'grpc' && routePath !== undefined) {
    r.problems.add(
      join(path, 'route.path'),
      `("${routePath}") cannot route gRPC calls, whose paths are /package.Service/Method: remove it and set route.host (the :authority clients dial), or leave route out to make this the default gRPC chain`,
    );
  }
  const health = r.section(c.health, join(path, 'health'), HEALTH) ?? {};
  const breaker = r.section(c.breaker, join(path, 'breaker'), BREAKER) ?? {};
  const nodes = r.list(c.nodes, join(path, 'nodes'), true).map((n, i) => readNode(r, n, join(join(path, 'nodes'), i), transport));
  if (c.nodes !== undefined && nodes.length === 0) r.problems.add(join(path, 'nodes'), 'must list at least one node');
  const archiveOnly = r.bool(c.archiveOnly, join(path, 'archiveOnly'), false);
  if (archiveOnly && nodes.length > 0 && !nodes.some((n) => n.role === 'archive')) {
    r.problems.add(join(path, 'nodes'), 'must include a node with role "archive" when archiveOnly is true');
  }
  return {
    name,
    plugin,
    transport,
    network: r.string(c.network, join(path, 'network'), name),
    route: { path: routePath, host: host?.toLowerCase() },
    archiveOnly,
    strategy: r.oneOf(c.strategy, join(path, 'strategy'), ['round-robin', 'weighted', 'least-latency', 'priority'] as const, 'round-robin'),
    attemptTimeoutMs: r.int(c.attemptTimeoutMs, join(path, 'attemptTimeoutMs'), 10_000, 1),
    maxAttempts: r.int(c.maxAttempts, join(path, 'maxAttempts'), 3, 1, 10),
    health: {
      intervalMs: r.int(health.intervalMs, join(path, 'health.intervalMs'), 2_000, 50),
      timeoutMs: r.int(health.timeoutMs, join(path, 'health.timeoutMs'), 1_500, 10),
      maxLag: r.int(health.maxLag, join(path, 'health.maxLag'), 5, 0),
      failAfter: r.int(health.failAfter, join(path, 'health.failAfter'), 2, 1, 100),
    },
    breaker: {
      errorThresholdPercentage: r.int(breaker.errorThresholdPercentage, join(path, 'breaker.errorThresholdPercentage'), 50, 1, 100),
      volumeThreshold: r.int(breaker.volumeThreshold, join(path, 'breaker.volumeThreshold'), 5, 1),
      rollingWindowMs: r.int(breaker.rollingWindowMs, join(path, 'breaker.rollingWindowMs'), 10_000, 100),
      resetTimeoutMs: r.int(breaker.resetTimeoutMs, join(path, 'breaker.resetTimeoutMs'), 5_000, 10),
    },
    cache: r.oneOf(c.cache, join(path, 'cache'), ['memory', 'redis', 'off'] as const, 'memory'),
    options: Object.freeze({ ...options }),
    nodes,
  };
}

function readStore(r: Reader, store: Record<string, unknown>, path: string): GatewayConfig['store'] {
  const kind = r.oneOf(store.kind, 'store.kind', ['file', 'redis'] as const, 'file');
  const url = kind === 'redis' ? r.string(store.url, 'store.url') : (r.optionalString(store.url, 'store.url') ?? '');
  if (kind === 'redis' && url !== '' && !/^rediss?:\/\//.test(url)) r.problems.add('store.url', 'must be a redis:// or rediss:// URL');
  return {
    kind,
    path,
    url,
    prefix: r.string(store.prefix, 'store.prefix', 'noderouter:'),
    timeoutMs: r.int(store.timeoutMs, 'store.timeoutMs', 250, 1, 60_000),
    onFailure: r.oneOf(store.onFailure, 'store.onFailure', ['fail-open', 'fail-closed'] as const, 'fail-open'),
    instances: r.int(store.instances, 'store.instances', 1, 1, 10_000),
  };
}

const DASHBOARD = [
  'enabled',
  'host',
  'port',
  'publicUrl',
  'sessionTtl',
  'signinTokenTtl',
  'signinAttemptsPerMinute',
  'trustProxy',
] as const;
const MINUTE = 60_000;
const DAY = 86_400_000;

function readDashboard(r: Reader, v: unknown): DashboardConfig {
  const d = r.section(v, 'dashboard', DASHBOARD) ?? {};
  const publicUrl = r.optionalString(d.publicUrl, 'dashboard.publicUrl')?.replace(/\/+$/, '');
  if (publicUrl !== undefined) {
    let ok = false;
    try {
      const u = new URL(publicUrl);
      ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === publicUrl;
    } catch {
      ok = false;
    }
    // The dashboard lives at /dashboard of this origin: a path here would be ignored, so refuse it.
    if (!ok) r.problems.add('dashboard.publicUrl', 'must be an origin like "https://dash.example.com" (no path, query or credentials)');
  }
  return {
    enabled: r.bool(d.enabled, 'dashboard.enabled', false),
    host: r.string(d.host, 'dashboard.host', '127.0.0.1'),
    port: d.port === undefined || d.port === null ? undefined : r.int(d.port, 'dashboard.port', 0, 0, 65535),
    publicUrl,
    sessionTtlMs: r.duration(d.sessionTtl, 'dashboard.sessionTtl', 12 * 3_600_000, MINUTE, 30 * DAY),
    signinTokenTtlMs: r.duration(d.signinTokenTtl, 'dashboard.signinTokenTtl', 15 * MINUTE, MINUTE, 7 * DAY),
    signinAttemptsPerMinute: r.int(d.signinAttemptsPerMinute, 'dashboard.signinAttemptsPerMinute', 10, 1, 10_000),
    trustProxy: r.bool(d.trustProxy, 'dashboard.trustProxy', false),
  };
}

/**
 * Node names are unique within a chain endpoint (metrics label them by chain and node);
 * routes are unique per listener; at most one gRPC chain is the default (no route.host).
 */
function checkUnique(problems: ConfigProblems, chains: ChainConfig[]): void {
  const routes = new Map<string, string>();
  const grpcDefaults = chains.filter((c) => c.transport === 'grpc' && c.route.host === undefined).map((c) => c.name);
  if (grpcDefaults.length > 1) {
    problems.add(
      `chains.${grpcDefaults[1]}.route`,
      `needs a host: chains.${grpcDefaults[0]} is already the default gRPC chain (the one without route.host)`,
    );
  }
  for (const c of chains) {
    const nodeNames = new Map<string, number>();
    c.nodes.forEach((n, i) => {
      const other = nodeNames.get(n.name);
      if (other !== undefined && n.name !== '') {
        problems.add(
          `chains.${c.name}.nodes[${i}].name`,
          `"${n.name}" is already used by nodes[${other}]: node names must be unique in a chain`,
        );
      }
      nodeNames.set(n.name, i);
    });
    if (c.transport === 'grpc' && c.route.host === undefined) continue; // the default: checked above
    const key = `${c.transport} ${c.route.host ?? '*'} ${c.route.path ?? '/'}`;
    const other = routes.get(key);
    if (other !== undefined) problems.add(`chains.${c.name}.route`, `is the same as chains.${other}.route`);
    routes.set(key, c.name);
  }
}

/** Validate a tree; returns the config or the list of problems (never both). */
export function validateConfig(
  tree: unknown,
  file: string,
  plugins: PluginLookup,
): { config: GatewayConfig; problems?: undefined } | { config?: undefined; problems: string[] } {
  const problems = new ConfigProblems();
  const r = new Reader(problems);
  const top = r.section(tree, '', TOP, true) ?? {};
  const s = r.section(top.server, 'server', SERVER) ?? {};
  const host = r.string(s.host, 'server.host', '127.0.0.1');
  const port = r.int(s.port, 'server.port', 8080, 0, 65535);
  const log = r.section(top.log, 'log', ['level']) ?? {};
  const admin = r.section(top.admin, 'admin', ['token']) ?? {};
  const store = r.section(top.store, 'store', ['kind', 'path', 'url', 'prefix', 'timeoutMs', 'onFailure', 'instances']) ?? {};
  const keys = r.section(top.keys, 'keys', ['cacheTtlMs', 'cacheMaxEntries', 'negativeTtlMs', 'rotationGraceSeconds']) ?? {};
  const cache = r.section(top.cache, 'cache', ['maxBytes', 'maxEntryBytes', 'redisMaxTtlMs']) ?? {};
  const devnet = r.section(top.devnet, 'devnet', ['blockTimeMs', 'fullRetention', 'startHeight', 'controlPort']) ?? {};
  const base = file === '' ? process.cwd() : dirname(file);
  const storePath = r.string(store.path, 'store.path', 'data/keys.json');

  const tiersTree = r.named(top.tiers, 'tiers', true) ?? {};
  const tiers: Record<string, TierConfig> = {};
  for (const [name, v] of Object.entries(tiersTree)) tiers[name] = readTier(r, name, v, join('tiers', name));
  if (top.tiers !== undefined && Object.keys(tiers).length === 0) problems.add('tiers', 'must define at least one tier');

  const chainsTree = r.named(top.chains, 'chains', true) ?? {};
  const chainList = Object.entries(chainsTree).map(([name, v]) => readChain(r, name, v, join('chains', name), plugins));
  if (top.chains !== undefined && chainList.length === 0) problems.add('chains', 'must define at least one chain endpoint');
  checkUnique(problems, chainList);
  const storeKind = (top.store as { kind?: unknown } | undefined)?.kind;
  for (const c of chainList) {
    if (c.cache === 'redis' && storeKind !== 'redis') {
      problems.add(`chains.${c.name}.cache`, 'is "redis", which needs store.kind: redis (the cache shares its connection)');
    }
  }

  const adminToken = typeof admin.token === 'string' && admin.token !== '' ? admin.token : undefined;
  if (admin.token !== undefined && admin.token !== null && typeof admin.token !== 'string') {
    problems.add('admin.token', 'must be a string');
  } else if (adminToken !== undefined && adminToken.length < 16) {
    problems.add('admin.token', 'must be at least 16 characters (set it from ${NODEROUTER_ADMIN_TOKEN})');
  }

  const config: GatewayConfig = {
    file,
    server: {
      host,
      port,
      adminHost: r.string(s.adminHost, 'server.adminHost', '127.0.0.1'),
      adminPort: r.int(s.adminPort, 'server.adminPort', 8081, 0, 65535),
      publicUrl: r.optionalString(s.publicUrl, 'server.publicUrl')?.replace(/\/+$/, ''),
      maxBodyBytes: r.int(s.maxBodyBytes, 'server.maxBodyBytes', 1_048_576, 1024),
      maxHeaderBytes: r.int(s.maxHeaderBytes, 'server.maxHeaderBytes', 16_384, 1024, 1_048_576),
      maxJsonDepth: r.int(s.maxJsonDepth, 'server.maxJsonDepth', 32, 2, 1000),
      maxMethodLength: r.int(s.maxMethodLength, 'server.maxMethodLength', 128, 8, 4096),
      maxPathLength: r.int(s.maxPathLength, 'server.maxPathLength', 2048, 64, 65_536),
      maxResponseBytes: r.int(s.maxResponseBytes, 'server.maxResponseBytes', 32 * 1024 * 1024, 1024),
      shutdownTimeoutMs: r.int(s.shutdownTimeoutMs, 'server.shutdownTimeoutMs', 15_000, 0),
      requestTimeoutMs: r.int(s.requestTimeoutMs, 'server.requestTimeoutMs', 30_000, 1),
      headersTimeoutMs: r.int(s.headersTimeoutMs, 'server.headersTimeoutMs', 10_000, 100),
      keepAliveTimeoutMs: r.int(s.keepAliveTimeoutMs, 'server.keepAliveTimeoutMs', 65_000, 100),
      maxConnections: r.int(s.maxConnections, 'server.maxConnections', 10_000, 1),
      wsMaxMessageBytes: r.int(s.wsMaxMessageBytes, 'server.wsMaxMessageBytes', 1_048_576, 1024),
      wsPingIntervalMs: r.int(s.wsPingIntervalMs, 'server.wsPingIntervalMs', 30_000, 10),
      grpcHost: r.string(s.grpcHost, 'server.grpcHost', '127.0.0.1'),
      grpcPort: r.int(s.grpcPort, 'server.grpcPort', 9090, 0, 65535),
    },
    log: { level: r.oneOf(log.level, 'log.level', ['debug', 'info', 'warn', 'error', 'silent'] as const, 'info') },
    admin: { token: adminToken },
    dashboard: readDashboard(r, top.dashboard),
    store: readStore(r, store, isAbsolute(storePath) ? storePath : resolve(base, storePath)),
    keys: {
      cacheTtlMs: r.int(keys.cacheTtlMs, 'keys.cacheTtlMs', 30_000, 0),
      cacheMaxEntries: r.int(keys.cacheMaxEntries, 'keys.cacheMaxEntries', 100_000, 1),
      negativeTtlMs: r.int(keys.negativeTtlMs, 'keys.negativeTtlMs', 5_000, 0),
      rotationGraceSeconds: r.int(keys.rotationGraceSeconds, 'keys.rotationGraceSeconds', 86_400, 0),
    },
    cache: {
      maxBytes: r.int(cache.maxBytes, 'cache.maxBytes', 64 * 1024 * 1024, 0),
      maxEntryBytes: r.int(cache.maxEntryBytes, 'cache.maxEntryBytes', 1024 * 1024, 1),
      redisMaxTtlMs: r.int(cache.redisMaxTtlMs, 'cache.redisMaxTtlMs', 3_600_000, 1),
    },
    tiers,
    devnet: {
      blockTimeMs: r.int(devnet.blockTimeMs, 'devnet.blockTimeMs', 1_000, 0),
      fullRetention: r.int(devnet.fullRetention, 'devnet.fullRetention', 128, 1),
      startHeight: r.int(devnet.startHeight, 'devnet.startHeight', 1_000, 1),
      controlPort: r.int(devnet.controlPort, 'devnet.controlPort', 0, 0, 65535),
    },
    chains: Object.fromEntries(chainList.map((c) => [c.name, c])),
  };
  if (problems.list.length > 0) return { problems: problems.list };
  return { config: deepFreeze(config) };
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const child of Object.values(v as object)) deepFreeze(child);
  }
  return v;
}
