// The key store, written once over a small backend (a JSON file, or Redis): lookup
// validity, creation, rotation, revocation and import as read-change-commit cycles
// that retry when another writer got there first (the backend's commit is atomic and
// conditional), last-use times batched and merged into what callers read, prefix
// lookups that refuse to guess between keys, and change announcements.

import {
  changeBetween,
  matchOf,
  newKeyRecord,
  restrictedKeyRecord,
  revokedKeyRecord,
  rotatedKeyRecord,
  KeyAmbiguousError,
  KeyNotFoundError,
  type KeyMatch,
  type KeyRecord,
  type KeyStore,
  type NewKey,
  type StoreChange,
} from './key-store.js';
import type { KeyRestrictions } from './restrictions.js';

/** Where records live. Only `commit` writes, and only over the record it was given. */
export interface KeyBackend {
  /** The record a hash (its value's or a retired value's) points to. */
  byHash(hash: string): Promise<KeyRecord | undefined>;
  byId(id: string): Promise<KeyRecord | undefined>;
  /** Records whose current prefix is `prefix` (the caller checks again). */
  byPrefix(prefix: string): Promise<KeyRecord[]>;
  list(account?: string): Promise<KeyRecord[]>;
  /**
   * Atomically replace `prev` (undefined: no record with next's id) by `next`, with
   * the indexes. False, writing nothing, when the stored record is no longer `prev`.
   */
  commit(prev: KeyRecord | undefined, next: KeyRecord, now: number): Promise<boolean>;
  /** Last-use times (epoch ms) of these keys, as far as the backend knows. */
  lastUsed(ids: readonly string[]): Promise<ReadonlyMap<string, number>>;
  saveLastUsed(times: ReadonlyMap<string, number>): Promise<void>;
  /** Tell other processes (a file's readers watch the file instead). */
  announce(change: StoreChange): Promise<void>;
  /** Changes other processes made. */
  onChange(listener: (change: StoreChange) => void): void;
  /** Read again now what may have changed (a file's index); a backend that always reads through has nothing to do. */
  reread(): Promise<void>;
  close(): Promise<void>;
}

export interface KeyRepositoryOptions {
  /** The gateway flushes last-use times on an interval; the CLI never touches. */
  readonly live?: boolean;
  readonly now?: () => number;
}

const TOUCH_FLUSH_MS = 10_000;

function existing(record: KeyRecord | undefined, id: string): KeyRecord {
  if (record === undefined) throw new KeyNotFoundError(id);
  return record;
}
/** Conflicts need another writer on the same key at the same moment: a few retries always do. */
const COMMIT_ATTEMPTS = 50;

export class KeyRepository implements KeyStore {
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  private readonly announcers: Array<(c: StoreChange) => Promise<void>> = [];
  /** Last uses not yet given to the backend. */
  private touched = new Map<string, number>();
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(
    private readonly backend: KeyBackend,
    options: KeyRepositoryOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    backend.onChange((c) => this.emit(c));
    if (options.live === true) this.timer = setInterval(() => void this.flushTouches(), TOUCH_FLUSH_MS).unref();
  }

  async findByHash(hash: string): Promise<KeyMatch | undefined> {
    const record = await this.backend.byHash(hash);
    return record === undefined ? undefined : matchOf(record, hash);
  }

  async create(input: NewKey): Promise<{ record: KeyRecord; value: string }> {
    for (let i = 0; i < COMMIT_ATTEMPTS; i++) {
      const now = this.now();
      // A fresh value and id each attempt: an id already taken is simply never used.
      const created = newKeyRecord(input, now);
      if (await this.backend.commit(undefined, created.record, now)) {
        await this.announce(undefined, created.record, now);
        return created;
      }
    }
    throw new Error('could not store a new key');
  }

  async put(record: KeyRecord): Promise<void> {
    await this.change(record.id, () => record);
  }

  async get(ref: string): Promise<KeyRecord | undefined> {
    const record = await this.resolve(ref);
    return record === undefined ? undefined : (await this.withLastUse([record]))[0];
  }

  async list(filter: { account?: string } = {}): Promise<KeyRecord[]> {
    const all = await this.backend.list(filter.account);
    const mine = filter.account === undefined ? all : all.filter((r) => r.account === filter.account);
    return this.withLastUse(mine.sort((a, b) => a.createdAt.localeCompare(b.createdAt)));
  }

  async revoke(ref: string): Promise<KeyRecord> {
    const record = await this.mustResolve(ref);
    return this.view(await this.change(record.id, (old, now) => revokedKeyRecord(existing(old, record.id), now)));
  }

  async restrict(ref: string, change: (current: KeyRestrictions | undefined) => KeyRestrictions | undefined): Promise<KeyRecord> {
    const record = await this.mustResolve(ref);
    return this.view(
      await this.change(record.id, (old) => {
        const current = existing(old, record.id);
        const next = change(current.restrictions);
        // Nothing to write when the lists are the same.
        return JSON.stringify(next) === JSON.stringify(current.restrictions) ? current : restrictedKeyRecord(current, next);
      }),
    );
  }

  async rotate(ref: string, graceSeconds: number): Promise<{ record: KeyRecord; value: string }> {
    const record = await this.mustResolve(ref);
    let value = '';
    const rotated = await this.change(record.id, (old, now) => {
      const r = rotatedKeyRecord(existing(old, record.id), graceSeconds, now);
      value = r.value;
      return r.record;
    });
    return { record: await this.view(rotated), value };
  }

  touch(id: string, at: number): void {
    if (at > (this.touched.get(id) ?? 0)) this.touched.set(id, at);
  }

  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  announceTo(announce: (change: StoreChange) => Promise<void>): void {
    this.announcers.push(announce);
  }

  async sync(change: StoreChange): Promise<void> {
    await this.backend.reread();
    this.emit(change);
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.flushTouches();
    await this.backend.close();
  }

  /** By id, else by prefix: one key, or KeyAmbiguousError when the prefix is shared. */
  private async resolve(ref: string): Promise<KeyRecord | undefined> {
    const byId = ref.startsWith('key_') ? await this.backend.byId(ref) : undefined;
    if (byId !== undefined) return byId;
    const found = (await this.backend.byPrefix(ref)).filter((r) => r.prefix === ref);
    if (found.length > 1) throw new KeyAmbiguousError(ref);
    return found[0];
  }

  private async mustResolve(ref: string): Promise<KeyRecord> {
    const r = await this.resolve(ref);
    if (r === undefined) throw new KeyNotFoundError(ref);
    return r;
  }

  /**
   * Read, change, commit; again from a fresh read when another writer changed the
   * record in between, so both changes land. `change` returning the record it was
   * given means nothing to do.
   */
  private async change(id: string, change: (old: KeyRecord | undefined, now: number) => KeyRecord): Promise<KeyRecord> {
    for (let i = 0; i < COMMIT_ATTEMPTS; i++) {
      const old = await this.backend.byId(id);
      const now = this.now();
      const next = change(old, now);
      if (next === old) return next;
      if (await this.backend.commit(old, next, now)) {
        await this.announce(old, next, now);
        return next;
      }
    }
    throw new Error(`key ${id} kept changing under ${COMMIT_ATTEMPTS} attempts to update it`);
  }

  /** Every hash either record names, and those of them that no longer work. */
  private async announce(before: KeyRecord | undefined, after: KeyRecord, now: number): Promise<void> {
    const change = changeBetween(before, after, now);
    this.emit(change);
    // Written is written: a lost announcement is covered by the caches' TTL.
    await this.backend.announce(change).catch(() => undefined);
    await Promise.all(this.announcers.map((a) => a(change).catch(() => undefined)));
  }

  private emit(change: StoreChange): void {
    for (const l of this.listeners) l(change);
  }

  private async view(record: KeyRecord): Promise<KeyRecord> {
    return (await this.withLastUse([record]))[0] as KeyRecord;
  }

  /** Records as callers see them: with the latest known last use merged in. */
  private async withLastUse(records: KeyRecord[]): Promise<KeyRecord[]> {
    if (records.length === 0) return records;
    const stored = await this.backend.lastUsed(records.map((r) => r.id));
    return records.map((r) => {
      const at = Math.max(stored.get(r.id) ?? 0, this.touched.get(r.id) ?? 0);
      return at === 0 ? r : { ...r, lastUsedAt: new Date(at).toISOString() };
    });
  }

  /** Hand batched last uses to the backend; kept for the next try when it fails. */
  private async flushTouches(): Promise<void> {
    if (this.touched.size === 0) return;
    const pending = this.touched;
    this.touched = new Map();
    try {
      await this.backend.saveLastUsed(pending);
    } catch {
      for (const [id, at] of pending) this.touch(id, at);
    }
  }
}
