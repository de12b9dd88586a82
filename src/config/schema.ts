// Validation of the interpolated YAML tree into GatewayConfig: the tree is checked
// against the config's shape (shape.ts: types, ranges, words, unknown keys, defaults),
// then what depends on several settings or on a plugin is checked and read here. Every
// problem names its path and what would be accepted.

import { isIP } from 'node:net';
import { isAbsolute, resolve, dirname } from 'node:path';
import { DEFAULT_JSONRPC_LIMITS } from '../jsonrpc/envelope.js';
import type { ChainPlugin, VerifyMode } from '../plugin/contract.js';
import { builtInFamilies } from '../plugin/loader.js';
import { usableCpus } from './usable-cpus.js';
import { readChainCors, readServerCors } from './browser-access.js';
import { parseDuration } from './duration.js';
import { readNodeHeaders } from './node-headers.js';
import { ConfigProblems, join } from './reader.js';
import { ConfigFile, DURATIONS, durationMessage, type ChainFile, type NodeFile, type TierFile } from './shape.js';
import type {
  ChainConfig,
  ConsensusConfig,
  DashboardConfig,
  UsageConfig,
  GatewayConfig,
  HedgeConfig,
  LogConfig,
  NodeConfig,
  ServerCorsConfig,
  TierConfig,
  TracingConfig,
} from './types.js';
import { checkShape, withoutNulls, type ShapeResult } from './validate.js';
import { checkRedisCache, readStore, takeOldStore } from './store-config.js';

export type PluginLookup = (name: string) => ChainPlugin | undefined;

/** What the checks below need: the problems so far, and where the shape was right. */
interface Ctx {
  readonly problems: ConfigProblems;
  readonly shape: ShapeResult;
}

const limit = (v: number | 'unlimited'): number => (v === 'unlimited' ? Infinity : v);

function readTier(name: string, t: TierFile): TierConfig {
  const rate = limit(t.rate);
  const burst = t.burst === undefined ? (rate === Infinity ? Infinity : rate * 2) : limit(t.burst);
  const daily = limit(t.daily);
  const monthly = limit(t.monthly);
  const wsConnections = limit(t.wsConnections);
  const wsSubscriptions = limit(t.wsSubscriptions);
  // Every key of an account together: by default what one key gets, so making more keys buys nothing.
  const a = t.account;
  return {
    name,
    rate,
    burst,
    daily,
    monthly,
    account: {
      rate: a.rate === undefined ? rate : limit(a.rate),
      burst: a.burst === undefined ? burst : limit(a.burst),
      daily: a.daily === undefined ? daily : limit(a.daily),
      monthly: a.monthly === undefined ? monthly : limit(a.monthly),
      wsConnections: a.wsConnections === undefined ? wsConnections : limit(a.wsConnections),
      // What one key could hold: its connections, each with its subscriptions.
      wsSubscriptions:
        a.wsSubscriptions === undefined
          ? wsConnections === 0 || wsSubscriptions === 0
            ? 0
            : wsConnections * wsSubscriptions
          : limit(a.wsSubscriptions),
    },
    maxBatch: limit(t.maxBatch),
    archive: t.archive,
    wsConnections,
    wsSubscriptions,
    cacheHitsFree: t.cacheHitsFree,
    nodeCalls: t.nodeCalls,
    chargeFanout: t.chargeFanout,
    costs: { invalid: t.costs.invalid },
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

function readNode(ctx: Ctx, n: NodeFile, at: string, path: string, transport: 'http' | 'grpc'): NodeConfig {
  const { problems, shape } = ctx;
  // A setting the shape found wrong or missing is not read again (its problem is already listed).
  const url = shape.ok(`${at}/url`) ? n.url : '';
  if (url !== '') {
    const u = parsedUrl(url);
    if (u !== undefined && hasCredentials(u)) problems.add(join(path, 'url'), CREDENTIALS);
    else if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.hash !== '') {
      problems.add(join(path, 'url'), 'must be an http:// or https:// URL (a path and a query are kept; no #fragment)');
    } else if (transport === 'grpc' && !/^http:\/\/[^/?]+\/?$/.test(url)) {
      problems.add(
        join(path, 'url'),
        'of a gRPC node must be http://host:port (cleartext HTTP/2, no path or query: give credentials in headers, sent as metadata): TLS to gRPC nodes is not supported yet, terminate it in front of the node',
      );
    }
  }
  const ws = n.ws;
  if (ws !== undefined && shape.ok(`${at}/ws`)) {
    const u = parsedUrl(ws);
    if (u !== undefined && hasCredentials(u)) problems.add(join(path, 'ws'), CREDENTIALS);
    else if (u === undefined || (u.protocol !== 'ws:' && u.protocol !== 'wss:') || u.hash !== '') {
      problems.add(
        join(path, 'ws'),
        'must be a ws:// or wss:// URL without credentials, like "ws://10.0.0.5:8546" (a path and a query are kept)',
      );
    }
  }
  const headers =
    n.headers !== undefined && shape.ok(`${at}/headers`) ? readNodeHeaders(problems, n.headers, join(path, 'headers'), transport) : {};
  return {
    name: shape.ok(`${at}/name`) ? n.name : '',
    url: trimSlashes(url),
    ws: ws ?? trimSlashes(url.replace(/^http/, 'ws')),
    headers,
    role: n.role,
    weight: n.weight,
    priority: n.priority,
  };
}

/**
 * Which listener serves a chain follows from its plugin's codecs: the traffic listener
 * when it reads HTTP, else the gRPC listener. Creating a handler does no I/O.
 */
function listenerOf(
  problems: ConfigProblems,
  impl: ChainPlugin,
  chain: string,
  options: Readonly<Record<string, unknown>>,
  path: string,
): 'http' | 'grpc' {
  let handler;
  try {
    handler = impl.create({ chain, options, limits: DEFAULT_JSONRPC_LIMITS });
  } catch (err) {
    problems.add(path, `plugin "${impl.name}" could not be set up with these options: ${(err as Error).message}`);
    return 'http';
  }
  if (handler.http !== undefined) return 'http';
  if (handler.grpc !== undefined) return 'grpc';
  problems.add(path, `plugin "${impl.name}" serves no listener (its handler has neither an http nor a grpc codec)`);
  return 'http';
}

/** A plugin's options: checked against its optionsSchema, then by its own validateOptions. */
function readOptions(ctx: Ctx, impl: ChainPlugin, options: Record<string, unknown>, path: string): boolean {
  const before = ctx.problems.list.length;
  if (impl.optionsSchema !== undefined) {
    for (const p of checkShape(impl.optionsSchema, options, path, 'option').problems) ctx.problems.list.push(p);
  }
  if (ctx.problems.list.length === before) {
    for (const [sub, message] of impl.validateOptions?.(options) ?? []) ctx.problems.add(join(path, sub), message);
  }
  return ctx.problems.list.length === before;
}

function readChain(ctx: Ctx, name: string, c: ChainFile, plugins: PluginLookup, cors: ServerCorsConfig): ChainConfig {
  const { problems, shape } = ctx;
  const at = `/chains/${name}`;
  const path = join('chains', name);
  const plugin = c.plugin;
  const impl = shape.ok(`${at}/plugin`) ? plugins(plugin) : undefined;
  if (impl === undefined && shape.ok(`${at}/plugin`)) {
    problems.add(
      join(path, 'plugin'),
      `names no plugin: use a built-in one (${[...builtInFamilies().keys()].join(', ')}) or an installed npm package`,
    );
  }
  const options = c.options;
  const optionsOk = impl !== undefined && shape.ok(`${at}/options`) && readOptions(ctx, impl, options, join(path, 'options'));
  const transport = impl === undefined || !optionsOk ? 'http' : listenerOf(problems, impl, name, options, join(path, 'plugin'));
  // A gRPC chain without a route is the default gRPC chain.
  const route = shape.clean(`${at}/route`) ? (c.route ?? {}) : {};
  if (c.route === undefined && transport === 'http') problems.add(join(path, 'route'), 'is required');
  if (transport === 'grpc' && route.path !== undefined && shape.clean(`${at}/route`)) {
    problems.add(
      join(path, 'route.path'),
      `("${route.path}") cannot route gRPC calls, whose paths are /package.Service/Method: remove it and set route.host (the :authority clients dial), or leave route out to make this the default gRPC chain`,
    );
  }
  if (shape.clean(`${at}/hedge`) && c.hedge.maxDelayMs < c.hedge.minDelayMs) {
    problems.add(join(path, 'hedge.maxDelayMs'), `must be at least hedge.minDelayMs (${c.hedge.minDelayMs})`);
  }
  const hedge = readHedge(problems, c.hedge, path);
  if (shape.clean(`${at}/ejection`) && c.ejection.maxMs < c.ejection.baseMs) {
    problems.add(join(path, 'ejection.maxMs'), `must be at least ejection.baseMs (${c.ejection.baseMs})`);
  }
  const nodes = shape.ok(`${at}/nodes`)
    ? c.nodes.flatMap((n, i) =>
        shape.ok(`${at}/nodes/${i}`) ? [readNode(ctx, n, `${at}/nodes/${i}`, join(join(path, 'nodes'), i), transport)] : [],
      )
    : [];
  if (c.archiveOnly && nodes.length > 0 && nodes.every((n) => n.role === 'full')) {
    problems.add(
      join(path, 'nodes'),
      'must include a node with role "archive" (or without a role, to be detected) when archiveOnly is true',
    );
  }
  return {
    name,
    plugin,
    transport,
    network: c.network ?? name,
    chainId: readChainId(c.chainId),
    route: { path: route.path, host: route.host?.toLowerCase() },
    archiveOnly: c.archiveOnly,
    strategy: c.strategy,
    attemptTimeoutMs: c.attemptTimeoutMs,
    maxAttempts: c.maxAttempts,
    health: c.health,
    breaker: c.breaker,
    hedge,
    ejection: c.ejection,
    submit: c.submit,
    verify: readVerify(ctx, c.verify, join(path, 'verify'), impl, name, options, optionsOk),
    consensus: readConsensus(ctx, c.consensus, `${at}/consensus`, join(path, 'consensus'), nodes.length),
    cache: c.cache,
    cors: shape.ok(`${at}/cors`) && shape.ok(`${at}/cors/origins`) ? readChainCors(problems, c.cors, join(path, 'cors'), cors) : cors,
    options: Object.freeze({ ...options }),
    nodes,
  };
}

/**
 * The hedge budget: `budgetPercent` (10) of the calls on top of `minPerSecond` (50).
 * `perSecond`, the cap this budget replaced, is read as the floor it now is; `perSecond: 0`
 * still turns hedging off, as it did.
 */
function readHedge(problems: ConfigProblems, h: ChainFile['hedge'], path: string): HedgeConfig {
  if (h.perSecond !== undefined && h.minPerSecond !== undefined) {
    problems.add(
      join(path, 'hedge.perSecond'),
      'is the old name of hedge.minPerSecond (now a floor, with hedge.budgetPercent of the calls on top): remove perSecond',
    );
  }
  const off = h.perSecond === 0 && h.minPerSecond === undefined;
  return {
    minDelayMs: h.minDelayMs,
    maxDelayMs: h.maxDelayMs,
    budgetPercent: h.budgetPercent ?? (off ? 0 : 10),
    minPerSecond: h.minPerSecond ?? h.perSecond ?? 50,
  };
}

/** `verify` is off, or the chain's plugin has answers it can check. */
function readVerify(
  { problems }: Ctx,
  mode: VerifyMode,
  path: string,
  impl: ChainPlugin | undefined,
  chain: string,
  options: Readonly<Record<string, unknown>>,
  usable: boolean,
): VerifyMode {
  if (mode === 'off' || impl === undefined || !usable) return mode;
  try {
    if (impl.create({ chain, options, limits: DEFAULT_JSONRPC_LIMITS }).jsonrpc?.check !== undefined) return mode;
  } catch {
    return mode; // listenerOf has said why the plugin cannot be set up
  }
  problems.add(path, `is "${mode}", but plugin "${impl.name}" checks no answers: set it to "off" (EVM chains can verify blocks)`);
  return mode;
}

/** `consensus:` of a chain; absent: answers are not checked across nodes. */
function readConsensus(
  { problems, shape }: Ctx,
  c: ChainFile['consensus'],
  at: string,
  path: string,
  nodes: number,
): ConsensusConfig | undefined {
  if (c === undefined || !shape.ok(at)) return undefined;
  const agree = c.agree ?? Math.floor(c.ask / 2) + 1;
  if (agree > c.ask) problems.add(join(path, 'agree'), `must be at most consensus.ask (${c.ask})`);
  if (nodes > 0 && c.ask > nodes) {
    problems.add(join(path, 'ask'), `asks ${c.ask} nodes but the chain lists ${nodes}: list more nodes or ask fewer`);
  }
  return { ...c, methods: c.methods, agree };
}

/** A chain id as plugins report it: EVM ids in decimal (a 0x number is read as one), others as written. */
function readChainId(v: string | number | undefined): string | undefined {
  if (v === undefined) return undefined;
  const text = String(v);
  return /^0x[0-9a-f]{1,64}$/i.test(text) ? BigInt(text).toString() : text;
}

/** OTLP/HTTP export of traces; an endpoint given as a bare origin gets the standard /v1/traces path. */
function readTracing({ problems, shape }: Ctx, t: ConfigFile['tracing']): TracingConfig {
  // `endpoint: ${OTEL_ENDPOINT:-}` leaves tracing off when the variable is unset.
  let endpoint = t.endpoint === '' ? undefined : t.endpoint;
  if (endpoint !== undefined && shape.ok('/tracing/endpoint')) {
    const u = parsedUrl(endpoint);
    if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || hasCredentials(u)) {
      problems.add(
        'tracing.endpoint',
        'must be the collector\'s OTLP/HTTP URL, like "http://127.0.0.1:4318/v1/traces" (credentials go in tracing.headers)',
      );
      endpoint = undefined;
    } else if (u.pathname === '/') endpoint = `${u.origin}/v1/traces${u.search}`;
  }
  const headers = Object.fromEntries(Object.entries(t.headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { endpoint, headers, serviceName: t.serviceName, sampleRatio: t.sampleRatio, exportIntervalMs: t.exportIntervalMs };
}

/** A duration setting in milliseconds, its range checked. */
function readDuration(problems: ConfigProblems, v: string | number, path: string, bounds: { min: number; max: number }): number {
  const ms = parseDuration(v) ?? 0;
  if (ms < bounds.min || ms > bounds.max) problems.add(path, durationMessage(bounds));
  return ms;
}

function readDashboard({ problems, shape }: Ctx, d: ConfigFile['dashboard']): DashboardConfig {
  const publicUrl = shape.ok('/dashboard/publicUrl') ? d.publicUrl?.replace(/\/+$/, '') : undefined;
  if (publicUrl !== undefined) {
    const u = parsedUrl(publicUrl);
    // The dashboard lives at /dashboard of this origin: a path here would be ignored, so refuse it.
    if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== publicUrl) {
      problems.add('dashboard.publicUrl', 'must be an origin like "https://dash.example.com" (no path, query or credentials)');
    }
  }
  return {
    enabled: d.enabled,
    host: d.host,
    port: d.port,
    publicUrl,
    sessionTtlMs: shape.ok('/dashboard/sessionTtl')
      ? readDuration(problems, d.sessionTtl, 'dashboard.sessionTtl', DURATIONS.sessionTtl)
      : 0,
    signinTokenTtlMs: shape.ok('/dashboard/signinTokenTtl')
      ? readDuration(problems, d.signinTokenTtl, 'dashboard.signinTokenTtl', DURATIONS.signinTokenTtl)
      : 0,
    signinAttemptsPerMinute: d.signinAttemptsPerMinute,
    trustProxy: d.trustProxy,
  };
}

function readUsage({ problems, shape }: Ctx, u: ConfigFile['usage']): UsageConfig {
  const duration = (at: string, v: string | number, bounds: { min: number; max: number }): number =>
    shape.ok(`/usage/${at}`) ? readDuration(problems, v, `usage.${at.replace('/', '.')}`, bounds) : 0;
  return {
    flushIntervalMs: duration('flushInterval', u.flushInterval, DURATIONS.usageFlushInterval),
    retentionMs: duration('retention', u.retention, DURATIONS.usageRetention),
    failedCalls: {
      perKey: u.failedCalls.perKey,
      maxAgeMs: duration('failedCalls/maxAge', u.failedCalls.maxAge, DURATIONS.failedCallsMaxAge),
    },
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
function readTrustedProxies(problems: ConfigProblems, list: readonly string[]): string[] {
  return list.filter((e, i) => {
    const [address, bits, extra] = e.split('/');
    const family = isIP(address ?? '');
    const max = family === 6 ? 128 : 32;
    const ok = family !== 0 && extra === undefined && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= max));
    if (!ok) problems.add(`server.trustedProxies[${i}]`, 'must be an IP address or a CIDR range like "10.0.0.0/8" or "fd00::/8"');
    return ok;
  });
}

function readLog(l: ConfigFile['log'], base: string): LogConfig {
  return {
    level: l.level,
    file: l.file === undefined ? undefined : isAbsolute(l.file) ? l.file : resolve(base, l.file),
    maxBytes: l.maxBytes,
    files: l.files,
  };
}

/** Validate a tree; returns the config or the list of problems (never both). */
export function validateConfig(
  input: unknown,
  file: string,
  plugins: PluginLookup,
): { config: GatewayConfig; problems?: undefined } | { config?: undefined; problems: string[] } {
  const tree = withoutNulls(input);
  const base = file === '' ? process.cwd() : dirname(file);
  const problems = new ConfigProblems();
  const written = takeOldStore(tree, base, problems);
  const shape = checkShape(ConfigFile, tree, '', 'setting');
  problems.list.push(...shape.problems);
  if (!shape.ok('')) return { problems: problems.list };
  // Where shape.ok(…) holds, the value has the type ConfigFile says (defaults filled in).
  const t = tree as ConfigFile;
  const ctx: Ctx = { problems, shape };
  const s = t.server;
  const serverOk = shape.ok('/server');
  const cors =
    serverOk && shape.ok('/server/cors') && shape.ok('/server/cors/origins')
      ? readServerCors(problems, s.cors)
      : { origins: ['*'], maxAgeSeconds: 0 };

  const tiers: Record<string, TierConfig> = {};
  if (shape.ok('/tiers')) {
    for (const [name, tier] of Object.entries(t.tiers)) if (shape.clean(`/tiers/${name}`)) tiers[name] = readTier(name, tier);
  }

  const chainList = shape.ok('/chains')
    ? Object.entries(t.chains)
        .filter(([name]) => shape.ok(`/chains/${name}`))
        .map(([name, c]) => readChain(ctx, name, c, plugins, cors))
    : [];
  checkUnique(problems, chainList);
  const store = shape.clean('/store') ? readStore(problems, t.store, base, written) : undefined;
  checkRedisCache(problems, store, chainList);
  const trustedProxies = serverOk && shape.clean('/server/trustedProxies') ? readTrustedProxies(problems, s.trustedProxies) : [];
  const tracing = shape.ok('/tracing') ? readTracing(ctx, t.tracing) : undefined;
  const dashboard = shape.ok('/dashboard') ? readDashboard(ctx, t.dashboard) : undefined;
  const usage = shape.ok('/usage') && shape.ok('/usage/failedCalls') ? readUsage(ctx, t.usage) : undefined;
  if (problems.list.length > 0 || tracing === undefined || dashboard === undefined || usage === undefined || store === undefined)
    return { problems: problems.list };

  const adminToken = t.admin.token === '' ? undefined : t.admin.token;
  const config: GatewayConfig = {
    file,
    server: {
      ...s,
      publicUrl: s.publicUrl?.replace(/\/+$/, ''),
      cors,
      trustedProxies,
      workers: s.workers === 'auto' ? usableCpus() : s.workers,
    },
    log: readLog(t.log, base),
    tracing,
    admin: { token: adminToken },
    dashboard,
    store,
    keys: t.keys,
    cache: t.cache,
    usage,
    tiers,
    devnet: t.devnet,
    chains: Object.fromEntries(chainList.map((c) => [c.name, c])),
  };
  return { config: deepFreeze(config) };
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const child of Object.values(v as object)) deepFreeze(child);
  }
  return v;
}
