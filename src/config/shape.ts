// The config file's shape, defined once: every setting, its type, range, default and
// the words it accepts. Validation (validate.ts) checks files against it and prints
// path-precise problems; `npm run schema` turns it into config/noderouter.schema.json,
// which editors use to check and complete config files.
//
// Adding a setting (e.g. store.leaseMs, server.workers, chains.<name>.consensus):
//   1. one line in its section below: `leaseMs: Int(100, 60_000, 5_000),` in Store,
//      `workers: Int(1, 64, 1),` in Server, `consensus: Section({ ... }),` in Chain.
//      Int(min, max, default), Str(default), Bool(default), Enum([...], default),
//      Limit(default), Section({...}) for a block of settings, Type.Optional(...) for
//      a setting without a default; `errorMessage` when the generic message
//      ("must be an integer from 1 to 64") does not say enough.
//   2. add it to types.ts. Sections handed through as they are (server, keys, cache,
//      devnet, health, breaker, ejection) need nothing more: ShapeMatchesTypes at the
//      end of this file fails typecheck until shape and types agree. Others are read
//      in schema.ts: readStore (store), readChain (chains.<name>), readTier, readLog,
//      readTracing, readDashboard: one line there (`leaseMs: s.leaseMs,`).
//   3. checks across settings (a reference to another chain, a duplicate, a URL, a
//      duration's range) go in schema.ts, with the path in the message;
//   4. `npm run schema` (a test fails while config/noderouter.schema.json is stale),
//      and a row in the README config table.
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
  ServerConfig,
  StoreConfig,
  StrategyName,
} from './types.js';

const MB = 1_048_576;
const MINUTE = 60_000;
const DAY = 86_400_000;

/** Chain and node names: they label metrics. */
export const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const NAME_MESSAGE = 'must be lower-case letters, digits, "-" or "_"';

/** Durations as `dashboard.sessionTtl` takes them (duration.ts), with their bounds in milliseconds. */
export const DURATIONS = {
  sessionTtl: { min: MINUTE, max: 30 * DAY },
  signinTokenTtl: { min: MINUTE, max: 7 * DAY },
} as const;

/** `15m`, `12h`, `7d`, or seconds; the range is checked by schema.ts. */
function Duration(bounds: { min: number; max: number }, fallback: string) {
  return Type.Unsafe<string | number>({
    anyOf: [
      { type: 'integer', minimum: 0 },
      { type: 'string', pattern: '^\\s*\\d+\\s*(s|m|h|d)?\\s*$' },
    ],
    default: fallback,
    errorMessage: durationMessage(bounds),
  });
}

export function durationMessage(bounds: { min: number; max: number }): string {
  return `must be a duration like "90s", "15m", "12h" or "7d", from ${describeDuration(bounds.min)} to ${describeDuration(bounds.max)}`;
}

const ORIGINS_EXAMPLE = '["*"] (any), or origins like ["https://app.example.com", "https://*.example.com"]';
const Origins = Type.Array(Type.String({ errorMessage: `must be a string: ${ORIGINS_EXAMPLE}` }), {
  errorMessage: `must be a list: ${ORIGINS_EXAMPLE}`,
});

const Server = Section({
  host: Str('127.0.0.1'),
  port: Int(0, 65_535, 8080),
  adminHost: Str('127.0.0.1'),
  adminPort: Int(0, 65_535, 8081),
  publicUrl: Type.Optional(Str()),
  maxBodyBytes: Int(1024, undefined, MB),
  maxHeaderBytes: Int(1024, MB, 16_384),
  maxJsonDepth: Int(2, 1000, 32),
  maxMethodLength: Int(8, 4096, 128),
  maxPathLength: Int(64, 65_536, 2048),
  maxResponseBytes: Int(1024, undefined, 32 * MB),
  shutdownTimeoutMs: Int(0, undefined, 15_000),
  shutdownDelayMs: Int(0, 600_000, 5_000),
  shutdownIdleMs: Int(0, 60_000, 1_000),
  requestTimeoutMs: Int(1, undefined, 30_000),
  headersTimeoutMs: Int(100, undefined, 10_000),
  keepAliveTimeoutMs: Int(100, undefined, 65_000),
  maxConnections: Int(1, undefined, 10_000),
  maxConnectionsPerClient: Int(0, undefined, 256),
  wsMaxMessageBytes: Int(1024, undefined, MB),
  wsMaxBufferedBytes: Int(1024, undefined, 8 * MB),
  wsPingIntervalMs: Int(10, undefined, 30_000),
  grpcHost: Str('127.0.0.1'),
  grpcPort: Int(0, 65_535, 9090),
  grpcMaxConcurrentStreams: Int(1, 10_000, 100),
  cors: Section({
    origins: Type.Optional(Origins),
    // Chromium keeps a preflight's answer at most 2 hours.
    maxAgeSeconds: Int(0, 86_400, 7_200),
  }),
  /** Checked as IP addresses and CIDR ranges by schema.ts. */
  trustedProxies: Type.Array(Str(), { default: [] }),
  /** Processes serving traffic; `auto`: one per core (schema.ts reads it). */
  workers: Type.Unsafe<number | 'auto'>({
    anyOf: [{ type: 'integer', minimum: 1, maximum: 1024 }, { const: 'auto' }],
    default: 1,
    errorMessage: 'must be a whole number of processes from 1 to 1024, or "auto" (one per core)',
  }),
});

const Log = Section({
  level: Enum(['debug', 'info', 'warn', 'error', 'silent'], 'info'),
  file: Type.Optional(Str()),
  maxBytes: Int(1024, undefined, 100 * MB),
  files: Int(0, 1000, 5),
});

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$";

const Tracing = Section({
  /** '' (from `${OTEL_ENDPOINT:-}`) leaves tracing off. */
  endpoint: Type.Optional(Type.String()),
  headers: Named(Type.String({ pattern: '^[\\t !-~]{0,8192}$', errorMessage: 'must be a string of printable characters on one line' }), {
    default: {},
    propertyNames: { pattern: HEADER_NAME, errorMessage: 'is not a valid HTTP header name' },
  }),
  serviceName: Str('noderouter'),
  sampleRatio: Type.Number({
    minimum: 0,
    maximum: 1,
    default: 1,
    errorMessage: 'must be a number from 0 to 1 (1: every trace begun here is recorded)',
  }),
  exportIntervalMs: Int(10, 600_000, 5_000),
});

const Admin = Section({
  /** '' (from `${NODEROUTER_ADMIN_TOKEN:-}`) leaves the admin API closed. */
  token: Type.Optional(
    Type.String({ pattern: '^(|[\\s\\S]{16,})$', errorMessage: 'must be at least 16 characters (set it from ${NODEROUTER_ADMIN_TOKEN})' }),
  ),
});

const Dashboard = Section({
  enabled: Bool(false),
  host: Str('127.0.0.1'),
  port: Type.Optional(Int(0, 65_535)),
  publicUrl: Type.Optional(Str()),
  sessionTtl: Duration(DURATIONS.sessionTtl, '12h'),
  signinTokenTtl: Duration(DURATIONS.signinTokenTtl, '15m'),
  signinAttemptsPerMinute: Int(1, 10_000, 10),
  trustProxy: Bool(false),
});

const Store = Section(
  {
    kind: Enum(['file', 'redis'], 'file'),
    path: Str('data/keys.json'),
    url: Type.Optional(Str(undefined, { pattern: '^rediss?://', errorMessage: 'must be a redis:// or rediss:// URL' })),
    prefix: Str('noderouter:'),
    timeoutMs: Int(1, 60_000, 250),
    onFailure: Enum(['fail-open', 'fail-closed'], 'fail-open'),
    instances: Int(1, 10_000, 1),
    /** redis: how long an instance spends a lease of tokens before giving back what it did not (0: no leases). */
    leaseMs: Int(0, 10_000, 200),
    /** redis: most tokens a lease takes; `auto`: what the tier's rate allows in leaseMs (0: no leases). */
    leaseTokens: Type.Unsafe<number | 'auto'>({
      anyOf: [{ type: 'integer', minimum: 0, maximum: 1_000_000_000 }, { const: 'auto' }],
      default: 'auto',
      errorMessage: 'must be "auto" or an integer from 0 (0: no leases, every call asks Redis)',
    }),
  },
  // A Redis store needs its URL.
  {
    if: { properties: { kind: { const: 'redis' } }, required: ['kind'] },
    then: { required: ['url'], properties: { url: { type: 'string' } } },
  },
);

const Keys = Section({
  cacheTtlMs: Int(0, undefined, 30_000),
  cacheMaxEntries: Int(1, undefined, 100_000),
  negativeTtlMs: Int(0, undefined, 5_000),
  negativeMaxEntries: Int(1, undefined, 10_000),
  rotationGraceSeconds: Int(0, undefined, 86_400),
  maxActivePerAccount: Int(1, 1_000_000, 100),
  changesPerHour: Int(1, 1_000_000, 60),
  changesBurst: Int(1, 1_000_000, 10),
});

const Cache = Section({
  maxBytes: Int(0, undefined, 64 * MB),
  maxEntryBytes: Int(1, undefined, MB),
  redisMaxTtlMs: Int(1, undefined, 3_600_000),
});

/** A tier's limits; `burst` and the account's limits default from the others (schema.ts). */
const Tier = Section({
  rate: Limit(10),
  burst: Type.Optional(Limit()),
  daily: Limit('unlimited'),
  monthly: Limit('unlimited'),
  maxBatch: Limit(100),
  archive: Bool(false),
  wsConnections: Limit(10),
  wsSubscriptions: Limit(100),
  cacheHitsFree: Bool(false),
  /** Node calls one client call (each batch item) may cause: parts, retries, hedges, agreement, broadcast. */
  nodeCalls: Int(1, 1000, 16),
  /** Agreement and broadcast charged per node asked (else once). */
  chargeFanout: Bool(false),
  account: Section({
    rate: Type.Optional(Limit()),
    burst: Type.Optional(Limit()),
    daily: Type.Optional(Limit()),
    monthly: Type.Optional(Limit()),
    wsConnections: Type.Optional(Limit()),
    wsSubscriptions: Type.Optional(Limit()),
  }),
  costs: Section({
    invalid: Int(0, 1_000_000, 1),
  }),
});

const Devnet = Section({
  blockTimeMs: Int(0, undefined, 1_000),
  fullRetention: Int(1, undefined, 128),
  startHeight: Int(1, undefined, 1_000),
  controlPort: Int(0, 65_535, 0),
  filterTimeoutMs: Int(1, undefined, 300_000),
  maxLogsRange: Int(0, undefined, 0),
});

/** Node URLs are checked by schema.ts (scheme, credentials, what a gRPC node takes); header names and values here. */
const Node = Shape({
  name: Str(undefined, { pattern: NAME.source, errorMessage: NAME_MESSAGE }),
  url: Str(),
  ws: Type.Optional(Str()),
  headers: Type.Optional(
    Named(
      Type.String({
        pattern: '^[\\t\\x20-\\x7e]+$',
        errorMessage:
          'must be a non-empty string of printable ASCII, e.g. "Bearer ${NODE_TOKEN}" (no line breaks or control characters; the value is not repeated here)',
      }),
      { propertyNames: { pattern: HEADER_NAME, errorMessage: "is not a valid header name (letters, digits and !#$%&'*+.^_`|~- only)" } },
    ),
  ),
  /** Left out, the node's own description decides (src/pool/describe.ts). */
  role: Type.Optional(Enum(['full', 'archive'])),
  weight: Int(1, 1000, 1),
  /** Lower is preferred by the `priority` strategy; 0 = primary. */
  priority: Int(0, 100, 0),
});

const CHAIN_ID_MESSAGE =
  'must be the id the nodes report: a number for EVM chains (1 or "0x1"), the network id for SDK chains ("cosmoshub-4"), the chain identifier for objectx ("35834a8a")';

export const Chain = Shape({
  plugin: Str(),
  network: Type.Optional(Str()),
  /** EVM ids in decimal (a 0x number is read as one), others as written; printable ASCII without spaces. */
  chainId: Type.Optional(
    Type.Unsafe<string | number>({
      anyOf: [
        { type: 'string', pattern: '^[!-~]{1,128}$' },
        { type: 'integer', minimum: 0 },
      ],
      errorMessage: CHAIN_ID_MESSAGE,
    }),
  ),
  /** Required by schema.ts for chains served on the HTTP listener; a gRPC chain without one is the default gRPC chain. */
  route: Type.Optional(
    Shape(
      {
        path: Type.Optional(
          Str(undefined, { pattern: '^(/[A-Za-z0-9._~-]+)+$', errorMessage: 'must look like "/l1" or "/hub/rpc" (no trailing slash)' }),
        ),
        host: Type.Optional(
          Str(undefined, { pattern: '^[A-Za-z0-9.-]+(:\\d+)?$', errorMessage: 'must be a host name like "l1.example.com"' }),
        ),
      },
      { minProperties: 1, errorMessage: 'must be a mapping with a path, a host, or both, like { path: /l1 }' },
    ),
  ),
  archiveOnly: Bool(false),
  strategy: Enum(['round-robin', 'weighted', 'least-latency', 'priority'], 'round-robin'),
  attemptTimeoutMs: Int(1, undefined, 10_000),
  maxAttempts: Int(1, 10, 3),
  health: Section({
    intervalMs: Int(50, undefined, 2_000),
    timeoutMs: Int(10, undefined, 1_500),
    maxLag: Int(0, undefined, 5),
    failAfter: Int(1, 100, 2),
    minBlockTimeMs: Int(1, undefined, 100),
    describeIntervalMs: Int(1_000, undefined, 300_000),
  }),
  breaker: Section({
    errorThresholdPercentage: Int(1, 100, 50),
    volumeThreshold: Int(1, undefined, 5),
    rollingWindowMs: Int(100, undefined, 10_000),
    resetTimeoutMs: Int(10, undefined, 5_000),
  }),
  /** The budget's defaults are filled by schema.ts: `perSecond`, the old name of `minPerSecond`, decides them when given. */
  hedge: Section({
    minDelayMs: Int(1, undefined, 100),
    maxDelayMs: Int(1, undefined, 1_000),
    budgetPercent: Type.Optional(
      Int(0, 100, undefined, { description: 'hedges as a share of the hedgeable calls, in percent (default 10)' }),
    ),
    minPerSecond: Type.Optional(
      Int(0, undefined, undefined, { description: 'hedges per second a quiet chain may still send (default 50)' }),
    ),
    perSecond: Type.Optional(Int(0, undefined, undefined, { description: 'old name of minPerSecond; 0 turns hedging off' })),
  }),
  /** Outlier ejection (src/pool/outliers.ts); `consecutive: 0` turns it off. */
  ejection: Section({
    consecutive: Int(0, 100, 3),
    windowMs: Int(10, undefined, 10_000),
    baseMs: Int(10, undefined, 5_000),
    maxMs: Int(10, undefined, 60_000),
    maxPercent: Int(0, 100, 50),
  }),
  submit: Enum(['all', 'one'], 'all'),
  /** Answers checked against themselves (EVM: block hashes); schema.ts checks the plugin can. */
  verify: Enum(['off', 'observe', 'enforce'], 'off'),
  /** N-of-M agreement; left out, answers are not compared across nodes. `agree` defaults to a majority of `ask`. */
  consensus: Type.Optional(
    Shape({
      methods: Type.Optional(Type.Array(Str())),
      ask: Int(2, 16, 3),
      agree: Type.Optional(Int(1, 16)),
      onDisagree: Enum(['answer-majority', 'error', 'prefer-archive'], 'answer-majority'),
      maxDisputeRate: Type.Number({ minimum: 0, maximum: 1, default: 0.2, errorMessage: 'must be a number from 0 to 1' }),
      minCompared: Int(1, undefined, 5),
      windowMs: Int(100, undefined, 60_000),
      coolDownMs: Int(100, undefined, 60_000),
    }),
  ),
  cache: Enum(['memory', 'redis', 'off'], 'memory'),
  cors: Section({ origins: Type.Optional(Origins) }),
  /** The plugin's own settings, checked against its `optionsSchema`. */
  options: Named(Type.Unknown(), { default: {} }),
  nodes: Type.Array(Node, { minItems: 1, errorMessage: 'must list at least one node' }),
});

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
  tiers: Named(Tier, { minProperties: 1, errorMessage: 'must be a mapping of tier names to their limits, with at least one tier' }),
  devnet: Devnet,
  chains: Named(Chain, {
    minProperties: 1,
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
  Expect<Same<ConfigFile['store']['kind'], StoreConfig['kind']>>,
  Expect<Same<ConfigFile['store']['onFailure'], StoreConfig['onFailure']>>,
];
