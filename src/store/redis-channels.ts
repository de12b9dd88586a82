// Announcements between instances over Redis pub/sub: one subscriber connection of
// its own (a subscribed connection can send nothing else), channels listened to by
// name, and each message tagged with the sender's origin so an instance ignores the
// echo of its own. Messages published while a listener was disconnected are lost, so
// after every reconnect each listener is told to read everything again.
// What a message means is its listener's (key changes, holds).

import { randomUUID } from 'node:crypto';
import { RedisConnection, type RedisClient, type RedisServers } from './redis-connection.js';

export interface ChannelListener {
  /** Another instance's message. */
  message(text: string): void;
  /** Messages may have been missed (a reconnect): read everything again. */
  resync(): void;
}

export class RedisChannels {
  /** Tags this instance's messages: it applied its own changes already. */
  readonly origin = randomUUID();
  private readonly listeners = new Map<string, ChannelListener>();
  private connectedBefore = false;

  private constructor(
    private readonly publisher: RedisClient,
    private readonly subscriber: RedisConnection,
  ) {
    subscriber.client.on('message', (channel: string, text: string) => this.receive(channel, text));
    subscriber.client.on('ready', () => {
      const names = [...this.listeners.keys()];
      if (names.length > 0) void subscriber.client.subscribe(...names).catch(() => undefined);
      if (this.connectedBefore) for (const l of this.listeners.values()) l.resync();
      this.connectedBefore = true;
    });
  }

  /** Publishes on `publisher` (a connection shared with other commands); listens on a connection of its own. */
  static async open(publisher: RedisClient, servers: RedisServers, timeoutMs: number): Promise<RedisChannels> {
    // In a cluster a message published on any node reaches subscribers on every node.
    const subscriber = new RedisConnection({ servers, timeoutMs, subscriber: true });
    const channels = new RedisChannels(publisher, subscriber);
    await subscriber.ready(Math.max(timeoutMs * 4, 1_000));
    return channels;
  }

  /** Listen on `channel` from now on (one listener per channel). */
  async listen(channel: string, listener: ChannelListener): Promise<void> {
    this.listeners.set(channel, listener);
    if (this.subscriber.up) await this.subscriber.client.subscribe(channel).catch(() => undefined);
  }

  /** Tell the other instances; a failure (Redis away) is the caller's to weigh. */
  async publish(channel: string, payload: Record<string, unknown>): Promise<void> {
    await this.publisher.publish(channel, JSON.stringify({ origin: this.origin, ...payload }));
  }

  private receive(channel: string, text: string): void {
    const listener = this.listeners.get(channel);
    if (listener === undefined) return;
    let origin: unknown;
    try {
      origin = (JSON.parse(text) as { origin?: unknown }).origin;
    } catch {
      // Unreadable: the listener decides (everything is read again).
    }
    if (origin !== this.origin) listener.message(text);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.subscriber.close();
  }
}
