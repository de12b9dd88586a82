// The shared key store in Redis: one JSON record per key, an index from each
// accepted value's hash to its key (retired values expire with their grace), and a
// pub/sub channel on which every change is announced so every instance drops the
// affected cache entries at once (the cache TTL is the backstop for lost messages).
// Layout under the prefix: k:<id> record, h:<hash> id, p:<prefix> id, ids (set),
// ka:<account> (set of the account's key ids; built once from the records when
// absent, marked by ka-index), lastused (hash id → ms), and the channel `changes`.

import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  newKeyRecord,
  rotatedKeyRecord,
  KeyNotFoundError,
  type KeyMatch,
  type KeyRecord,
  type KeyStore,
  type NewKey,
  type StoreChange,
} from './key-store.js';
import { RedisConnection } from '../store/redis-connection.js';
import { script, type ScriptCall } from '../store/redis-scripts.js';

const TOUCH_FLUSH_MS = 10_000;

/** One round trip: the id a hash points to, and that key's record. */
const FIND = `
local id = redis.call('GET', KEYS[1])
if not id then return nil end
return {id, redis.call('GET', ARGV[1] .. 'k:' .. id)}
`;

export class RedisKeyStore implements KeyStore {
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  private readonly touched = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  /** The per-account sets are known to exist (see ensureAccountIndex). */
  private indexed = false;
  /** Tags this instance's announcements: it applied them already and ignores their echo. */
  private readonly origin = randomUUID();
  private readonly find: ScriptCall;

  private constructor(
    private readonly redis: Redis,
    private readonly subscriber: RedisConnection | undefined,
    private readonly prefix: string,
  ) {
    this.find = script(redis, 'noderouterFindKey', 1, FIND);
  }

  /**
   * `live` subscribes to change announcements (the gateway); the CLI only writes.
   * `redis` is a connected client owned by the caller.
   */
  static async open(redis: Redis, options: { prefix: string; live?: { url: string; timeoutMs: number } }): Promise<RedisKeyStore> {
    let subscriber: RedisConnection | undefined;
    if (options.live !== undefined) {
      subscriber = new RedisConnection({ url: options.live.url, timeoutMs: options.live.timeoutMs });
      // The command timeout must not cut the long-lived subscription.
      subscriber.client.options.commandTimeout = undefined;
    }
    const store = new RedisKeyStore(redis, subscriber, options.prefix);
    if (subscriber !== undefined) {
      const channel = `${options.prefix}changes`;
      subscriber.client.on('message', (ch: string, message: string) => {
        const change = ch === channel ? store.decode(message) : undefined;
        if (change !== undefined) store.emit(change);
      });
      // Messages sent while disconnected are lost: after a reconnect, forget everything.
      let connectedBefore = false;
      subscriber.client.on('ready', () => {
        void subscriber.client.subscribe(channel).catch(() => undefined);
        if (connectedBefore) store.emit({ all: true });
        connectedBefore = true;
      });
      await subscriber.ready(options.live?.timeoutMs ?? 1_000);
      store.timer = setInterval(() => void store.flushTouches(), TOUCH_FLUSH_MS).unref();
    }
    return store;
  }

  private decode(message: string): StoreChange | undefined {
    try {
      const v = JSON.parse(message) as { hashes?: unknown; origin?: unknown };
      if (v.origin === this.origin) return undefined;
      if (Array.isArray(v.hashes) && v.hashes.every((h) => typeof h === 'string')) return { hashes: v.hashes as string[] };
    } catch {
      // fall through: an unreadable announcement drops everything, which is always safe.
    }
    return { all: true };
  }

  private emit(change: StoreChange): void {
    for (const l of this.listeners) l(change);
  }

  private async announce(hashes: readonly string[]): Promise<void> {
    this.emit({ hashes });
    await this.redis.publish(`${this.prefix}changes`, JSON.stringify({ origin: this.origin, hashes }));
  }

  private key(kind: string, id: string): string {
    return `${this.prefix}${kind}:${id}`;
  }

  async findByHash(hash: string): Promise<KeyMatch | undefined> {
    const found = (await this.find(this.key('h', hash), this.prefix)) as [string, string | null] | null;
    if (found === null || found[1] === null) return undefined;
    const record = JSON.parse(found[1]) as KeyRecord;
    const expiry = record.expiresAt === undefined ? Infinity : Date.parse(record.expiresAt);
    if (record.hash === hash) return { record, validUntil: expiry };
    const retired = (record.retired ?? []).find((r) => r.hash === hash);
    return { record, validUntil: Math.min(expiry, retired === undefined ? 0 : Date.parse(retired.until)) };
  }

  private async save(record: KeyRecord, extra: (m: ReturnType<Redis['multi']>) => void): Promise<void> {
    const m = this.redis
      .multi()
      .set(this.key('k', record.id), JSON.stringify(record))
      .sadd(`${this.prefix}ids`, record.id)
      .sadd(this.accountSet(record.account), record.id);
    extra(m);
    await m.exec();
  }

  private accountSet(account: string): string {
    return `${this.prefix}ka:${account}`;
  }

  /**
   * The per-account sets, built once from every record when the store predates them
   * (the dashboard lists one account's keys on every page: no scan of all keys then).
   */
  private async ensureAccountIndex(): Promise<void> {
    if (this.indexed) return;
    const marker = `${this.prefix}ka-index`;
    if ((await this.redis.exists(marker)) === 0) {
      const all = await this.list();
      const m = this.redis.multi();
      for (const r of all) m.sadd(this.accountSet(r.account), r.id);
      await m.set(marker, '1').exec();
    }
    this.indexed = true;
  }

  async create(input: NewKey): Promise<{ record: KeyRecord; value: string }> {
    const { record, value } = newKeyRecord(input);
    await this.save(record, (m) => m.set(this.key('h', record.hash), record.id).set(this.key('p', record.prefix), record.id));
    await this.announce([record.hash]);
    return { record, value };
  }

  /** Import a record as it is (hashes only: `keys import` never sees a value). */
  async put(record: KeyRecord): Promise<void> {
    const now = Date.now();
    const before = await this.redis.get(this.key('k', record.id));
    const previous = before === null ? undefined : (JSON.parse(before) as KeyRecord).account;
    await this.save(record, (m) => {
      if (previous !== undefined && previous !== record.account) m.srem(this.accountSet(previous), record.id);
      m.set(this.key('h', record.hash), record.id).set(this.key('p', record.prefix), record.id);
      for (const r of record.retired) {
        const until = Date.parse(r.until);
        if (until > now) m.set(this.key('h', r.hash), record.id, 'PXAT', until);
      }
    });
    await this.announce([record.hash, ...record.retired.map((r) => r.hash)]);
  }

  private async load(ref: string): Promise<KeyRecord | undefined> {
    const id = ref.startsWith('key_') ? ref : await this.redis.get(this.key('p', ref));
    if (id === null) return undefined;
    const [text, last] = await Promise.all([this.redis.get(this.key('k', id)), this.redis.hget(`${this.prefix}lastused`, id)]);
    if (text === null) return undefined;
    const record = JSON.parse(text) as KeyRecord;
    return last === null ? record : { ...record, lastUsedAt: new Date(Number(last)).toISOString() };
  }

  get(ref: string): Promise<KeyRecord | undefined> {
    return this.load(ref);
  }

  async list(filter: { account?: string } = {}): Promise<KeyRecord[]> {
    let ids: string[];
    if (filter.account === undefined) ids = await this.redis.smembers(`${this.prefix}ids`);
    else {
      await this.ensureAccountIndex();
      ids = await this.redis.smembers(this.accountSet(filter.account));
    }
    if (ids.length === 0) return [];
    const [texts, lasts] = await Promise.all([
      this.redis.mget(ids.map((id) => this.key('k', id))),
      this.redis.hmget(`${this.prefix}lastused`, ...ids),
    ]);
    const out: KeyRecord[] = [];
    texts.forEach((t, i) => {
      if (t === null) return;
      const r = JSON.parse(t) as KeyRecord;
      const last = lasts[i];
      // The set may still name a key since given to another account (put): the record decides.
      if (filter.account === undefined || r.account === filter.account) {
        out.push(last === null || last === undefined ? r : { ...r, lastUsedAt: new Date(Number(last)).toISOString() });
      }
    });
    return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  private async mustLoad(ref: string): Promise<KeyRecord> {
    const r = await this.load(ref);
    if (r === undefined) throw new KeyNotFoundError(ref);
    return r;
  }

  async revoke(ref: string): Promise<KeyRecord> {
    const old = await this.mustLoad(ref);
    const updated: KeyRecord = { ...old, revokedAt: old.revokedAt ?? new Date().toISOString() };
    await this.save(updated, () => undefined);
    await this.announce([old.hash, ...old.retired.map((r) => r.hash)]);
    return updated;
  }

  async rotate(ref: string, graceSeconds: number): Promise<{ record: KeyRecord; value: string }> {
    const old = await this.mustLoad(ref);
    const now = Date.now();
    const { record, value, until } = rotatedKeyRecord(old, graceSeconds, now);
    await this.save(record, (m) => {
      m.set(this.key('h', record.hash), record.id).set(this.key('p', record.prefix), record.id);
      // The old value's index entry expires with its grace: nothing to sweep later.
      if (until > now) m.set(this.key('h', old.hash), record.id, 'PXAT', until);
      else m.del(this.key('h', old.hash));
    });
    await this.announce([old.hash, record.hash]);
    return { record, value };
  }

  touch(id: string, at: number): void {
    this.touched.set(id, at);
  }

  private async flushTouches(): Promise<void> {
    if (this.touched.size === 0) return;
    const pending = [...this.touched].flatMap(([id, at]) => [id, String(at)]);
    this.touched.clear();
    await this.redis.hset(`${this.prefix}lastused`, ...pending).catch(() => undefined);
  }

  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.flushTouches();
    await this.subscriber?.close();
  }
}
