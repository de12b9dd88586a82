// The `store` section read into StoreConfig: the record (a database) and the hot state
// (memory or Redis), configured apart. The single store of earlier versions
// (`store.kind: file | redis`) is refused with the way to move its data, and every
// combination that cannot work is refused with its fix. What the settings are is
// shape.ts's; opening them is src/app/'s.

import { isAbsolute, resolve } from 'node:path';
import { redactUrl } from './redact.js';
import { isTree, type ConfigProblems } from './reader.js';
import { POSTGRES_RECORD_SETTINGS, REDIS_HOT_SETTINGS, type ConfigFile } from './shape.js';
import type { HotConfig, RecordConfig, RedisAddress, RedisServers, StoreConfig } from './types.js';

/** The settings of the one store of earlier versions, directly under `store`. */
const OLD_SETTINGS = ['kind', 'path', 'url', 'prefix', 'timeoutMs', 'onFailure', 'instances', 'leaseMs', 'leaseTokens'];

const NEW_RECORD = 'record: { kind: sqlite, path: ../data/noderouter.db }';

/** What the file itself wrote under `store.hot` (before defaults are filled in). */
export interface WrittenStore {
  readonly record: readonly string[];
  readonly hot: readonly string[];
}

/** A URL as a message may print it: without credentials (else a placeholder). */
function printable(url: unknown): string {
  if (typeof url !== 'string') return '<its url>';
  try {
    const u = new URL(url);
    return u.username === '' && u.password === '' ? url : '<its url, with its password>';
  } catch {
    return '<its url>';
  }
}

/**
 * Before the shape is checked: the old settings are taken out of `store` (so they are
 * reported once, with the fix, instead of as unknown settings), and what `store.hot`
 * names is noted.
 */
export function takeOldStore(tree: unknown, base: string, problems: ConfigProblems): WrittenStore {
  const store = isTree(tree) ? tree.store : undefined;
  if (!isTree(store)) return { record: [], hot: [] };
  const old = OLD_SETTINGS.filter((k) => k in store);
  if (old.length > 0) {
    const kind = store.kind;
    if (kind === 'redis') {
      const prefix = typeof store.prefix === 'string' ? store.prefix : 'noderouter:';
      const url = printable(store.url);
      problems.add(
        'store.kind',
        `is "redis", the single store of earlier versions: keys, accounts and usage now live in the record, and Redis keeps only hot state. ` +
          `Write store: { ${NEW_RECORD}, hot: { kind: redis, url: ${url}, prefix: "${prefix}" } } (its other Redis settings move under hot unchanged), ` +
          `then run \`noderouter store migrate --from ${url} --prefix ${prefix}\` before starting, to copy what the Redis store holds into the record`,
      );
    } else {
      const raw = typeof store.path === 'string' ? store.path : 'data/keys.json';
      const path = isAbsolute(raw) ? raw : resolve(base, raw);
      problems.add(
        'store.kind',
        `is "${typeof kind === 'string' ? kind : 'file'}", the JSON file store of earlier versions, which is now read only to move its data. ` +
          `Write store: { ${NEW_RECORD}, hot: { kind: memory } }, ` +
          `then run \`noderouter store migrate --from ${path}\` before starting, to adopt its keys, accounts, usage and holds (every key keeps working)`,
      );
    }
    for (const k of old) delete store[k];
  }
  return { record: isTree(store.record) ? Object.keys(store.record) : [], hot: isTree(store.hot) ? Object.keys(store.hot) : [] };
}

/** `host:port` (checked by the shape) as an address; a bracketed IPv6 host loses its brackets. */
function address(text: string): RedisAddress {
  const cut = text.lastIndexOf(':');
  return { host: text.slice(0, cut).replace(/^\[(.*)\]$/, '$1'), port: Number(text.slice(cut + 1)) };
}

const WAYS = 'url: redis://host:6379, or sentinels: [host:26379, …] with name: <master>, or cluster: [host:6379, …]';

/** Exactly one of url, sentinels and cluster names the Redis of the hot state; what goes with one is refused beside another. */
function readServers(problems: ConfigProblems, h: ConfigFile['store']['hot']): RedisServers {
  const given = (['url', 'sentinels', 'cluster'] as const).filter((k) => h[k] !== undefined);
  if (given.length === 0) {
    problems.add('store.hot.url', `is required with kind: redis, or one of the other ways to find Redis: ${WAYS}`);
    return { kind: 'url', url: '' };
  }
  if (given.length > 1) {
    problems.add(`store.hot.${given[1]}`, `is given beside ${given[0]}, but Redis is found one way: keep one of ${given.join(', ')}`);
  }
  const way = given[0];
  if (way !== 'sentinels' && h.name !== undefined) {
    problems.add(
      'store.hot.name',
      `names a Sentinel master, which ${way} does not read: add sentinels: [host:26379, …], or leave name out`,
    );
  }
  if (way !== 'sentinels' && h.sentinelPassword !== undefined) {
    problems.add('store.hot.sentinelPassword', `is the sentinels' password, which ${way} does not read: add sentinels, or leave it out`);
  }
  if (way === 'url') {
    if (h.password !== undefined) {
      problems.add('store.hot.password', 'is not read with url: write it in the URL, redis://:${REDIS_PASSWORD}@host:6379');
    }
    return { kind: 'url', url: h.url ?? '' };
  }
  if (way === 'cluster') {
    // Redis hashes a key's first {…}: braces in the prefix would put every account's keys in one slot.
    if (h.prefix !== undefined && (h.prefix.includes('{') || h.prefix.includes('}'))) {
      problems.add('store.hot.prefix', 'holds { or }, which on a cluster would put every key in one slot: leave the braces out');
    }
    return { kind: 'cluster', nodes: (h.cluster ?? []).map(address), password: h.password };
  }
  if (h.name === undefined || h.name === '') {
    problems.add(
      'store.hot.name',
      "is required with sentinels: the master's name as the sentinels know it (sentinel monitor <name> …), e.g. name: mymaster",
    );
  }
  return {
    kind: 'sentinel',
    sentinels: (h.sentinels ?? []).map(address),
    name: h.name ?? '',
    password: h.password,
    sentinelPassword: h.sentinelPassword,
  };
}

function readHot(problems: ConfigProblems, h: ConfigFile['store']['hot'], written: WrittenStore): HotConfig {
  if (h.kind === 'redis') {
    return {
      kind: 'redis',
      servers: readServers(problems, h),
      prefix: h.prefix,
      timeoutMs: h.timeoutMs,
      onFailure: h.onFailure,
      instances: h.instances,
      leaseMs: h.leaseMs,
      leaseTokens: h.leaseTokens,
    };
  }
  for (const k of REDIS_HOT_SETTINGS.filter((s) => written.hot.includes(s))) {
    if (k === 'instances' && h.instances > 1) {
      problems.add(
        'store.hot.instances',
        `is ${h.instances}, but the memory hot state belongs to one instance: instances that share limits need hot: { kind: redis, url: … } (or leave instances out)`,
      );
    } else if (k !== 'instances') {
      problems.add(
        `store.hot.${k}`,
        'is a setting of the Redis hot state, which kind: memory does not read: set kind: redis, or leave it out',
      );
    }
  }
  return { kind: 'memory' };
}

function readRecord(problems: ConfigProblems, r: ConfigFile['store']['record'], base: string, written: WrittenStore): RecordConfig {
  if (r.kind === 'postgres') {
    // A path left beside kind: postgres is not refused: the shipped config names one, and
    // switching kind is the one edit a move to PostgreSQL needs besides the url.
    const url = r.url ?? '';
    // The pattern let it through; a URL that does not parse is named without its text (it may hold a password).
    if (url !== '' && !URL.canParse(url)) {
      problems.add(
        'store.record.url',
        'is not a URL that parses: write postgres://user:${PGPASSWORD}@host:5432/database (percent-encode any @ : / in the password)',
      );
    }
    return { kind: 'postgres', url, schema: r.schema, poolSize: r.poolSize };
  }
  for (const k of POSTGRES_RECORD_SETTINGS.filter((s) => written.record.includes(s))) {
    problems.add(
      `store.record.${k}`,
      'is a setting of the PostgreSQL record, which kind: sqlite does not read: set kind: postgres, or leave it out',
    );
  }
  return { kind: 'sqlite', path: isAbsolute(r.path) ? r.path : resolve(base, r.path) };
}

/** The store as the gateway reads it; `base` anchors a relative record path (the config file's folder). */
export function readStore(problems: ConfigProblems, s: ConfigFile['store'], base: string, written: WrittenStore): StoreConfig {
  return { record: readRecord(problems, s.record, base, written), hot: readHot(problems, s.hot, written) };
}

/** A chain's Redis response cache shares the hot state's connection. */
export function checkRedisCache(
  problems: ConfigProblems,
  store: StoreConfig | undefined,
  chains: readonly { name: string; cache: string }[],
): void {
  if (store === undefined || store.hot.kind === 'redis') return;
  for (const c of chains) {
    if (c.cache === 'redis') {
      problems.add(
        `chains.${c.name}.cache`,
        'is "redis", which needs store.hot.kind: redis (the cache shares its connection): set store.hot to { kind: redis, url: … }, or use cache: memory',
      );
    }
  }
}

/** Where the hot state's Redis is, as messages and `check-config` print it (never a password). */
export function redisServersName(servers: RedisServers): string {
  const list = (a: readonly RedisAddress[]): string =>
    a.map((x) => (x.host.includes(':') ? `[${x.host}]` : x.host) + `:${x.port}`).join(', ');
  if (servers.kind === 'sentinel') return `sentinel master "${servers.name}" via ${list(servers.sentinels)}`;
  if (servers.kind === 'cluster') return `cluster of ${list(servers.nodes)}`;
  return redactUrl(servers.url);
}

/** What a store failure does: the Redis hot state's policy; the record and memory have none to choose. */
export function storeFailurePolicy(store: StoreConfig): 'fail-open' | 'fail-closed' {
  return store.hot.kind === 'redis' ? store.hot.onFailure : 'fail-open';
}

/**
 * The record as messages and `check-config` name it: the SQLite file, or the
 * PostgreSQL server, database and schema (never the user or password of its URL).
 */
export function recordName(record: RecordConfig): string {
  if (record.kind === 'sqlite') return `sqlite ${record.path}`;
  let where = '<its url>';
  try {
    const u = new URL(record.url);
    where = `${u.host}${u.pathname}`;
  } catch {
    // Unparsable URLs are refused at load; a name is still owed to whoever asks.
  }
  return `postgres ${where}, schema ${record.schema}`;
}
