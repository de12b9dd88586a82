// Redis connections for the shared store: every command bounded by a timeout, no
// offline queue (a command while disconnected fails at once instead of piling up),
// reconnection by itself with capped backoff, and an up/down signal for metrics,
// readiness and the failure policy. The servers are one URL, a master found through
// Sentinel (a failover is followed: the sentinels name the promoted replica on the
// next reconnect), or a Redis Cluster; callers see one client type either way.

import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** A server's address. */
export interface RedisAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * Where to connect, in this layer's terms (the store imports nothing of the gateway;
 * the config's `store.hot` servers have this shape).
 */
export type RedisServers =
  | { readonly kind: 'url'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly RedisAddress[];
      readonly name: string;
      readonly password: string | undefined;
      readonly sentinelPassword: string | undefined;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisAddress[]; readonly password: string | undefined };

/** A connection to a single server (URL or Sentinel) or to a cluster: the commands noderouter uses are the same. */
export type RedisClient = Redis | Cluster;

export interface RedisHealth {
  readonly up: boolean;
}

export interface RedisConnectionOptions {
  readonly servers: RedisServers;
  readonly timeoutMs: number;
  /** A subscriber: no command timeout (it would cut the long-lived subscription). */
  readonly subscriber?: boolean;
  /** Called on every change of up/down. */
  readonly onHealth?: (up: boolean) => void;
}

const backoff = (attempt: number): number => Math.min(50 * 2 ** Math.min(attempt, 6), 2_000);

export class RedisConnection implements RedisHealth {
  readonly client: RedisClient;
  up = false;

  constructor(private readonly options: RedisConnectionOptions) {
    this.client = RedisConnection.create(options);
    this.client.on('ready', () => this.set(true));
    this.client.on('close', () => this.set(false));
    this.client.on('end', () => this.set(false));
    this.client.on('error', () => undefined);
  }

  static create(options: RedisConnectionOptions): RedisClient {
    const sub = options.subscriber === true;
    const common: RedisOptions = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: sub ? undefined : options.timeoutMs,
      connectTimeout: Math.max(options.timeoutMs, 1_000),
      enableReadyCheck: true,
      retryStrategy: backoff,
      reconnectOnError: () => true,
    };
    const s = options.servers;
    if (s.kind === 'url') return new Redis(s.url, common);
    if (s.kind === 'sentinel') {
      return new Redis({
        ...common,
        sentinels: s.sentinels.map((a) => ({ host: a.host, port: a.port })),
        name: s.name,
        password: s.password,
        sentinelPassword: s.sentinelPassword,
        // Sentinels are asked again on every reconnect; a dead one is skipped at once.
        sentinelRetryStrategy: backoff,
        sentinelCommandTimeout: Math.max(options.timeoutMs, 500),
        // Subscribed to the sentinels' +switch-master: a demoted master is left at once, not on its next error.
        failoverDetector: true,
      });
    }
    return new Cluster(
      s.nodes.map((a) => ({ host: a.host, port: a.port })),
      {
        enableOfflineQueue: false,
        enableReadyCheck: true,
        clusterRetryStrategy: backoff,
        // A moved slot (a failover, a resharding) is followed; a cluster that is down fails the call at once.
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
        redisOptions: { ...common, password: s.password },
      },
    );
  }

  private set(up: boolean): void {
    if (up === this.up) return;
    this.up = up;
    this.options.onHealth?.(up);
  }

  /** Wait (at most `waitMs`) for the first connection; the client keeps retrying either way. */
  ready(waitMs: number): Promise<boolean> {
    if (this.up) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(ok);
      };
      const onReady = (): void => done(true);
      const timer = setTimeout(() => done(false), waitMs);
      this.client.once('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.client.disconnect(false);
  }
}
