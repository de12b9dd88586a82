// Redis connections for the shared store: every command bounded by a timeout, no
// offline queue (a command while disconnected fails at once instead of piling up),
// reconnection by itself with capped backoff, and an up/down signal for metrics,
// readiness and the failure policy.

import { Redis } from 'ioredis';

export interface RedisHealth {
  readonly up: boolean;
}

export interface RedisConnectionOptions {
  readonly url: string;
  readonly timeoutMs: number;
  /** Called on every change of up/down. */
  readonly onHealth?: (up: boolean) => void;
}

export class RedisConnection implements RedisHealth {
  readonly client: Redis;
  up = false;

  constructor(private readonly options: RedisConnectionOptions) {
    this.client = RedisConnection.create(options);
    this.client.on('ready', () => this.set(true));
    this.client.on('close', () => this.set(false));
    this.client.on('error', () => undefined);
  }

  static create(options: RedisConnectionOptions): Redis {
    return new Redis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.timeoutMs,
      connectTimeout: Math.max(options.timeoutMs, 1_000),
      enableReadyCheck: true,
      retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 6), 2_000),
      reconnectOnError: () => true,
    });
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
