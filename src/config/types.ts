// The typed, validated, frozen configuration the rest of the gateway reads.
// Produced only by schema.ts; nothing downstream sees raw YAML.

import type { NodeRole } from '../plugin.js';

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
  /** On SIGTERM, how long in-flight requests may take before connections are cut. */
  readonly shutdownTimeoutMs: number;
  /** Deadline for one client request, every retry included. */
  readonly requestTimeoutMs: number;
  /** Time a client has to send its headers (slow-loris guard). */
  readonly headersTimeoutMs: number;
  /** Idle time before a kept-alive client connection is closed. */
  readonly keepAliveTimeoutMs: number;
  /** Concurrent client connections; more are refused. */
  readonly maxConnections: number;
  /** Largest WebSocket message a client may send; a larger one closes the socket (1009). */
  readonly wsMaxMessageBytes: number;
  /** WebSocket pings this often; a client that has not answered the last one is dropped. */
  readonly wsPingIntervalMs: number;
  /** gRPC listener (h2c), started when a chain endpoint uses a gRPC plugin; port 0 = ephemeral. */
  readonly grpcHost: string;
  readonly grpcPort: number;
}

export interface StoreConfig {
  readonly kind: 'file' | 'redis';
  /** file: absolute path of the key file (usage is kept beside it). */
  readonly path: string;
  /** redis: connection URL. */
  readonly url: string;
  /** redis: prefix of every key noderouter writes, so several deployments can share a server. */
  readonly prefix: string;
  /** redis: bound of every command; past it the call counts as a Redis failure. */
  readonly timeoutMs: number;
  /** redis: when Redis fails, serve with local limits (fail-open) or refuse with 503 (fail-closed). */
  readonly onFailure: 'fail-open' | 'fail-closed';
  /** redis: instances sharing the limits; fail-open divides each limit by it. */
  readonly instances: number;
}

export interface KeysConfig {
  readonly cacheTtlMs: number;
  readonly cacheMaxEntries: number;
  readonly negativeTtlMs: number;
  readonly rotationGraceSeconds: number;
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
}

export interface NodeConfig {
  readonly name: string;
  readonly url: string;
  /** WebSocket URL for subscriptions (ws:// or wss://); by default the HTTP URL with a ws scheme. */
  readonly ws: string;
  readonly role: NodeRole;
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

export interface ChainConfig {
  readonly name: string;
  readonly plugin: string;
  /** The plugin's transport: 'grpc' endpoints are served by the gRPC listener, by :authority. */
  readonly transport: 'http' | 'grpc';
  /** Chain endpoints serving one blockchain share a network name (hub's RPC and REST). */
  readonly network: string;
  readonly route: { readonly path: string | undefined; readonly host: string | undefined };
  /** Only archive nodes serve this endpoint (the spec's archive REST variant). */
  readonly archiveOnly: boolean;
  readonly strategy: StrategyName;
  /** Timeout of one attempt on one node. */
  readonly attemptTimeoutMs: number;
  readonly maxAttempts: number;
  readonly health: HealthConfig;
  readonly breaker: BreakerConfig;
  /** Where this endpoint's answers are cached: this process, Redis (shared), or nowhere. */
  readonly cache: 'memory' | 'redis' | 'off';
  readonly options: Readonly<Record<string, unknown>>;
  readonly nodes: readonly NodeConfig[];
}

export interface DevnetConfig {
  readonly blockTimeMs: number;
  readonly fullRetention: number;
  readonly startHeight: number;
  readonly controlPort: number;
}

export interface CacheConfig {
  /** Bound of the in-memory response cache, all chains together. */
  readonly maxBytes: number;
  /** Larger answers are never cached. */
  readonly maxEntryBytes: number;
  /** Longest life of an entry in Redis, so nothing stays there forever. */
  readonly redisMaxTtlMs: number;
}

/** The account dashboard (README "Dashboard"). */
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

export interface GatewayConfig {
  /** Absolute path of the file this was read from ('' when built in code). */
  readonly file: string;
  readonly server: ServerConfig;
  readonly log: { readonly level: LogLevel };
  readonly admin: { readonly token: string | undefined };
  readonly dashboard: DashboardConfig;
  readonly store: StoreConfig;
  readonly keys: KeysConfig;
  readonly cache: CacheConfig;
  readonly tiers: Readonly<Record<string, TierConfig>>;
  readonly devnet: DevnetConfig;
  readonly chains: Readonly<Record<string, ChainConfig>>;
}
