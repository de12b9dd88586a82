// Validation of the interpolated YAML tree into GatewayConfig. Defaults live here
// and nowhere else; every problem names its path and what would be accepted.

import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { isAbsolute, resolve, dirname } from 'node:path';
import { DEFAULT_JSONRPC_LIMITS } from '../jsonrpc/envelope.js';
import type { ChainPlugin, VerifyMode } from '../plugin/contract.js';
import { builtInFamilies } from '../plugin/loader.js';
import { readChainCors, readServerCors } from './browser-access.js';
import { readNodeHeaders } from './node-headers.js';
import { ConfigProblems, Reader, join } from './reader.js';
import type {
  ChainConfig,
  ConsensusConfig,
  DashboardConfig,
  GatewayConfig,
  NodeConfig,
  ServerCorsConfig,
  TierConfig,
  TracingConfig,
} from './types.js';

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const ROUTE_PATH = /^(\/[A-Za-z0-9._~-]+)+$/;
const HOST = /^[A-Za-z0-9.-]+(:\d+)?$/;

const TOP = ['server', 'log', 'tracing', 'admin', 'dashboard', 'store', 'keys', 'cache', 'tiers', 'devnet', 'chains'] as const;
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
  'shutdownDelayMs',
  'requestTimeoutMs',
  'headersTimeoutMs',
  'keepAliveTimeoutMs',
  'maxConnections',
  'maxConnectionsPerClient',
  'wsMaxMessageBytes',
  'wsMaxBufferedBytes',
  'wsPingIntervalMs',
  'grpcHost',
  'grpcPort',
  'grpcMaxConcurrentStreams',
  'cors',
  'trustedProxies',
  'workers',
] as const;
const TIER = [
  'rate',
  'burst',
  'daily',
  'monthly',
  'maxBatch',
  'archive',
  'wsConnections',
  'wsSubscriptions',
  'cacheHitsFree',
  'account',
] as const;
const ACCOUNT_LIMITS = ['rate', 'burst', 'daily', 'monthly'] as const;
const CHAIN = [
  'plugin',
  'network',
  'chainId',
  'route',
  'archiveOnly',
  'strategy',
  'attemptTimeoutMs',
  'maxAttempts',
  'health',
  'breaker',
  'hedge',
  'submit',
  'verify',
  'consensus',
  'cache',
  'cors',
  'options',
  'nodes',
] as const;
const HEDGE = ['minDelayMs', 'maxDelayMs', 'perSecond'] as const;
const CONSENSUS = ['methods', 'ask', 'agree', 'onDisagree', 'maxDisputeRate', 'minCompared', 'windowMs', 'coolDownMs'] as const;
const NODE = ['name', 'url', 'ws', 'headers', 'role', 'weight', 'priority'] as const;
const HEALTH = ['intervalMs', 'timeoutMs', 'maxLag', 'failAfter', 'minBlockTimeMs', 'describeIntervalMs'] as const;
const BREAKER = ['errorThresholdPercentage', 'volumeThreshold', 'rollingWindowMs', 'resetTimeoutMs'] as const;

export type PluginLookup = (name: string) => ChainPlugin | undefined;

function readTier(r: Reader, name: string, v: unknown, path: string): TierConfig {
  const t = r.section(v, path, TIER) ?? {};
  const rate = r.limit(t.rate, join(path, 'rate'), 10);
  const burst = r.limit(t.burst, join(path, 'burst'), rate === Infinity ? Infinity : rate * 2);
  const daily = r.limit(t.daily, join(path, 'daily'), Infinity);
  const monthly = r.limit(t.monthly, join(path, 'monthly'), Infinity);
  // Every key of an account together: by default what one key gets, so making more keys buys nothing.
  const ap = join(path, 'account');
  const a = r.section(t.account, ap, ACCOUNT_LIMITS) ?? {};
  return {
    name,
    rate,
    burst,
    daily,
    monthly,
    account: {
      rate: r.limit(a.rate, join(ap, 'rate'), rate),
      burst: r.limit(a.burst, join(ap, 'burst'), burst),
      daily: r.limit(a.daily, join(ap, 'daily'), daily),
      monthly: r.limit(a.monthly, join(ap, 'monthly'), monthly),
    },
    maxBatch: r.limit(t.maxBatch, join(path, 'maxBatch'), 100),
    archive: r.bool(t.archive, join(path, 'archive'), false),
    wsConnections: r.limit(t.wsConnections, join(path, 'wsConnections'), 10),
    wsSubscriptions: r.limit(t.wsSubscriptions, join(path, 'wsSubscriptions'), 100),
    cacheHitsFree: r.bool(t.cacheHitsFree, join(path, 'cacheHitsFree'), false),
  };
}

/**
 * A user or password part of a node URL is refused: it would be sent as Basic auth
 * nobody asked for, and `headers` says what is sent. Path and query tokens are kept
 * (printed as REDACTED). The message never repeats the URL.
 */
const CREDENTIALS =
  'must not carry credentials ("user:password@host"): give them in the node\'s headers instead, e.g. headers: { Authorization: "Basic ${NODE_AUTH}" } or { Authorization: "Bearer ${NODE_TOKEN}" }';

function parsedUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** Trailing slashes of the path go; a query stays as written. */
function trimSlashes(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url.replace(/\/+$/, '') : `${url.slice(0, q).replace(/\/+$/, '')}${url.slice(q)}`;
}

function hasCredentials(u: URL): boolean {
  return u.username !== '' || u.password !== '';
}

function readNode(r: Reader, v: unknown, path: string, transport: 'http' | 'grpc'): NodeConfig {
  const n = r.section(v, path, NODE, true) ?? {};
  const name = r.string(n.name, join(path, 'name'));
  if (name !== '' && !NAME.test(name)) r.problems.add(join(path, 'name'), 'must be lower-case letters, digits, "-" or "_"');
  const url = r.string(n.url, join(path, 'url'));
  if (url !== '') {
    const u = parsedUrl(url);
    if (u !== undefined && hasCredentials(u)) r.problems.add(join(path, 'url'), CREDENTIALS);
    else if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.hash !== '') {
      r.problems.add(join(path, 'url'), 'must be an http:// or https:// URL (a path and a query are kept; no #fragment)');
    } else if (transport === 'grpc' && !/^http:\/\/[^/?]+\/?$/.test(url)) {
      r.problems.add(
        join(path, 'url'),
        'of a gRPC node must be http://host:port (cleartext HTTP/2, no path or query: give credentials in headers, sent as metadata): TLS to gRPC nodes is not supported yet, terminate it in front of the node',
      );
    }
  }
  const ws = r.optionalString(n.ws, join(path, 'ws'));
  if (ws !== undefined) {
    const u = parsedUrl(ws);
    if (u !== undefined && hasCredentials(u)) r.problems.add(join(path, 'ws'), CREDENTIALS);
    else if (u === undefined || (u.protocol !== 'ws:' && u.protocol !== 'wss:') || u.hash !== '') {
      r.problems.add(
        join(path, 'ws'),
        'must be a ws:// or wss:// URL without credentials, like "ws://10.0.0.5:8546" (a path and a query are kept)',
      );
    }
  }
  const headers = readNodeHeaders(r, n.headers, join(path, 'headers'), transport);
  return {
    name,
    url: trimSlashes(url),
    ws: ws ?? trimSlashes(url.replace(/^http/, 'ws')),
    headers,
    // Left out, the node's own description decides (src/pool/describe.ts).
    role: n.role === undefined || n.role === null ? undefined : r.oneOf(n.role, join(path, 'role'), ['full', 'archive'] as const),
    weight: r.int(n.weight, join(path, 'weight'), 1, 1, 1000),
    priority: r.int(n.priority, join(path, 'priority'), 0, 0, 100),
  };
}

/**
 * Which listener serves a chain follows from its plugin's codecs: the traffic listener
 * when it reads HTTP, else the gRPC listener. Creating a handler does no I/O.
 */
function listenerOf(
  r: Reader,
  impl: ChainPlugin,
  chain: string,
  options: Readonly<Record<string, unknown>>,
  path: string,
): 'http' | 'grpc' {
  let handler;
  try {
    handler = impl.create({ chain, options, limits: DEFAULT_JSONRPC_LIMITS });
  } catch (err) {
    r.problems.add(path, `plugin "${impl.name}" could not be set up with these options: ${(err as Error).message}`);
    return 'http';
  }
  if (handler.http !== undefined) return 'http';
  if (handler.grpc !== undefined) return 'grpc';
  r.problems.add(path, `plugin "${impl.name}" serves no listener (its handler has neither an http nor a grpc codec)`);
  return 'http';
}

/** `verify` is off, or the chain's plugin has answers it can check. */
function readVerify(
  r: Reader,
  v: unknown,
  path: string,
  impl: ChainPlugin | undefined,
  chain: string,
  options: Readonly<Record<string, unknown>>,
  usable: boolean,
): VerifyMode {
  const mode = r.oneOf(v, path, ['off', 'observe', 'enforce'] as const, 'off');
  if (mode === 'off' || impl === undefined || !usable) return mode;
  try {
    if (impl.create({ chain, options, limits: DEFAULT_JSONRPC_LIMITS }).jsonrpc?.check !== undefined) return mode;
  } catch {
    return mode; // listenerOf has said why the plugin cannot be set up
  }
  r.problems.add(path, `is "${mode}", but plugin "${impl.name}" checks no answers: set it to "off" (EVM chains can verify blocks)`);
  return mode;
}

function readChain(r: Reader, name: string, v: unknown, path: string, plugins: PluginLookup, cors: ServerCorsConfig): ChainConfig {
  const c = r.section(v, path, CHAIN, true) ?? {};
  if (!NAME.test(name)) r.problems.add(path, 'name must be lower-case letters, digits, "-" or "_"');
  const plugin = r.string(c.plugin, join(path, 'plugin'));
  const impl = plugin === '' ? undefined : plugins(plugin);
  const options = r.named(c.options, join(path, 'options')) ?? {};
  const optionProblems = impl?.validateOptions?.(options) ?? [];
  for (const [sub, message] of optionProblems) r.problems.add(join(join(path, 'options'), sub), message);
  const transport = impl === undefined || optionProblems.length > 0 ? 'http' : listenerOf(r, impl, name, options, join(path, 'plugin'));
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
  if (plugin !== '' && impl === undefined) {
    r.problems.add(
      join(path, 'plugin'),
      `names no plugin: use a built-in one (${[...builtInFamilies().keys()].join(', ')}) or an installed npm package`,
    );
  }
  if (transport === 'grpc' && routePath !== undefined) {
    r.problems.add(
      join(path, 'route.path'),
      `("${routePath}") cannot route gRPC calls, whose paths are /package.Service/Method: remove it and set route.host (the :authority clients dial), or leave route out to make this the default gRPC chain`,
    );
  }
  const health = r.section(c.health, join(path, 'health'), HEALTH) ?? {};
  const breaker = r.section(c.breaker, join(path, 'breaker'), BREAKER) ?? {};
  const hedge = r.section(c.hedge, join(path, 'hedge'), HEDGE) ?? {};
  const minDelayMs = r.int(hedge.minDelayMs, join(path, 'hedge.minDelayMs'), 100, 1);
  const maxDelayMs = r.int(hedge.maxDelayMs, join(path, 'hedge.maxDelayMs'), 1_000, 1);
  if (maxDelayMs < minDelayMs) r.problems.add(join(path, 'hedge.maxDelayMs'), `must be at least hedge.minDelayMs (${minDelayMs})`);
  const nodes = r.list(c.nodes, join(path, 'nodes'), true).map((n, i) => readNode(r, n, join(join(path, 'nodes'), i), transport));
  if (c.nodes !== undefined && nodes.length === 0) r.problems.add(join(path, 'nodes'), 'must list at least one node');
  const archiveOnly = r.bool(c.archiveOnly, join(path, 'archiveOnly'), false);
  if (archiveOnly && nodes.length > 0 && nodes.every((n) => n.role === 'full')) {
    r.problems.add(
      join(path, 'nodes'),
      'must include a node with role "archive" (or without a role, to be detected) when archiveOnly is true',
    );
  }
  return {
    name,
    plugin,
    transport,
    network: r.string(c.network, join(path, 'network'), name),
    chainId: readChainId(r, c.chainId, join(path, 'chainId')),
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
      minBlockTimeMs: r.int(health.minBlockTimeMs, join(path, 'health.minBlockTimeMs'), 100, 1),
      describeIntervalMs: r.int(health.describeIntervalMs, join(path, 'health.describeIntervalMs'), 300_000, 1_000),
    },
    breaker: {
      errorThresholdPercentage: r.int(breaker.errorThresholdPercentage, join(path, 'breaker.errorThresholdPercentage'), 50, 1, 100),
      volumeThreshold: r.int(breaker.volumeThreshold, join(path, 'breaker.volumeThreshold'), 5, 1),
      rollingWindowMs: r.int(breaker.rollingWindowMs, join(path, 'breaker.rollingWindowMs'), 10_000, 100),
      resetTimeoutMs: r.int(breaker.resetTimeoutMs, join(path, 'breaker.resetTimeoutMs'), 5_000, 10),
    },
    hedge: { minDelayMs, maxDelayMs, perSecond: r.int(hedge.perSecond, join(path, 'hedge.perSecond'), 50, 0) },
    submit: r.oneOf(c.submit, join(path, 'submit'), ['all', 'one'] as const, 'all'),
    verify: readVerify(r, c.verify, join(path, 'verify'), impl, name, options, optionProblems.length === 0),
    consensus: readConsensus(r, c.consensus, join(path, 'consensus'), nodes.length),
    cache: r.oneOf(c.cache, join(path, 'cache'), ['memory', 'redis', 'off'] as const, 'memory'),
    cors: readChainCors(r, c.cors, join(path, 'cors'), cors),
    options: Object.freeze({ ...options }),
    nodes,
  };
}

/** `consensus:` of a chain; absent: answers are not checked across nodes. */
function readConsensus(r: Reader, v: unknown, path: string, nodes: number): ConsensusConfig | undefined {
  if (v === undefined || v === null) return undefined;
  const c = r.section(v, path, CONSENSUS) ?? {};
  const methods = c.methods === undefined ? undefined : r.stringList(c.methods, join(path, 'methods'), []);
  const ask = r.int(c.ask, join(path, 'ask'), 3, 2, 16);
  const agree = r.int(c.agree, join(path, 'agree'), Math.floor(ask / 2) + 1, 1, 16);
  if (agree > ask) r.problems.add(join(path, 'agree'), `must be at most consensus.ask (${ask})`);
  if (nodes > 0 && ask > nodes)
    r.problems.add(join(path, 'ask'), `asks ${ask} nodes but the chain lists ${nodes}: list more nodes or ask fewer`);
  const rate = c.maxDisputeRate ?? 0.2;
  if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) r.problems.add(join(path, 'maxDisputeRate'), 'must be a number from 0 to 1');
  return {
    methods,
    ask,
    agree,
    onDisagree: r.oneOf(c.onDisagree, join(path, 'onDisagree'), ['answer-majority', 'error', 'prefer-archive'] as const, 'answer-majority'),
    maxDisputeRate: typeof rate === 'number' ? rate : 0.2,
    minCompared: r.int(c.minCompared, join(path, 'minCompared'), 5, 1),
    windowMs: r.int(c.windowMs, join(path, 'windowMs'), 60_000, 100),
    coolDownMs: r.int(c.coolDownMs, join(path, 'coolDownMs'), 60_000, 100),
  };
}

/** Printable ASCII without spaces. */
const CHAIN_ID = /^[!-~]{1,128}$/;
const CHAIN_ID_HELP =
  'must be the id the nodes report: a number for EVM chains (1 or "0x1"), the network id for SDK chains ("cosmoshub-4"), the chain identifier for objectx ("35834a8a")';

/** A chain id as plugins report it: EVM ids in decimal (a 0x number is read as one), others as written. */
function readChainId(r: Reader, v: unknown, path: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  if (typeof v !== 'string' || !CHAIN_ID.test(v)) {
    r.problems.add(path, CHAIN_ID_HELP);
    return undefined;
  }
  return /^0x[0-9a-f]{1,64}$/i.test(v) ? BigInt(v).toString() : v;
}

const TRACING = ['endpoint', 'headers', 'serviceName', 'sampleRatio', 'exportIntervalMs'] as const;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const HEADER_VALUE = /^[\t !-~]{0,8192}$/;

/** OTLP/HTTP export of traces; an endpoint given as a bare origin gets the standard /v1/traces path. */
function readTracing(r: Reader, v: unknown): TracingConfig {
  const t = r.section(v, 'tracing', TRACING) ?? {};
  // `endpoint: ${OTEL_ENDPOINT:-}` leaves tracing off when the variable is unset.
  let endpoint = t.endpoint === '' ? undefined : r.optionalString(t.endpoint, 'tracing.endpoint');
  if (endpoint !== undefined) {
    const u = parsedUrl(endpoint);
    if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || hasCredentials(u)) {
      r.problems.add(
        'tracing.endpoint',
        'must be the collector\'s OTLP/HTTP URL, like "http://127.0.0.1:4318/v1/traces" (credentials go in tracing.headers)',
      );
      endpoint = undefined;
    } else if (u.pathname === '/') endpoint = `${u.origin}/v1/traces${u.search}`;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(r.named(t.headers, 'tracing.headers') ?? {})) {
    const path = join('tracing.headers', name);
    if (!HEADER_NAME.test(name)) r.problems.add(path, 'is not a valid HTTP header name');
    else if (typeof value !== 'string' || !HEADER_VALUE.test(value))
      r.problems.add(path, 'must be a string of printable characters on one line');
    else headers[name.toLowerCase()] = value;
  }
  const ratio = typeof t.sampleRatio === 'string' && /^\d+(\.\d+)?$/.test(t.sampleRatio) ? Number(t.sampleRatio) : t.sampleRatio;
  let sampleRatio = 1;
  if (ratio !== undefined && ratio !== null) {
    if (typeof ratio === 'number' && ratio >= 0 && ratio <= 1) sampleRatio = ratio;
    else r.problems.add('tracing.sampleRatio', 'must be a number from 0 to 1 (1: every trace begun here is recorded)');
  }
  return {
    endpoint,
    headers,
    serviceName: r.string(t.serviceName, 'tracing.serviceName', 'noderouter'),
    sampleRatio,
    exportIntervalMs: r.int(t.exportIntervalMs, 'tracing.exportIntervalMs', 5_000, 10, 600_000),
  };
}

/** `auto` (the default) or a whole number of tokens (0: no leases). */
function readLeaseTokens(r: Reader, v: unknown): number | 'auto' {
  if (v === undefined || v === null || v === 'auto') return 'auto';
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 1e9) return n;
  r.problems.add('store.leaseTokens', 'must be "auto" or an integer from 0 (0: no leases, every call asks Redis)');
  return 'auto';
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
    leaseMs: r.int(store.leaseMs, 'store.leaseMs', 200, 0, 10_000),
    leaseTokens: readLeaseTokens(r, store.leaseTokens),
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

/** IP addresses and CIDR ranges ("10.0.0.0/8", "fd00::/8") of proxies whose X-Forwarded-For is believed. */
function readTrustedProxies(r: Reader, v: unknown): string[] {
  return r.stringList(v, 'server.trustedProxies', []).filter((e, i) => {
    const [address, bits, extra] = e.split('/');
    const family = isIP(address ?? '');
    const max = family === 6 ? 128 : 32;
    const ok = family !== 0 && extra === undefined && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= max));
    if (!ok && e !== '')
      r.problems.add(`server.trustedProxies[${i}]`, 'must be an IP address or a CIDR range like "10.0.0.0/8" or "fd00::/8"');
    return ok;
  });
}

function readLog(r: Reader, v: unknown, base: string): GatewayConfig['log'] {
  const log = r.section(v, 'log', ['level', 'file', 'maxBytes', 'files']) ?? {};
  const file = r.optionalString(log.file, 'log.file');
  return {
    level: r.oneOf(log.level, 'log.level', ['debug', 'info', 'warn', 'error', 'silent'] as const, 'info'),
    file: file === undefined ? undefined : isAbsolute(file) ? file : resolve(base, file),
    maxBytes: r.int(log.maxBytes, 'log.maxBytes', 100 * 1_048_576, 1024),
    files: r.int(log.files, 'log.files', 5, 0, 1000),
  };
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
  const cors = readServerCors(r, s.cors);
  const admin = r.section(top.admin, 'admin', ['token']) ?? {};
  const store =
    r.section(top.store, 'store', ['kind', 'path', 'url', 'prefix', 'timeoutMs', 'onFailure', 'instances', 'leaseMs', 'leaseTokens']) ?? {};
  const keys =
    r.section(top.keys, 'keys', [
      'cacheTtlMs',
      'cacheMaxEntries',
      'negativeTtlMs',
      'negativeMaxEntries',
      'rotationGraceSeconds',
      'maxActivePerAccount',
      'changesPerHour',
      'changesBurst',
    ]) ?? {};
  const cache = r.section(top.cache, 'cache', ['maxBytes', 'maxEntryBytes', 'redisMaxTtlMs']) ?? {};
  const devnet =
    r.section(top.devnet, 'devnet', ['blockTimeMs', 'fullRetention', 'startHeight', 'controlPort', 'filterTimeoutMs', 'maxLogsRange']) ??
    {};
  const base = file === '' ? process.cwd() : dirname(file);
  const storePath = r.string(store.path, 'store.path', 'data/keys.json');

  const tiersTree = r.named(top.tiers, 'tiers', true) ?? {};
  const tiers: Record<string, TierConfig> = {};
  for (const [name, v] of Object.entries(tiersTree)) tiers[name] = readTier(r, name, v, join('tiers', name));
  if (top.tiers !== undefined && Object.keys(tiers).length === 0) problems.add('tiers', 'must define at least one tier');

  const chainsTree = r.named(top.chains, 'chains', true) ?? {};
  const chainList = Object.entries(chainsTree).map(([name, v]) => readChain(r, name, v, join('chains', name), plugins, cors));
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
      shutdownDelayMs: r.int(s.shutdownDelayMs, 'server.shutdownDelayMs', 5_000, 0, 600_000),
      requestTimeoutMs: r.int(s.requestTimeoutMs, 'server.requestTimeoutMs', 30_000, 1),
      headersTimeoutMs: r.int(s.headersTimeoutMs, 'server.headersTimeoutMs', 10_000, 100),
      keepAliveTimeoutMs: r.int(s.keepAliveTimeoutMs, 'server.keepAliveTimeoutMs', 65_000, 100),
      maxConnections: r.int(s.maxConnections, 'server.maxConnections', 10_000, 1),
      maxConnectionsPerClient: r.int(s.maxConnectionsPerClient, 'server.maxConnectionsPerClient', 256, 0),
      wsMaxMessageBytes: r.int(s.wsMaxMessageBytes, 'server.wsMaxMessageBytes', 1_048_576, 1024),
      wsMaxBufferedBytes: r.int(s.wsMaxBufferedBytes, 'server.wsMaxBufferedBytes', 8 * 1_048_576, 1024),
      wsPingIntervalMs: r.int(s.wsPingIntervalMs, 'server.wsPingIntervalMs', 30_000, 10),
      grpcHost: r.string(s.grpcHost, 'server.grpcHost', '127.0.0.1'),
      grpcPort: r.int(s.grpcPort, 'server.grpcPort', 9090, 0, 65535),
      grpcMaxConcurrentStreams: r.int(s.grpcMaxConcurrentStreams, 'server.grpcMaxConcurrentStreams', 100, 1, 10_000),
      cors,
      trustedProxies: readTrustedProxies(r, s.trustedProxies),
      workers: readWorkers(r, s.workers),
    },
    log: readLog(r, top.log, base),
    tracing: readTracing(r, top.tracing),
    admin: { token: adminToken },
    dashboard: readDashboard(r, top.dashboard),
    store: readStore(r, store, isAbsolute(storePath) ? storePath : resolve(base, storePath)),
    keys: {
      cacheTtlMs: r.int(keys.cacheTtlMs, 'keys.cacheTtlMs', 30_000, 0),
      cacheMaxEntries: r.int(keys.cacheMaxEntries, 'keys.cacheMaxEntries', 100_000, 1),
      negativeTtlMs: r.int(keys.negativeTtlMs, 'keys.negativeTtlMs', 5_000, 0),
      negativeMaxEntries: r.int(keys.negativeMaxEntries, 'keys.negativeMaxEntries', 10_000, 1),
      rotationGraceSeconds: r.int(keys.rotationGraceSeconds, 'keys.rotationGraceSeconds', 86_400, 0),
      maxActivePerAccount: r.int(keys.maxActivePerAccount, 'keys.maxActivePerAccount', 100, 1, 1_000_000),
      changesPerHour: r.int(keys.changesPerHour, 'keys.changesPerHour', 60, 1, 1_000_000),
      changesBurst: r.int(keys.changesBurst, 'keys.changesBurst', 10, 1, 1_000_000),
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
      filterTimeoutMs: r.int(devnet.filterTimeoutMs, 'devnet.filterTimeoutMs', 300_000, 1),
      maxLogsRange: r.int(devnet.maxLogsRange, 'devnet.maxLogsRange', 0, 0),
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

/** `server.workers`: a count, or `auto` (one per core this process may use). */
function readWorkers(r: Reader, v: unknown): number {
  if (v === 'auto') return availableParallelism();
  return r.int(v, 'server.workers', 1, 1, 1024);
}
