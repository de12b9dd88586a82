// Operators' holds on nodes (cordon, drain), by "chain/node": the contract, and where
// the file and Redis stores of earlier versions kept them (read now to adopt them into
// the record, which keeps them: record/sqlite-holds.ts). Beside the key file for the
// file store (one instance), or in a Redis hash shared by every instance, with a pub/sub announcement after each
// change so the others apply it at once (and a full re-read after every reconnect, as
// announcements sent meanwhile are lost). Layout under the prefix: `node-holds` (hash
// id → JSON) and the channel `node-holds`.

import { randomUUID } from 'node:crypto';
import { readJsonFile, writeJsonAtomic } from '../../store/json-file.js';
import { RedisConnection, type RedisClient } from '../../store/redis-connection.js';

export interface NodeHoldRecord {
  readonly state: 'cordoned' | 'draining';
  /** ISO time the node was put in this state. */
  readonly since: string;
  /** What the operator said it is for ('' when nothing). */
  readonly reason: string;
}

export interface HoldStore {
  /** Every hold, by "chain/node". */
  all(): Promise<Map<string, NodeHoldRecord>>;
  /** Set (or with undefined, lift) one hold. */
  set(id: string, hold: NodeHoldRecord | undefined): Promise<void>;
  /** Another instance changed holds (or the view may have missed some): read them again. */
  onChange(listener: () => void): void;
  close(): Promise<void>;
}

function parse(text: string): NodeHoldRecord | undefined {
  try {
    const v = JSON.parse(text) as Partial<NodeHoldRecord>;
    if ((v.state === 'cordoned' || v.state === 'draining') && typeof v.since === 'string') {
      return { state: v.state, since: v.since, reason: typeof v.reason === 'string' ? v.reason : '' };
    }
  } catch {
    // An unreadable entry holds nothing.
  }
  return undefined;
}

/** `<name>.nodes.json` beside the key file. */
export function holdsPathFor(keyFile: string): string {
  return keyFile.replace(/(\.json)?$/, '.nodes.json');
}

export class FileHoldStore implements HoldStore {
  private constructor(
    private readonly path: string,
    private readonly holds: Map<string, NodeHoldRecord>,
  ) {}

  static async open(path: string): Promise<FileHoldStore> {
    const { value } = await readJsonFile<{ holds?: Record<string, unknown> }>(path, () => ({}));
    const holds = new Map<string, NodeHoldRecord>();
    for (const [id, v] of Object.entries(value.holds ?? {})) {
      const h = parse(JSON.stringify(v));
      if (h !== undefined) holds.set(id, h);
    }
    return new FileHoldStore(path, holds);
  }

  all(): Promise<Map<string, NodeHoldRecord>> {
    return Promise.resolve(new Map(this.holds));
  }

  async set(id: string, hold: NodeHoldRecord | undefined): Promise<void> {
    const next = new Map(this.holds);
    if (hold === undefined) next.delete(id);
    else next.set(id, hold);
    await writeJsonAtomic(this.path, { holds: Object.fromEntries(next) }, 2);
    this.holds.clear();
    for (const [k, v] of next) this.holds.set(k, v);
  }

  onChange(): void {
    // One instance: nobody else changes the file.
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

export interface RedisHoldStoreOptions {
  readonly prefix: string;
  /** Listen for other instances' changes (the gateway). */
  readonly live?: { readonly url: string; readonly timeoutMs: number };
}

export class RedisHoldStore implements HoldStore {
  private readonly listeners: Array<() => void> = [];
  private readonly hash: string;
  private readonly channel: string;
  /** Tags this instance's announcements: it applied its own changes already. */
  private readonly origin = randomUUID();

  private constructor(
    private readonly redis: RedisClient,
    private readonly subscriber: RedisConnection | undefined,
    prefix: string,
  ) {
    this.hash = `${prefix}node-holds`;
    this.channel = `${prefix}node-holds`;
  }

  static async open(redis: RedisClient, options: RedisHoldStoreOptions): Promise<RedisHoldStore> {
    let subscriber: RedisConnection | undefined;
    if (options.live !== undefined) {
      subscriber = new RedisConnection({
        servers: { kind: 'url', url: options.live.url },
        timeoutMs: options.live.timeoutMs,
        subscriber: true,
      });
      // The command timeout must not cut the long-lived subscription.
    }
    const store = new RedisHoldStore(redis, subscriber, options.prefix);
    if (subscriber !== undefined) {
      subscriber.client.on('message', (ch: string, message: string) => {
        if (ch === store.channel && message !== store.origin) store.emit();
      });
      // Every (re)connect: subscribe and read everything again (changes made meanwhile were not heard).
      subscriber.client.on('ready', () => {
        void subscriber.client.subscribe(store.channel).catch(() => undefined);
        store.emit();
      });
      await subscriber.ready(options.live?.timeoutMs ?? 1_000);
    }
    return store;
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }

  async all(): Promise<Map<string, NodeHoldRecord>> {
    const raw = await this.redis.hgetall(this.hash);
    const out = new Map<string, NodeHoldRecord>();
    for (const [id, text] of Object.entries(raw)) {
      const h = parse(text);
      if (h !== undefined) out.set(id, h);
    }
    return out;
  }

  async set(id: string, hold: NodeHoldRecord | undefined): Promise<void> {
    if (hold === undefined) await this.redis.hdel(this.hash, id);
    else await this.redis.hset(this.hash, id, JSON.stringify(hold));
    await this.redis.publish(this.channel, this.origin);
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    await this.subscriber?.close();
  }
}
