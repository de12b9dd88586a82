// The config file's shape, defined once: every setting, its type, range, default and
// the words it accepts. Validation (validate.ts) checks files against it and prints
// path-precise problems; `npm run schema` turns it into config/noderouter.schema.json,
// which editors use to check and complete config files.
//
// Adding a setting (e.g. store.hot.leaseMs, server.workers, chains.<name>.consensus):
//   1. one line in its section below: `leaseMs: Int(100, 60_000, 5_000),` in StoreHot,
//      `workers: Int(1, 64, 1),` in Server, `consensus: Section({ ... }),` in Chain.
//      Int(min, max, default), Str(default), Bool(default), Enum([...], default),
//      Limit(default), Section({...}) for a block of settings, Type.Optional(...) for
//      a setting without a default; `errorMessage` when the generic message
//      ("must be an integer from 1 to 64") does not say enough.
//   2. add it to types.ts. Sections handed through as they are (server, keys, cache,
//      devnet, health, breaker, ejection) need nothing more: ShapeMatchesTypes at the
//      end of this file fails typecheck until shape and types agree. Others are read
//      in schema.ts (store-config.ts for store): readStore, readChain (chains.<name>), readTier, readLog,
//      readTracing, readDashboard: one line there (`leaseMs: s.leaseMs,`).
//   3. checks across settings (a reference to another chain, a duplicate, a URL, a
//      duration's range) go in schema.ts, with the path in the message;
//   4. a `description` (doc('…')): editors show it, and docs/configuration.md's
//      reference is generated from it;
//   5. `npm run schema` writes config/noderouter.schema.json and that reference (a
//      test fails while either is stale).
// A plugin's `options` come from its own `optionsSchema` (src/plugin/contract.ts).

import { Type, type Static } from '@sinclair/typebox';
import { describeDuration } from './duration.js';
import type { NodeRole } from '../plugin/contract.js';
import { Bool, Enum, Int, Limit, Named, Section, Shape, Str } from './shape-kit.js';
import type {
  BreakerConfig,
  CacheConfig,
  DevnetConfig,
  EjectionConfig,
  HealthConfig,
  HedgeConfig,
  KeysConfig,
  LogLevel,
  RedisHotConfig,
  ServerConfig,
  StoreConfig,
  StrategyName,
} from './types.js';

const MB = 1_048_576;
const SECOND = 1_000;
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Chain and node names: they label metrics. */
export const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const NAME_MESSAGE = 'must be lower-case letters, digits, "-" or "_"';

/** Durations as `dashboard.sessionTtl` takes them (duration.ts), with their bounds in milliseconds. */
export const DURATIONS = {
  sessionTtl: { min: MINUTE, max: 30 * DAY },
  signinTokenTtl: { min: MINUTE, max: 7 * DAY },
  usageFlushInterval: { min: SECOND, max: 5 * MINUTE },
  usageRetention: { min: DAY, max: 3_650 * DAY },
  failedCallsMaxAge: { min: HOUR, max: 400 * DAY },
} as const;

/** `15m`, `12h`, `7d`, or seconds; the range is checked by schema.ts. */
function Duration(bounds: { min: number; max: number }, fallback: string, description: string) {
  return Type.Unsafe<string | number>({
    anyOf: [
      { type: 'integer', minimum: 0 },
      { type: 'string', pattern: '^\\s*\\d+\\s*(s|m|h|d)?\\s*$' },
    ],
    default: fallback,
    description,
    errorMessage: durationMessage(bounds),
  });
}

export function durationMessage(bounds: { min: number; max: number }): string {
  return `must be a duration like "90s", "15m", "12h" or "7d", from ${describeDuration(bounds.min)} to ${describeDuration(bounds.max)}`;
}

/** What a setting does, as editors show it and docs/configuration.md lists it. */
function doc(description: string) {
  return { description };
}

const ORIGINS_EXAMPLE = '["*"] (any), or origins like ["https://app.example.com", "https://*.example.com"]';
function Origins(description: string) {
  return Type.Array(Type.String({ errorMessage: `must be a string: ${ORIGINS_EXAMPLE}` }), {
    errorMessage: `must be a list: ${ORIGINS_EXAMPLE}`,
    description,
  });
}

const Server = Section(
  {
    host: Str('127.0.0.1', doc('Address of the traffic listener (the chain endpoints).')),
    port: Int(0, 65_535, 8080, doc('Port of the traffic listener; the PORT environment variable overrides it.')),
    adminHost: Str('127.0.0.1', doc('Address of the admin listener (/metrics, /health/*, /admin/*, the dashboard): keep it private.')),
    adminPort: Int(0, 65_535, 8081, doc('Port of the admin listener; the ADMIN_PORT environment variable overrides it.')),
    publicUrl: Type.Optional(Str(undefined, doc('Base URL printed for the endpoints. Default: http://host:port of the traffic listener.'))),
    maxBodyBytes: Int(
      1024,
      undefined,
      MB,
      doc('Largest request body (gRPC: request message); larger ones get 413, before a byte is read when Content-Length says so.'),
    ),
    maxHeaderBytes: Int(1024, MB, 16_384, doc('Largest request headers; larger ones get 431.')),
    maxJsonDepth: Int(2, 1000, 32, doc('Deepest JSON nesting of a request; deeper is an invalid request (400, -32600).')),
    maxMethodLength: Int(8, 4096, 128, doc('Longest JSON-RPC method name; longer is an invalid request.')),
    maxPathLength: Int(64, 65_536, 2048, doc('Longest request path; longer gets 400.')),
    maxResponseBytes: Int(
      1024,
      undefined,
      32 * MB,
      doc('Largest node answer (each gRPC message); a larger one counts as the node failing.'),
    ),
    shutdownTimeoutMs: Int(
      0,
      undefined,
      15_000,
      doc('Once the listeners stop accepting, in-flight requests get this long before connections are cut.'),
    ),
    shutdownDelayMs: Int(
      0,
      600_000,
      5_000,
      doc('On SIGTERM, how long readiness says 503 while requests are still served, before the listeners stop accepting.'),
    ),
    shutdownIdleMs: Int(
      0,
      60_000,
      1_000,
      doc(
        'Once the listeners stop accepting, a kept-alive connection that brings no request this long is closed (FIN); one that brings a request is answered with `connection: close` instead. 0 closes idle connections at once, which can close one under a request already on its way.',
      ),
    ),
    requestTimeoutMs: Int(
      1,
      undefined,
      30_000,
      doc('Deadline of one client request, every retry included; also bounds a whole gRPC server stream.'),
    ),
    headersTimeoutMs: Int(100, undefined, 10_000, doc('Time a client has to send its headers: slow clients are cut off.')),
    keepAliveTimeoutMs: Int(
      100,
      undefined,
      65_000,
      doc("Idle kept-alive connections are closed after this (above common load balancers' 60 s)."),
    ),
    maxConnections: Int(1, undefined, 10_000, doc('Concurrent client connections per listener (and per worker); more are refused.')),
    maxConnectionsPerClient: Int(
      0,
      undefined,
      256,
      doc('Concurrent connections one client address may hold on a listener (per worker); 0: no cap.'),
    ),
    wsMaxMessageBytes: Int(1024, undefined, MB, doc('Largest WebSocket message a client may send; larger: closed with 1009.')),
    wsMaxBufferedBytes: Int(
      1024,
      undefined,
      8 * MB,
      doc('Answers and notifications waiting for a WebSocket client that does not read; past it the client is closed (1008).'),
    ),
    wsPingIntervalMs: Int(10, undefined, 30_000, doc('WebSocket pings; a client that missed the last one is dropped (1006).')),
    grpcHost: Str('127.0.0.1', doc('Address of the gRPC listener (h2c), started when a chain uses the sdk-grpc plugin.')),
    grpcPort: Int(0, 65_535, 9090, doc('Port of the gRPC listener; 0 picks a free port. The default config reads ${GRPC_PORT:-9090}.')),
    grpcMaxConcurrentStreams: Int(1, 10_000, 100, doc('Calls one gRPC connection may hold at once.')),
    cors: Section(
      {
        origins: Type.Optional(
          Origins(
            'Origins pages may call the traffic endpoints from: "*" (any), exact origins, or every subdomain ("https://*.example.com"); [] none. Default: ["*"]. See docs/clients.md#from-a-browser.',
          ),
        ),
        // Chromium keeps a preflight's answer at most 2 hours.
        maxAgeSeconds: Int(0, 86_400, 7_200, doc("How long browsers keep a preflight's answer.")),
      },
      doc('CORS for pages calling the traffic endpoints.'),
    ),
    /** Checked as IP addresses and CIDR ranges by schema.ts. */
    trustedProxies: Type.Array(Str(), {
      default: [],
      description:
        "IP addresses and CIDR ranges (10.0.0.0/8, fd00::/8) of proxies in front of the gateway: from them, X-Forwarded-For (gRPC: x-forwarded-for metadata) names the client, the address keys' `ips` match and the request log line's `client`.",
    }),
    /** Processes serving traffic; `auto`: one per core (schema.ts reads it). */
    workers: Type.Unsafe<number | 'auto'>({
      anyOf: [{ type: 'integer', minimum: 1, maximum: 1024 }, { const: 'auto' }],
      default: 1,
      description:
        'Processes serving traffic: "auto" (one per core, capped by a container\'s CPU limit: its cgroup CPU quota, rounded up) or a number. Above 1 a primary process keeps the shared state, probers and admin listener and forks the workers, which share the listeners. Changes on restart. See docs/scaling.md#using-every-core.',
      errorMessage: 'must be a whole number of processes from 1 to 1024, or "auto" (one per core)',
    }),
  },
  doc('The listeners, their limits, and shutdown.'),
);

const Log = Section(
  {
    level: Enum(
      ['debug', 'info', 'warn', 'error', 'silent'],
      'info',
      doc('Least severe log lines written (JSON lines on stdout, or in `file`).'),
    ),
    file: Type.Optional(
      Str(
        undefined,
        doc(
          'Write the JSON lines to this file instead of stdout (relative to the config file), rotated by size; with server.workers above 1 each worker writes its own beside it (gateway.log → gateway.worker-0.log).',
        ),
      ),
    ),
    maxBytes: Int(
      1024,
      undefined,
      100 * MB,
      doc('The log file is renamed to <file>.1 (.1 to .2 …) before it would pass this size; a line is never split across two files.'),
    ),
    files: Int(0, 1000, 5, doc('Rotated log files kept; 0: the file starts over.')),
  },
  doc('Logs: JSON lines, one per request, and events. See docs/observability.md.'),
);

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$";

const Tracing = Section(
  {
    /** '' (from `${OTEL_ENDPOINT:-}`) leaves tracing off. */
    endpoint: Type.Optional(
      Type.String({
        description:
          "The collector's OTLP/HTTP traces URL (http://collector:4318/v1/traces; a bare origin gets /v1/traces), no credentials in it. Unset or empty: tracing off. config/gateway.yaml reads ${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT:-}.",
      }),
    ),
    headers: Named(Type.String({ pattern: '^[\\t !-~]{0,8192}$', errorMessage: 'must be a string of printable characters on one line' }), {
      default: {},
      description: "Headers sent with every export (a collector's credentials, from ${ENV}).",
      propertyNames: { pattern: HEADER_NAME, errorMessage: 'is not a valid HTTP header name' },
    }),
    serviceName: Str('noderouter', doc('The service.name of the spans.')),
    sampleRatio: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 1,
      description: "The share of traces begun here that are recorded (a client's traceparent decides for its own).",
      errorMessage: 'must be a number from 0 to 1 (1: every trace begun here is recorded)',
    }),
    exportIntervalMs: Int(10, 600_000, 5_000, doc('How often batches of spans are sent.')),
  },
  doc('OpenTelemetry traces over OTLP/HTTP; they change on a restart, not a reload. See docs/observability.md#traces.'),
);

const Admin = Section(
  {
    /** '' (from `${NODEROUTER_ADMIN_TOKEN:-}`) leaves the admin API closed. */
    token: Type.Optional(
      Type.String({
        pattern: '^(|[\\s\\S]{16,})$',
        description:
          "Bearer token of the admin API (/admin/*) and the dashboard's operator view, 16 characters or more; unset or empty closes both. A reload applies a new one from the next request and logs `admin token changed` (never the token).",
        errorMessage: 'must be at least 16 characters (set it from ${NODEROUTER_ADMIN_TOKEN})',
      }),
    ),
  },
  doc('The admin API.'),
);

const Dashboard = Section(
  {
    enabled: Bool(false, doc('Serve the account dashboard at /dashboard (true in config/gateway.yaml).')),
    host: Str('127.0.0.1', doc("Address of the dashboard's own listener, when `port` is set.")),
    port: Type.Optional(
      Int(0, 65_535, undefined, doc('Port of a listener serving only /dashboard; unset: the dashboard is on the admin listener.')),
    ),
    publicUrl: Type.Optional(
      Str(
        undefined,
        doc(
          "Origin customers use (https://dash.example.com): sign-in links, the CSRF origin check, Secure cookies. Default: the listener's address.",
        ),
      ),
    ),
    sessionTtl: Duration(DURATIONS.sessionTtl, '12h', "A session's life from sign-in (1m to 30d), never extended."),
    signinTokenTtl: Duration(DURATIONS.signinTokenTtl, '15m', "A sign-in link's life (1m to 7d); `accounts token --ttl` overrides it."),
    signinAttemptsPerMinute: Int(1, 10_000, 10, doc('Failed sign-ins per client address per minute before 429.')),
    trustProxy: Bool(false, doc('Take the client address, protocol and host from X-Forwarded-* (behind a TLS-terminating proxy).')),
  },
  doc('The account dashboard. See docs/dashboard.md.'),
);

/** The record: one member per kind of database (its own settings beside `kind`). */
const StoreRecord = Section(
  {
    kind: Enum(
      ['sqlite', 'postgres'],
      'sqlite',
      doc(
        "The record of accounts, key hashes and settings, restrictions, sign-in tokens, sessions, usage and operators' holds: sqlite, one file (the embedded default), or postgres, one database every instance shares.",
      ),
    ),
    path: Str(
      'data/noderouter.db',
      doc(
        'SQLite record: the database file, relative to the config file (created with its folder when absent; its -wal and -shm files sit beside it).',
      ),
    ),
    url: Type.Optional(
      Str(undefined, {
        pattern: '^postgres(ql)?://',
        description:
          'PostgreSQL record: the postgres:// or postgresql:// connection string (required with kind: postgres); write a password as ${ENV}.',
        errorMessage: 'must be a postgres:// or postgresql:// URL (postgres://user:${PGPASSWORD}@host:5432/database)',
      }),
    ),
    schema: Str('noderouter', {
      pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$',
      description:
        "PostgreSQL record: the schema that holds the record's tables (created when missing); several records can share one database.",
      errorMessage: 'must be letters, digits and _ (at most 63, not starting with a digit), e.g. noderouter',
    }),
    poolSize: Int(1, 1_000, 10, doc('PostgreSQL record: connections each process (each cluster worker too) opens at most.')),
  },
  // The PostgreSQL record needs its URL.
  {
    description: 'Where accounts, keys, usage and holds are kept. See "Where noderouter keeps its data" in the README.',
    if: { properties: { kind: { const: 'postgres' } }, required: ['kind'] },
    then: { required: ['url'], properties: { url: { type: 'string' } } },
  },
);

/** A Redis server as host:port (an IPv6 host in brackets). */
const HOST_PORT = '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+):[0-9]{1,5}$';

/** Hot state: in this process, or in Redis (its settings are the Redis ones). */
const StoreHot = Section(
  {
    kind: Enum(
      ['memory', 'redis'],
      'memory',
      doc(
        'Where rate limits, quota counters, leases and WebSocket slots are kept, and how key revocations and holds reach other instances: memory (one instance) or redis (shared by every instance).',
      ),
    ),
    url: Type.Optional(
      Str(undefined, {
        pattern: '^rediss?://',
        description:
          'Redis hot state on one server: the redis:// or rediss:// URL (a password as ${ENV}). Exactly one of url, sentinels and cluster.',
        errorMessage: 'must be a redis:// or rediss:// URL',
      }),
    ),
    sentinels: Type.Optional(
      Type.Array(Str(undefined, { pattern: HOST_PORT, errorMessage: 'must be host:port, e.g. 10.0.0.7:26379' }), {
        minItems: 1,
        description:
          'Redis hot state behind Redis Sentinel: the sentinels as host:port (any that answers names the master; a failover is followed). Needs name. See README "Redis: single, Sentinel, Cluster".',
        errorMessage: 'must list sentinels as host:port, e.g. [10.0.0.7:26379, 10.0.0.8:26379]',
      }),
    ),
    name: Type.Optional(
      Str(
        undefined,
        doc("Redis hot state behind Sentinel: the master's name in the sentinels' configuration (sentinel monitor <name> …)."),
      ),
    ),
    cluster: Type.Optional(
      Type.Array(Str(undefined, { pattern: HOST_PORT, errorMessage: 'must be host:port, e.g. 10.0.0.7:6379' }), {
        minItems: 1,
        description: 'Redis hot state on a Redis Cluster: some of its nodes as host:port (the rest are discovered).',
        errorMessage: 'must list cluster nodes as host:port, e.g. [10.0.0.7:6379, 10.0.0.8:6379]',
      }),
    ),
    password: Type.Optional(
      Str(undefined, doc("Redis hot state behind Sentinel or on a Cluster: the Redis servers' password (write it as ${ENV}).")),
    ),
    sentinelPassword: Type.Optional(
      Str(undefined, doc("Redis hot state behind Sentinel: the sentinels' own password, if they have one (${ENV}).")),
    ),
    prefix: Str('noderouter:', doc('Redis hot state: every Redis key noderouter writes starts with it.')),
    timeoutMs: Int(1, 60_000, 250, doc("Redis hot state: bound of every Redis call; keep it well above Redis's latency under load.")),
    onFailure: Enum(
      ['fail-open', 'fail-closed'],
      'fail-open',
      doc(
        'Redis hot state, when Redis does not answer: fail-open keeps serving (keys from the record, limits in memory divided by `instances`), fail-closed answers 503.',
      ),
    ),
    instances: Int(
      1,
      10_000,
      1,
      doc('Redis hot state: how many instances share the limits (local limits are divided by it under fail-open).'),
    ),
    /** redis: how long an instance spends a lease of tokens before giving back what it did not (0: no leases). */
    leaseMs: Int(
      0,
      10_000,
      200,
      doc(
        'Redis hot state: how long an instance spends tokens taken from Redis in one call (a lease) before giving back what it did not spend; 0: every call asks Redis. See docs/scaling.md#leases-limits-without-a-redis-round-trip-per-call.',
      ),
    ),
    /** redis: most tokens a lease takes; `auto`: what the tier's rate allows in leaseMs (0: no leases). */
    leaseTokens: Type.Unsafe<number | 'auto'>({
      anyOf: [{ type: 'integer', minimum: 0, maximum: 1_000_000_000 }, { const: 'auto' }],
      default: 'auto',
      description:
        "Redis hot state: most tokens one lease takes; auto: what the tier's rate allows in leaseMs (10 000 for an unlimited rate); 0: no leases, one Redis call per request (exact mode).",
      errorMessage: 'must be "auto" or an integer from 0 (0: no leases, every call asks Redis)',
    }),
  },
  // Which of url, sentinels and cluster is given is store-config.ts's to check (exactly one).
  { description: 'Limits, counters, leases, WebSocket slots and change announcements. See docs/scaling.md#running-several-instances.' },
);

const Usage = Section(
  {
    flushInterval: Duration(
      DURATIONS.usageFlushInterval,
      '5s',
      'How often each instance writes the usage it gathered (1s to 5m): the record sees one write per interval, whatever the request rate. A process killed (SIGKILL) loses what it gathered since its last write that committed: at most this much while the record takes writes; a graceful stop writes the rest.',
    ),
    retention: Duration(
      DURATIONS.usageRetention,
      '400d',
      'How long hourly rollups are kept (1d to 3650d); each instance prunes older ones at most once an hour.',
    ),
    failedCalls: Section(
      {
        perKey: Int(0, 10_000, 100, doc('Failed calls kept per key, the newest; 0 keeps none.')),
        maxAge: Duration(DURATIONS.failedCallsMaxAge, '30d', 'Failed calls older than this are pruned (1h to 400d).'),
      },
      doc(
        'The failed-call log: time, chain, method, outcome, status, error code, node, latency and request id of each; never params, bodies or keys.',
      ),
    ),
  },
  doc(
    'Usage history in the record: hourly rollups per key, chain, method and outcome, and the last failed calls of each key. Read by the admin API (GET /admin/keys/{id}/usage/history, /failed-calls). See docs/operators.md#usage-history.',
  ),
);

/** The settings of the PostgreSQL record (what `kind: sqlite` does not read). */
export const POSTGRES_RECORD_SETTINGS = ['url', 'schema', 'poolSize'] as const;

/** The settings of the Redis hot state (what `kind: memory` does not read). */
export const REDIS_HOT_SETTINGS = [
  'url',
  'sentinels',
  'name',
  'cluster',
  'password',
  'sentinelPassword',
  'prefix',
  'timeoutMs',
  'onFailure',
  'instances',
  'leaseMs',
  'leaseTokens',
] as const;

const Store = Section(
  { record: StoreRecord, hot: StoreHot },
  doc('The two roles, configured apart: the record (a database) and the hot state (memory or Redis).'),
);

const Keys = Section(
  {
    cacheTtlMs: Int(0, undefined, 30_000, doc('How long a key record is used without asking the store.')),
    cacheMaxEntries: Int(1, undefined, 100_000, doc('Bound of the key cache.')),
    negativeTtlMs: Int(0, undefined, 5_000, doc('How long an unknown key is remembered as unknown.')),
    negativeMaxEntries: Int(1, undefined, 10_000, doc('Bound of the unknown-key cache (its own: unknown keys never push out known ones).')),
    rotationGraceSeconds: Int(0, undefined, 86_400, doc("How long a rotated key's old value keeps working.")),
    maxActivePerAccount: Int(1, 1_000_000, 100, doc('Active keys one account may hold; one more is refused (400, exit 2).')),
    changesPerHour: Int(
      1,
      1_000_000,
      60,
      doc(
        'Key creations, rotations, restriction changes and revocations per account per hour through the dashboard and the admin API (429 past them).',
      ),
    ),
    changesBurst: Int(1, 1_000_000, 10, doc('Key changes one account may make at once, within changesPerHour.')),
  },
  doc('The key cache and limits on key changes. See docs/keys.md.'),
);

const Cache = Section(
  {
    maxBytes: Int(0, undefined, 64 * MB, doc("The in-memory response cache's bound, for the whole gateway (per worker).")),
    maxEntryBytes: Int(1, undefined, MB, doc('The largest answer kept.')),
    redisMaxTtlMs: Int(1, undefined, 3_600_000, doc('The longest life of an answer in the Redis cache.')),
  },
  doc('The response cache (chains.<name>.cache chooses it per chain). See docs/pools.md#response-cache-and-coalescing.'),
);

/** A tier's limits; `burst` and the account's limits default from the others (schema.ts). */
const Tier = Section(
  {
    rate: Limit(10, doc('Sustained calls per second of each key.')),
    burst: Type.Optional(Limit(undefined, doc('Calls that may arrive at once. Default: twice the rate.'))),
    daily: Limit('unlimited', doc('Calls per UTC day of each key.')),
    monthly: Limit('unlimited', doc('Calls per UTC month of each key.')),
    maxBatch: Limit(100, doc('Longest JSON-RPC batch; longer: 413 BATCH_TOO_LARGE.')),
    archive: Bool(false, doc('Access to archive state.')),
    wsConnections: Limit(10, doc('Concurrent WebSocket connections per key (all instances together with Redis).')),
    wsSubscriptions: Limit(100, doc('Subscriptions open at once on one WebSocket connection.')),
    cacheHitsFree: Bool(false, doc('Answers from the response cache cost nothing against limits and usage.')),
    /** Node calls one client call (each batch item) may cause: parts, retries, hedges, agreement, broadcast. */
    nodeCalls: Int(
      1,
      1000,
      16,
      doc(
        'Node calls one client call (each batch item) may cause: retries, hedges, getLogs parts, agreement, broadcasts; past it -32005, nothing more sent. See docs/bad-input.md#node-work.',
      ),
    ),
    /** Agreement and broadcast charged per node asked (else once). */
    chargeFanout: Bool(false, doc('Calls checked by agreement and broadcast submits are charged their cost per node asked (else once).')),
    account: Section(
      {
        rate: Type.Optional(
          Limit(undefined, doc("Calls per second of all of an account's keys on the tier together. Default: the tier's rate.")),
        ),
        burst: Type.Optional(Limit(undefined, doc("The account's burst. Default: the tier's burst."))),
        daily: Type.Optional(Limit(undefined, doc("The account's calls per UTC day. Default: the tier's daily."))),
        monthly: Type.Optional(Limit(undefined, doc("The account's calls per UTC month. Default: the tier's monthly."))),
        wsConnections: Type.Optional(
          Limit(
            undefined,
            doc("WebSocket connections open at once over all of an account's keys on the tier. Default: the tier's wsConnections."),
          ),
        ),
        wsSubscriptions: Type.Optional(
          Limit(
            undefined,
            doc("Subscriptions open at once over all of an account's connections on the tier. Default: wsConnections × wsSubscriptions."),
          ),
        ),
      },
      doc("Limits of all of an account's keys on the tier together, revoked ones included. See docs/keys.md#limits-hold-per-account."),
    ),
    costs: Section(
      {
        invalid: Int(
          0,
          1_000_000,
          1,
          doc(
            "What a keyed request that became no call (malformed, over a size limit, every call refused) costs against the key's and the account's rate; 0 makes it free (still counted). See docs/bad-input.md#refusals-are-charged.",
          ),
        ),
      },
      doc('Costs of requests that are not calls.'),
    ),
  },
  doc("A tier: the limits each key on it is held to, and (account) all of an account's keys on it together."),
);

const Devnet = Section(
  {
    blockTimeMs: Int(0, undefined, 1_000, doc('A block every this many milliseconds on each simulated chain.')),
    fullRetention: Int(1, undefined, 128, doc("Blocks a simulated full node keeps; older reads get its family's pruned-state error.")),
    startHeight: Int(1, undefined, 1_000, doc('The height simulated chains start at.')),
    controlPort: Int(0, 65_535, 0, doc('Port of the devnet control server (faults, mining, reorgs); 0: a free one.')),
    filterTimeoutMs: Int(1, undefined, 300_000, doc('A simulated EVM node drops a filter not polled for this long.')),
    maxLogsRange: Int(0, undefined, 0, doc('The widest eth_getLogs block range a simulated EVM node answers; 0: any.')),
    hosts: Type.Array(Str(), {
      default: [],
      description:
        'Host names, besides loopback, by which node URLs name the devnet (a container of its own: its compose service name, `devnet`); the nodes at them are simulated too.',
    }),
    listen: Type.Optional(
      Str(
        undefined,
        doc(
          "Address the simulated nodes and the control server listen on, e.g. `0.0.0.0` to serve other hosts (the devnet in a container). Default: each node on its URL's loopback address, the control server on 127.0.0.1.",
        ),
      ),
    ),
  },
  doc('The simulated nodes of `noderouter serve --devnet` and `noderouter devnet`. See docs/devnet.md.'),
);

/** Node URLs are checked by schema.ts (scheme, credentials, what a gRPC node takes); header names and values here. */
const Node = Shape(
  {
    name: Str(undefined, {
      pattern: NAME.source,
      description: "The node's name, unique in its chain (it labels metrics).",
      errorMessage: NAME_MESSAGE,
    }),
    url: Str(
      undefined,
      doc(
        "The node's URL; a path and query in it are kept on every call. gRPC nodes: http://host:port. user:password@ is refused: put credentials in headers. See docs/pools.md#nodes-behind-credentials.",
      ),
    ),
    ws: Type.Optional(
      Str(
        undefined,
        doc(
          "The node's WebSocket URL for subscriptions. Default: url with a ws scheme, path and query kept (geth's is usually port 8546).",
        ),
      ),
    ),
    headers: Type.Optional(
      Named(
        Type.String({
          pattern: '^[\\t\\x20-\\x7e]+$',
          errorMessage:
            'must be a non-empty string of printable ASCII, e.g. "Bearer ${NODE_TOKEN}" (no line breaks or control characters; the value is not repeated here)',
        }),
        {
          description: "Headers sent on every call to the node (name → value; values may use ${ENV}): a provider's credentials.",
          propertyNames: { pattern: HEADER_NAME, errorMessage: "is not a valid header name (letters, digits and !#$%&'*+.^_`|~- only)" },
        },
      ),
    ),
    /** Left out, the node's own description decides (src/pool/describe.ts). */
    role: Type.Optional(
      Enum(
        ['full', 'archive'],
        undefined,
        doc(
          "The node's role. Left out: the role the node's state shows (full until it is described); a node whose state contradicts its configured role keeps the configured one, with a mismatch shown.",
        ),
      ),
    ),
    weight: Int(1, 1000, 1, doc('Share of traffic under the weighted strategy.')),
    /** Lower is preferred by the `priority` strategy; 0 = primary. */
    priority: Int(
      0,
      100,
      0,
      doc('Under the priority strategy, nodes with a higher number take traffic only when every node of a lower number is out.'),
    ),
  },
  doc('A node: where it is, its credentials, and its part in routing.'),
);

const CHAIN_ID_MESSAGE =
  'must be the id the nodes report: a number for EVM chains (1 or "0x1"), the network id for SDK chains ("cosmoshub-4"), the chain identifier for objectx ("35834a8a")';

export const Chain = Shape(
  {
    plugin: Str(
      undefined,
      doc(
        'The chain family: evm, objectx, sdk-rpc, sdk-rest, sdk-grpc (served on the gRPC listener), or the name of an installed npm package exporting a plugin (see docs/plugins.md).',
      ),
    ),
    network: Type.Optional(
      Str(undefined, doc("Endpoints of one blockchain share it (hub's RPC and REST). Default: the chain endpoint's name.")),
    ),
    /** EVM ids in decimal (a 0x number is read as one), others as written; printable ASCII without spaces. */
    chainId: Type.Optional(
      Type.Unsafe<string | number>({
        anyOf: [
          { type: 'string', pattern: '^[!-~]{1,128}$' },
          { type: 'integer', minimum: 0 },
        ],
        description:
          'The chain every node must say it is on: an EVM chain id (1 or "0x1"), an SDK network id (cosmoshub-4), an objectx chain identifier; a node saying another never joins rotation. Default: what most nodes say.',
        errorMessage: CHAIN_ID_MESSAGE,
      }),
    ),
    /** Required by schema.ts for chains served on the HTTP listener; a gRPC chain without one is the default gRPC chain. */
    route: Type.Optional(
      Shape(
        {
          path: Type.Optional(
            Str(undefined, {
              pattern: '^(/[A-Za-z0-9._~-]+)+$',
              description: 'Path prefix of the endpoint (/l1, /hub/rpc). Not on gRPC chains.',
              errorMessage: 'must look like "/l1" or "/hub/rpc" (no trailing slash)',
            }),
          ),
          host: Type.Optional(
            Str(undefined, {
              pattern: '^[A-Za-z0-9.-]+(:\\d+)?$',
              description: 'Host name of the endpoint; on gRPC chains, the :authority.',
              errorMessage: 'must be a host name like "l1.example.com"',
            }),
          ),
        },
        {
          minProperties: 1,
          description:
            'Where the endpoint is served: a path prefix and/or a Host name (with both, both must match). gRPC chains: host only, or no route for the default gRPC chain.',
          errorMessage: 'must be a mapping with a path, a host, or both, like { path: /l1 }',
        },
      ),
    ),
    archiveOnly: Bool(false, doc('Serve from archive nodes only (the archive REST variant).')),
    strategy: Enum(
      ['round-robin', 'weighted', 'least-latency', 'priority'],
      'round-robin',
      doc('How a node is picked among those that may take a call. See docs/pools.md#strategies.'),
    ),
    attemptTimeoutMs: Int(1, undefined, 10_000, doc('Deadline of one attempt on one node, for the whole answer.')),
    maxAttempts: Int(1, 10, 3, doc('Attempts per call (a batch: per group of calls sent together), each on another node.')),
    health: Section(
      {
        intervalMs: Int(50, undefined, 2_000, doc('Every node is probed this often.')),
        timeoutMs: Int(10, undefined, 1_500, doc('Deadline of one probe.')),
        maxLag: Int(0, undefined, 5, doc('A node more than this many blocks behind the best head leaves rotation.')),
        failAfter: Int(1, 100, 2, doc('Failed probes in a row before a node leaves rotation.')),
        minBlockTimeMs: Int(
          1,
          undefined,
          100,
          doc("The chain's shortest block time: how fast a head no other node confirms may grow. See docs/pools.md#implausible-heads."),
        ),
        describeIntervalMs: Int(
          1_000,
          undefined,
          300_000,
          doc('How often each node is asked what it serves. See docs/pools.md#nodes-that-describe-themselves.'),
        ),
      },
      doc('Health probes. See docs/pools.md#health-and-lag.'),
    ),
    breaker: Section(
      {
        errorThresholdPercentage: Int(1, 100, 50, doc('Failures, in percent of calls in the window, that open the breaker.')),
        volumeThreshold: Int(1, undefined, 5, doc('Calls in the window before the breaker may open.')),
        rollingWindowMs: Int(100, undefined, 10_000, doc("The breaker's window.")),
        resetTimeoutMs: Int(
          10,
          undefined,
          5_000,
          doc('After this, one trial call is let through (half-open) and closes the breaker on success.'),
        ),
      },
      doc('The circuit breaker of each node. See docs/pools.md#circuit-breakers.'),
    ),
    /** The budget's defaults are filled by schema.ts: `perSecond`, the old name of `minPerSecond`, decides them when given. */
    hedge: Section(
      {
        minDelayMs: Int(
          1,
          undefined,
          100,
          doc("Shortest delay before a second node is asked (the delay is about the first node's p95 latency)."),
        ),
        maxDelayMs: Int(1, undefined, 1_000, doc('Longest delay before a second node is asked.')),
        budgetPercent: Type.Optional(
          Int(
            0,
            100,
            undefined,
            doc(
              "The hedge budget: hedges as a share of the chain's hedgeable calls, in percent. Default: 10. budgetPercent and minPerSecond both 0: hedging off.",
            ),
          ),
        ),
        minPerSecond: Type.Optional(
          Int(0, undefined, undefined, doc('Hedges per second a quiet chain may still send, on top of budgetPercent. Default: 50.')),
        ),
        perSecond: Type.Optional(
          Int(0, undefined, undefined, doc('Old name of minPerSecond, still read as it; 0 turns hedging off; giving both is an error.')),
        ),
      },
      doc("Hedged reads: a slow node's call asked of a second node. See docs/pools.md#a-hung-node-costs-a-hedge-delay."),
    ),
    /** Outlier ejection (src/pool/outliers.ts); `consecutive: 0` turns it off. */
    ejection: Section(
      {
        consecutive: Int(
          0,
          100,
          3,
          doc('Timeouts in a row, on calls another node answered, that take a node out of rotation at once; 0: off.'),
        ),
        windowMs: Int(10, undefined, 10_000, doc('Each of those timeouts within this long of the last.')),
        baseMs: Int(10, undefined, 5_000, doc('The n-th ejection lasts baseMs × n.')),
        maxMs: Int(10, undefined, 60_000, doc('The longest ejection; each maxMs back in rotation forgets one ejection.')),
        maxPercent: Int(0, 100, 50, doc('At most this share of the pool ejected at once, and never the last node of a role in rotation.')),
      },
      doc('Outlier ejection. See docs/pools.md#outlier-ejection.'),
    ),
    submit: Enum(['all', 'one'], 'all', doc('Submits (transactions) go once to every full node (all) or to one (one).')),
    /** Answers checked against themselves (EVM: block hashes); schema.ts checks the plugin can. */
    verify: Enum(
      ['off', 'observe', 'enforce'],
      'off',
      doc(
        'Answers checked against themselves (EVM: block hashes recomputed from their headers): off, observe (counted, relayed) or enforce (refused as the node failing, asked of another node). See docs/answers-checked.md#verified-evm-blocks.',
      ),
    ),
    /** N-of-M agreement; left out, answers are not compared across nodes. `agree` defaults to a majority of `ask`. */
    consensus: Type.Optional(
      Shape(
        {
          methods: Type.Optional(
            Type.Array(Str(), {
              description:
                "Methods checked by agreement (patterns over the method name; SDK REST: the path). Default: the plugin's defaults.",
            }),
          ),
          ask: Int(2, 16, 3, doc("Nodes asked (M), at most the chain's nodes.")),
          agree: Type.Optional(Int(1, 16, undefined, doc('The same answers needed (N), at most ask. Default: a majority of ask.'))),
          onDisagree: Enum(
            ['answer-majority', 'error', 'prefer-archive'],
            'answer-majority',
            doc('Without agree alike: answer-majority, error (-32603 nodes disagree) or prefer-archive.'),
          ),
          maxDisputeRate: Type.Number({
            minimum: 0,
            maximum: 1,
            default: 0.2,
            description:
              'A node disputed by the majority on more than this share of at least minCompared compared calls within windowMs leaves rotation for coolDownMs.',
            errorMessage: 'must be a number from 0 to 1',
          }),
          minCompared: Int(1, undefined, 5, doc('Compared calls a node needs within windowMs before its share of disputes counts.')),
          windowMs: Int(100, undefined, 60_000, doc('The window disputes are counted over.')),
          coolDownMs: Int(
            100,
            undefined,
            60_000,
            doc('How long a disputed node stays out of rotation; then the next probe round brings it back like any other node.'),
          ),
        },
        doc('Answers checked by N-of-M agreement across nodes; left out, nothing is compared. See docs/answers-checked.md.'),
      ),
    ),
    cache: Enum(['memory', 'redis', 'off'], 'memory', doc('Response cache: memory, redis (needs store.hot.kind: redis) or off.')),
    cors: Section(
      { origins: Type.Optional(Origins("This endpoint's own list of page origins, replacing server.cors.origins.")) },
      doc("This endpoint's CORS."),
    ),
    /** The plugin's own settings, checked against its `optionsSchema`. */
    options: Named(Type.Unknown(), { default: {}, description: "The plugin's own options (see Plugin options below)." }),
    nodes: Type.Array(Node, { minItems: 1, description: 'The pool: at least one node.', errorMessage: 'must list at least one node' }),
  },
  doc('A chain endpoint: its plugin, where it is served, how calls are routed and checked, and its pool of nodes.'),
);

/** The whole file. The order of the keys here is the order `known: …` lists them in. */
export const ConfigFile = Shape({
  server: Server,
  log: Log,
  tracing: Tracing,
  admin: Admin,
  dashboard: Dashboard,
  store: Store,
  keys: Keys,
  cache: Cache,
  usage: Usage,
  tiers: Named(Tier, {
    minProperties: 1,
    description: 'Tiers by name; at least one. Every key is on one tier.',
    errorMessage: 'must be a mapping of tier names to their limits, with at least one tier',
  }),
  devnet: Devnet,
  chains: Named(Chain, {
    minProperties: 1,
    description: 'Chain endpoints by name (lower-case letters, digits, - and _; the name labels metrics); at least one.',
    errorMessage: 'must be a mapping of chain endpoint names to their settings, with at least one chain endpoint',
    propertyNames: { pattern: NAME.source, errorMessage: `name ${NAME_MESSAGE}` },
  }),
});

/** A config file as validation leaves it: defaults filled in, ${ENV} strings read as numbers and booleans. */
export type ConfigFile = Static<typeof ConfigFile>;
export type ChainFile = Static<typeof Chain>;
export type NodeFile = ConfigFile['chains'][string]['nodes'][number];
export type TierFile = Static<typeof Tier>;

// Compile-time: the sections handed through as they are have exactly the settings
// types.ts names, and the words match, so a setting added on one side only fails
// `npm run typecheck`.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Expect<T extends true> = T;
type Handled = 'cors' | 'trustedProxies' | 'publicUrl' | 'workers';
export type ShapeMatchesTypes = [
  Expect<Same<Omit<ConfigFile['server'], Handled>, Omit<ServerConfig, Handled>>>,
  Expect<Same<ConfigFile['keys'], KeysConfig>>,
  Expect<Same<ConfigFile['cache'], CacheConfig>>,
  Expect<Same<ConfigFile['devnet'], DevnetConfig>>,
  Expect<Same<ChainFile['health'], HealthConfig>>,
  Expect<Same<ChainFile['breaker'], BreakerConfig>>,
  Expect<
    Same<Omit<ChainFile['hedge'], 'budgetPercent' | 'minPerSecond' | 'perSecond'>, Omit<HedgeConfig, 'budgetPercent' | 'minPerSecond'>>
  >,
  Expect<Same<ChainFile['ejection'], EjectionConfig>>,
  Expect<Same<ChainFile['strategy'], StrategyName>>,
  Expect<Same<ConfigFile['log']['level'], LogLevel>>,
  Expect<Same<NodeFile['role'], NodeRole | undefined>>,
  Expect<Same<ConfigFile['store']['record']['kind'], StoreConfig['record']['kind']>>,
  Expect<Same<ConfigFile['store']['hot']['kind'], StoreConfig['hot']['kind']>>,
  Expect<Same<ConfigFile['store']['hot']['onFailure'], RedisHotConfig['onFailure']>>,
];
