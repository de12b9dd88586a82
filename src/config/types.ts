// The typed, validated, frozen configuration the rest of the gateway reads.
// Produced only by schema.ts; nothing downstream sees raw YAML.

import type { NodeRole, VerifyMode } from '../plugin/contract.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type StrategyName = 'round-robin' | 'weighted' | 'least-latency' | 'priority';

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly adminHost: string;
  readonly adminPort: number;
  /** Base URL printed for endpoints; defaults to http://host:port. */
  readonly publicUrl: string | undefined;
  readonly maxBodyBytes: number;
  /** Larger request headers get 431. */
  readonly maxHeaderBytes: number;
  /** Deepest JSON nesting accepted in a request body. */
  readonly maxJsonDepth: number;
  /** Longest JSON-RPC method name accepted. */
  readonly maxMethodLength: number;
  /** Longest request path accepted. */
  readonly maxPathLength: number;
  /** Largest node answer read; a larger one counts as the node failing. */
  readonly maxResponseBytes: number;
  /** After the listeners stop accepting, how long in-flight requests may take before connections are cut. */
  readonly shutdownTimeoutMs: number;
  /**
   * Once the listeners stop accepting, how long a kept-alive connection may bring no
   * request before it is closed (a busy one closes right after its next answer instead).
   */
  readonly shutdownIdleMs: number;
  /** On SIGTERM, how long readiness says 503 while everything is still served (load balancers stop sending meanwhile). */
  readonly shutdownDelayMs: number;
  /** Deadline for one client request, every retry included. */
  readonly requestTimeoutMs: number;
  /** Time a client has to send its headers (slow-loris guard). */
  readonly headersTimeoutMs: number;
  /** Idle time before a kept-alive client connection is closed. */
  readonly keepAliveTimeoutMs: number;
  /** Concurrent client connections; more are refused. */
  readonly maxConnections: number;
  /** Concurrent connections from one client address (the peer's, per listener); more are closed at once. 0: no cap. */
  readonly maxConnectionsPerClient: number;
  /** Largest WebSocket message a client may send; a larger one closes the socket (1009). */
  readonly wsMaxMessageBytes: number;
  /** Answers and notifications waiting to be sent to a WebSocket client that is not reading; past this it is disconnected (1008). */
  readonly wsMaxBufferedBytes: number;
  /** WebSocket pings this often; a client that has not answered the last one is dropped. */
  readonly wsPingIntervalMs: number;
  /** gRPC listener (h2c), started when a chain endpoint uses a gRPC plugin; port 0 = ephemeral. */
  readonly grpcHost: string;
  readonly grpcPort: number;
  /** Calls one gRPC connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
  readonly grpcMaxConcurrentStreams: number;
  /** Browser access to the traffic endpoints (CORS); chains may replace the origins. */
  readonly cors: ServerCorsConfig;
  /**
   * Addresses and CIDR ranges of proxies in front of the traffic and gRPC listeners:
   * behind them the client's address (a key's `ips`, the access log's `client`) is the
   * right-most X-Forwarded-For entry that is not one of them.
   */
  readonly trustedProxies: readonly string[];
  /**
   * Processes serving traffic (`auto` in the file: one per core). 1: this process alone;
   * more: a primary process forks them and they share the listeners (src/cluster/).
   */
  readonly workers: number;
}

/** Origins pages may call an endpoint from: `*` (any), exact origins or `https://*.example.com`, canonical; [] none. */
export interface CorsConfig {
  readonly origins: readonly string[];
}

export interface ServerCorsConfig extends CorsConfig {
  /** How long browsers may keep a preflight's answer (Access-Control-Max-Age). */
  readonly maxAgeSeconds: number;
}

export interface LogConfig {
  readonly level: LogLevel;
  /** Absolute path of the log file; undefined: JSON lines on stdout. */
  readonly file: string | undefined;
  /** The file is rotated before it grows past this. */
  readonly maxBytes: number;
  /** Rotated files kept (file.1 … file.N); 0: the file is emptied instead. */
  readonly files: number;
}

/**
 * The record: accounts, key hashes and their settings, restrictions, sign-in tokens
 * and sessions, usage history and operators' holds. One member per kind of database.
 */
export interface SqliteRecordConfig {
  readonly kind: 'sqlite';
  /** Absolute path of the database file (WAL mode: its -wal and -shm files sit beside it). */
  readonly path: string;
}

/** The record in PostgreSQL, shared by every instance (each process opens its own pool). */
export interface PostgresRecordConfig {
  readonly kind: 'postgres';
  /** postgres:// or postgresql:// connection string (it may carry a password: never printed). */
  readonly url: string;
  /** The schema that holds the record's tables (created when missing). */
  readonly schema: string;
  /** Connections each process's pool opens at most. */
  readonly poolSize: number;
}

export type RecordConfig = SqliteRecordConfig | PostgresRecordConfig;

/** Hot state in this process: one instance (a cluster's primary keeps it for its workers). */
export interface MemoryHotConfig {
  readonly kind: 'memory';
}

/** A Redis server's address as the config names it. */
export interface RedisAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * Which Redis: one server by URL; a master found through Sentinel (it follows a
 * failover); or a Redis Cluster, found from any of its nodes.
 */
export type RedisServers =
  | { readonly kind: 'url'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly RedisAddress[];
      /** The master's name in the sentinels' configuration. */
      readonly name: string;
      readonly password: string | undefined;
      readonly sentinelPassword: string | undefined;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisAddress[]; readonly password: string | undefined };

/** Hot state in Redis, shared by every instance. */
export interface RedisHotConfig {
  readonly kind: 'redis';
  /** Where Redis is: `url`, `sentinels` or `cluster` in the file. */
  readonly servers: RedisServers;
  /** Prefix of every key noderouter writes, so several deployments can share a server. */
  readonly prefix: string;
  /** Bound of every command; past it the call counts as a Redis failure. */
  readonly timeoutMs: number;
  /** When Redis fails, serve with local limits (fail-open) or refuse with 503 (fail-closed). */
  readonly onFailure: 'fail-open' | 'fail-closed';
  /** Instances sharing the limits; fail-open divides each limit by it. */
  readonly instances: number;
  /**
   * How long this instance may hold tokens taken from the shared limits before what it
   * did not spend goes back (0: every call asks Redis, exactly).
   */
  readonly leaseMs: number;
  /** Most tokens one lease takes; `auto`: what the tier's rate allows in `leaseMs` (0: no leases). */
  readonly leaseTokens: number | 'auto';
}

/**
 * Rate limits, quota counters, leases, WebSocket slots, and the announcements of key
 * revocations and holds.
 */
export type HotConfig = MemoryHotConfig | RedisHotConfig;

/** The two roles, configured apart: the record (a database) and the hot state (memory or Redis). */
export interface StoreConfig {
  readonly record: RecordConfig;
  readonly hot: HotConfig;
}

export interface KeysConfig {
  readonly cacheTtlMs: number;
  readonly cacheMaxEntries: number;
  readonly negativeTtlMs: number;
  /** Bound of the unknown-key cache (its own: unknown keys never push out known ones). */
  readonly negativeMaxEntries: number;
  readonly rotationGraceSeconds: number;
  /** Active keys one account may hold; creating one more is refused. */
  readonly maxActivePerAccount: number;
  /** Key creations, rotations and revocations per account per hour through the dashboard and admin API. */
  readonly changesPerHour: number;
  /** Of those, how many may come at once. */
  readonly changesBurst: number;
}

/** Limits on all of an account's keys on one tier together; Infinity stands for `unlimited`. */
export interface AccountLimits {
  readonly rate: number;
  readonly burst: number;
  readonly daily: number;
  readonly monthly: number;
  /** WebSocket connections open at once over all the account's keys (read from config always; absent: unlimited). */
  readonly wsConnections?: number;
  /** WebSocket subscriptions open at once over all the account's connections (absent: unlimited). */
  readonly wsSubscriptions?: number;
}

/** What requests cost against a tier's rate beyond their calls' own costs. */
export interface TierCosts {
  /** A request with a valid key that became no call (malformed, over a size limit, every call refused). */
  readonly invalid: number;
}

/** Limits of a subscription tier; Infinity stands for `unlimited`. */
export interface TierConfig {
  readonly name: string;
  /** Sustained calls per second. */
  readonly rate: number;
  /** Calls that may arrive at once above the sustained rate. */
  readonly burst: number;
  readonly daily: number;
  readonly monthly: number;
  readonly maxBatch: number;
  readonly archive: boolean;
  readonly wsConnections: number;
  /** Subscriptions open at once on one WebSocket connection. */
  readonly wsSubscriptions: number;
  /** Answers from the response cache cost nothing against limits and usage. */
  readonly cacheHitsFree: boolean;
  /**
   * Node calls one client call (each batch item on its own) may cause: getLogs parts,
   * retries, hedges, nodes asked for agreement, a submit's broadcast. Past it nothing
   * more is sent (src/exec/policies/node-budget.ts).
   */
  readonly nodeCalls: number;
  /** A call checked by agreement or broadcast to every full node is charged its cost per node asked (else once). */
  readonly chargeFanout: boolean;
  /** The same account's keys on this tier together (by default what one key gets). */
  readonly account: AccountLimits;
  /** Read from config always; absent (a tier built in code): an invalid request costs 1. */
  readonly costs?: TierCosts;
}

export interface NodeConfig {
  readonly name: string;
  readonly url: string;
  /** WebSocket URL for subscriptions (ws:// or wss://); by default the HTTP URL with a ws scheme. */
  readonly ws: string;
  /** Sent on every call to the node (lower-case names); the values are secrets. */
  readonly headers: Readonly<Record<string, string>>;
  /** Undefined: the role the node's description shows (archive when it holds old state), full until then. */
  readonly role: NodeRole | undefined;
  readonly weight: number;
  /** Lower is preferred by the `priority` strategy; 0 = primary. */
  readonly priority: number;
}

export interface HealthConfig {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Blocks behind the best head before a node leaves rotation. */
  readonly maxLag: number;
  /** Consecutive failed probes before a node leaves rotation. */
  readonly failAfter: number;
  /** The shortest block time of the chain: how fast a head no other node confirms may grow. */
  readonly minBlockTimeMs: number;
  /** How often each node is asked what it serves (chain id, client, oldest state): src/pool/describe.ts. */
  readonly describeIntervalMs: number;
}

export interface BreakerConfig {
  /** Percentage of failed calls in the rolling window that opens the breaker. */
  readonly errorThresholdPercentage: number;
  /** Calls in the window before the percentage is judged. */
  readonly volumeThreshold: number;
  readonly rollingWindowMs: number;
  /** Time open before one trial call is let through (half-open). */
  readonly resetTimeoutMs: number;
}

/** Hedged reads (src/exec/attempts/hedge.ts): the delay is about a node's 95th-percentile latency, within min and max. */
export interface HedgeConfig {
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
  /** Hedges as a share of the chain's hedgeable calls, in percent (0 to 100). */
  readonly budgetPercent: number;
  /** Hedges per second the chain may send whatever its traffic (the floor of a quiet chain). Both 0: hedging off. */
  readonly minPerSecond: number;
}

/** Outlier ejection (src/pool/outliers.ts): a node slow on calls other nodes answer leaves rotation at once. */
export interface EjectionConfig {
  /** Timeouts (or hedges outrunning it) in a row that eject a node; 0 turns ejection off. */
  readonly consecutive: number;
  /** A run is over when its last timeout is older than this. */
  readonly windowMs: number;
  /** The n-th ejection of a node lasts baseMs × n, at most maxMs. */
  readonly baseMs: number;
  readonly maxMs: number;
  /** Share of the pool's nodes that may be ejected at once, in percent; a node of each role always stays. */
  readonly maxPercent: number;
}

/** N-of-M agreement (src/exec/policies/consensus.ts): listed methods go to `ask` nodes and are answered once `agree` of them agree. */
export interface ConsensusConfig {
  /** Method patterns checked; undefined: the plugin's defaults. */
  readonly methods: readonly string[] | undefined;
  /** Nodes asked (M). */
  readonly ask: number;
  /** Agreeing answers needed (N), at most `ask`. */
  readonly agree: number;
  /** No `agree` answers alike: the largest group's answer, the table error, or an archive node's answer. */
  readonly onDisagree: 'answer-majority' | 'error' | 'prefer-archive';
  /** A node disputed by the majority on more than this share of its compared calls leaves rotation. */
  readonly maxDisputeRate: number;
  /** Compared calls of a node in the window before its rate is judged. */
  readonly minCompared: number;
  /** The window the rate is counted over. */
  readonly windowMs: number;
  /** How long a disputed node stays out before probes may bring it back. */
  readonly coolDownMs: number;
}

export interface ChainConfig {
  readonly name: string;
  readonly plugin: string;
  /** The plugin's transport: 'grpc' endpoints are served by the gRPC listener, by :authority. */
  readonly transport: 'http' | 'grpc';
  /** Chain endpoints serving one blockchain share a network name (hub's RPC and REST). */
  readonly network: string;
  /**
   * The chain its nodes must say they are on, in the plugin's terms (EVM: the decimal
   * chain id; SDK chains: the network id; objectx: the chain identifier). Undefined: the
   * first id a majority of the nodes agree on.
   */
  readonly chainId: string | undefined;
  readonly route: { readonly path: string | undefined; readonly host: string | undefined };
  /** Only archive nodes serve this endpoint (the spec's archive REST variant). */
  readonly archiveOnly: boolean;
  readonly strategy: StrategyName;
  /** Timeout of one attempt on one node. */
  readonly attemptTimeoutMs: number;
  readonly maxAttempts: number;
  readonly health: HealthConfig;
  readonly breaker: BreakerConfig;
  readonly hedge: HedgeConfig;
  readonly ejection: EjectionConfig;
  /** Answers checked by agreement across nodes; undefined: off. */
  readonly consensus: ConsensusConfig | undefined;
  /** Submits (transactions) go to every full node at once ('all'), or to one ('one'). */
  readonly submit: 'all' | 'one';
  /** Answer checks the plugin makes (EVM: block hashes recomputed): none, counted only, or refused on a mismatch. */
  readonly verify: VerifyMode;
  /** Where this endpoint's answers are cached: this process, Redis (shared), or nowhere. */
  readonly cache: 'memory' | 'redis' | 'off';
  /** Browser origins this endpoint answers (its own list, else server.cors.origins). */
  readonly cors: CorsConfig;
  readonly options: Readonly<Record<string, unknown>>;
  readonly nodes: readonly NodeConfig[];
}

export interface DevnetConfig {
  readonly blockTimeMs: number;
  readonly fullRetention: number;
  readonly startHeight: number;
  readonly controlPort: number;
  /** A simulated node drops a filter not polled for this long. */
  readonly filterTimeoutMs: number;
  /** The widest getLogs block range simulated nodes answer; 0: any. */
  readonly maxLogsRange: number;
  /** Host names besides loopback whose node URLs are simulated (the devnet's compose service). */
  readonly hosts: string[];
  /** Where the simulated nodes and the control server listen; absent: the URL's loopback address. */
  readonly listen?: string;
}

export interface CacheConfig {
  /** Bound of the in-memory response cache, all chains together. */
  readonly maxBytes: number;
  /** Larger answers are never cached. */
  readonly maxEntryBytes: number;
  /** Longest life of an entry in Redis, so nothing stays there forever. */
  readonly redisMaxTtlMs: number;
}

/** Usage history (src/quota/usage-rollup.ts, docs/operators.md#usage-history). */
export interface UsageConfig {
  /** Each instance writes its rollups this often. */
  readonly flushIntervalMs: number;
  /** Hourly rollups older than this are pruned. */
  readonly retentionMs: number;
  readonly failedCalls: {
    /** Failed calls kept per key (the newest); 0: none. */
    readonly perKey: number;
    readonly maxAgeMs: number;
  };
}

/** The account dashboard (docs/dashboard.md). */
export interface DashboardConfig {
  readonly enabled: boolean;
  /** Its own listener's address; with `port` unset it is served on the admin listener. */
  readonly host: string;
  readonly port: number | undefined;
  /** Origin customers reach it at (https://dash.example.com); sign-in links and the CSRF origin check use it. */
  readonly publicUrl: string | undefined;
  /** Absolute life of a session from sign-in. */
  readonly sessionTtlMs: number;
  /** Life of a sign-in link from `accounts token` (the CLI's --ttl overrides it). */
  readonly signinTokenTtlMs: number;
  /** Failed sign-ins one client address may make per minute before 429. */
  readonly signinAttemptsPerMinute: number;
  /** Read the client address from X-Forwarded-For (behind a reverse proxy). */
  readonly trustProxy: boolean;
}

/** OpenTelemetry traces (src/ops/trace): off while `endpoint` is unset. */
export interface TracingConfig {
  /** OTLP over HTTP: the collector's traces URL (…/v1/traces); undefined: no spans are made. */
  readonly endpoint: string | undefined;
  /** Sent with every export (a collector's credentials). */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  /** Share of the traces begun here that are recorded; a client's traceparent decides for its own. */
  readonly sampleRatio: number;
  /** Ended spans are sent in batches this often. */
  readonly exportIntervalMs: number;
}

export interface GatewayConfig {
  /** Absolute path of the file this was read from ('' when built in code). */
  readonly file: string;
  readonly server: ServerConfig;
  readonly log: LogConfig;
  readonly tracing: TracingConfig;
  readonly admin: { readonly token: string | undefined };
  readonly dashboard: DashboardConfig;
  readonly store: StoreConfig;
  readonly keys: KeysConfig;
  readonly cache: CacheConfig;
  readonly usage: UsageConfig;
  readonly tiers: Readonly<Record<string, TierConfig>>;
  readonly devnet: DevnetConfig;
  readonly chains: Readonly<Record<string, ChainConfig>>;
}
