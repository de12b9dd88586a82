// The key store backend of the Redis store of earlier versions, which the config no
// longer names: read to adopt it into the record (`store migrate --from redis://…`).
// One JSON record per key, an index from
// each accepted value's hash to its key (retired values expire with their grace), and
// a pub/sub channel on which every change is announced so every instance drops the
// affected cache entries at once (the cache TTL is the backstop for lost messages).
// A record and its index entries are written by one compare-and-set script, so two
// instances changing one key never lose a change. Layout under the prefix: k:<id>
// record, h:<hash> id, px:<prefix> (set of the ids with that prefix), ids (set),
// ka:<account> (set of the account's key ids), lastused (hash id → ms), and the
// channel `changes`. The per-account and per-prefix sets are built once from the
// records when absent (marked by ka-index and px-index).

import { randomUUID } from 'node:crypto';
import { KeyRepository, type KeyBackend } from './key-repository.js';
import type { KeyRecord, StoreChange } from './key-store.js';
import { RedisCas, type IndexOp } from '../store/redis-cas.js';
import { RedisConnection, type RedisClient } from '../store/redis-connection.js';
import { script, type ScriptCall } from '../store/redis-scripts.js';

/** One round trip: the id a hash points to, and that key's record. */
const FIND = `
local id = redis.call('GET', KEYS[1])
if not id then return nil end
return {id, redis.call('GET', ARGV[1] .. 'k:' .. id)}
`;

const INDEX_MARKERS = ['ka-index', 'px-index'] as const;

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((h) => typeof h === 'string');

export interface RedisKeyStoreOptions {
  readonly prefix: string;
  /** Subscribe to change announcements (the gateway); the CLI only writes. */
  readonly live?: { readonly url: string; readonly timeoutMs: number };
  readonly now?: () => number;
}

/** The Redis key store; `redis` is a connected client owned by the caller. */
export async function openRedisKeyStore(redis: RedisClient, options: RedisKeyStoreOptions): Promise<KeyRepository> {
  const backend = await RedisKeyBackend.open(redis, options);
  return new KeyRepository(backend, { live: options.live !== undefined, now: options.now });
}

export class RedisKeyBackend implements KeyBackend {
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  /** The sets by account and by prefix are known to exist (see ensureIndexes). */
  private indexed = false;
  /** Tags this instance's announcements: it applied them already and ignores their echo. */
  private readonly origin = randomUUID();
  private readonly find: ScriptCall;
  private readonly cas: RedisCas;
  /** The exact text each record was read from: what a commit expects to find still there. */
  private readonly texts = new WeakMap<KeyRecord, string>();

  private constructor(
    private readonly redis: RedisClient,
    private readonly subscriber: RedisConnection | undefined,
    private readonly prefix: string,
  ) {
    this.find = script(redis, 'noderouterFindKey', 1, FIND);
    this.cas = new RedisCas(redis);
  }

  static async open(redis: RedisClient, options: RedisKeyStoreOptions): Promise<RedisKeyBackend> {
    let subscriber: RedisConnection | undefined;
    if (options.live !== undefined) {
      subscriber = new RedisConnection({
        servers: { kind: 'url', url: options.live.url },
        timeoutMs: options.live.timeoutMs,
        subscriber: true,
      });
      // The command timeout must not cut the long-lived subscription.
    }
    const backend = new RedisKeyBackend(redis, subscriber, options.prefix);
    if (subscriber !== undefined) {
      const channel = `${options.prefix}changes`;
      subscriber.client.on('message', (ch: string, message: string) => {
        const change = ch === channel ? backend.decode(message) : undefined;
        if (change !== undefined) backend.emit(change);
      });
      // Messages sent while disconnected are lost: after a reconnect, forget everything.
      let connectedBefore = false;
      subscriber.client.on('ready', () => {
        void subscriber.client.subscribe(channel).catch(() => undefined);
        if (connectedBefore) backend.emit({ all: true });
        connectedBefore = true;
      });
      await subscriber.ready(options.live?.timeoutMs ?? 1_000);
    }
    return backend;
  }

  private decode(message: string): StoreChange | undefined {
    try {
      const v = JSON.parse(message) as { hashes?: unknown; invalid?: unknown; origin?: unknown };
      if (v.origin === this.origin) return undefined;
      if (strings(v.hashes)) return strings(v.invalid) ? { hashes: v.hashes, invalid: v.invalid } : { hashes: v.hashes };
    } catch {
      // fall through: an unreadable announcement drops everything, which is always safe.
    }
    return { all: true };
  }

  private emit(change: StoreChange): void {
    for (const l of this.listeners) l(change);
  }

  async reread(): Promise<void> {
    // Every read goes to Redis.
  }

  async announce(change: StoreChange): Promise<void> {
    await this.redis.publish(`${this.prefix}changes`, JSON.stringify({ origin: this.origin, ...change }));
  }

  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  private key(kind: string, id: string): string {
    return `${this.prefix}${kind}:${id}`;
  }

  private parse(text: string): KeyRecord {
    const record = JSON.parse(text) as KeyRecord;
    this.texts.set(record, text);
    return record;
  }

  async byHash(hash: string): Promise<KeyRecord | undefined> {
    const found = (await this.find(this.key('h', hash), this.prefix)) as [string, string | null] | null;
    return found === null || found[1] === null ? undefined : this.parse(found[1]);
  }

  async byId(id: string): Promise<KeyRecord | undefined> {
    const text = await this.redis.get(this.key('k', id));
    return text === null ? undefined : this.parse(text);
  }

  private async byIds(ids: readonly string[]): Promise<KeyRecord[]> {
    if (ids.length === 0) return [];
    const texts = await this.redis.mget(ids.map((id) => this.key('k', id)));
    return texts.flatMap((t) => (t === null ? [] : [this.parse(t)]));
  }

  async byPrefix(prefix: string): Promise<KeyRecord[]> {
    await this.ensureIndexes();
    return this.byIds(await this.redis.smembers(this.key('px', prefix)));
  }

  /** Keys oldest first (sets have no order: listings must not shuffle between calls). */
  async list(account?: string): Promise<KeyRecord[]> {
    if (account === undefined) return byAge(await this.byIds(await this.redis.smembers(`${this.prefix}ids`)));
    await this.ensureIndexes();
    // The set may still name a key since given to another account: the record decides (the repository filters).
    return byAge(await this.byIds(await this.redis.smembers(this.key('ka', account))));
  }

  /**
   * The per-account and per-prefix sets, built once from every record when the store
   * predates them (the dashboard lists one account's keys on every page; a prefix must
   * find every key that has it, not the last one written).
   */
  private async ensureIndexes(): Promise<void> {
    if (this.indexed) return;
    const markers = INDEX_MARKERS.map((m) => `${this.prefix}${m}`);
    if ((await this.redis.exists(...markers)) < markers.length) {
      const all = await this.list();
      const m = this.redis.multi();
      // p:<prefix> held one id (the last key written with that prefix): the sets replace it.
      for (const r of all) m.sadd(this.key('ka', r.account), r.id).sadd(this.key('px', r.prefix), r.id).del(this.key('p', r.prefix));
      for (const marker of markers) m.set(marker, '1');
      await m.exec();
    }
    this.indexed = true;
  }

  /** The record and every index entry that follows from it, in one conditional write. */
  async commit(prev: KeyRecord | undefined, next: KeyRecord, now: number): Promise<boolean> {
    const id = next.id;
    const ops: IndexOp[] = [
      { op: 'sadd', key: `${this.prefix}ids`, value: id },
      { op: 'sadd', key: this.key('ka', next.account), value: id },
      { op: 'sadd', key: this.key('px', next.prefix), value: id },
      { op: 'set', key: this.key('h', next.hash), value: id },
    ];
    if (prev !== undefined && prev.account !== next.account) ops.push({ op: 'srem', key: this.key('ka', prev.account), value: id });
    if (prev !== undefined && prev.prefix !== next.prefix) ops.push({ op: 'srem', key: this.key('px', prev.prefix), value: id });
    // A retired value's index entry expires with its grace: nothing to sweep later.
    const kept = new Set([next.hash]);
    for (const r of next.retired) {
      const until = Date.parse(r.until);
      if (until <= now || kept.has(r.hash)) continue;
      kept.add(r.hash);
      ops.push({ op: 'set', key: this.key('h', r.hash), value: id, at: until });
    }
    // Hashes that no longer belong to the key (grace over, or dropped past the bound).
    const gone = new Set([
      ...(prev === undefined ? [] : [prev.hash, ...prev.retired.map((r) => r.hash)]),
      ...next.retired.map((r) => r.hash),
    ]);
    for (const h of gone) if (!kept.has(h)) ops.push({ op: 'delif', key: this.key('h', h), value: id });
    const expected = prev === undefined ? undefined : (this.texts.get(prev) ?? JSON.stringify(prev));
    return this.cas.write(this.key('k', id), expected, JSON.stringify(next), ops);
  }

  async lastUsed(ids: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const out = new Map<string, number>();
    if (ids.length === 0) return out;
    const values = await this.redis.hmget(`${this.prefix}lastused`, ...ids);
    ids.forEach((id, i) => {
      const v = values[i];
      if (v !== null && v !== undefined) out.set(id, Number(v));
    });
    return out;
  }

  async saveLastUsed(times: ReadonlyMap<string, number>): Promise<void> {
    await this.redis.hset(`${this.prefix}lastused`, ...[...times].flatMap(([id, at]) => [id, String(at)]));
  }

  async close(): Promise<void> {
    await this.subscriber?.close();
  }
}

function byAge(records: KeyRecord[]): KeyRecord[] {
  return records.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
