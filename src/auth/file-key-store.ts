// The embedded key store: one JSON file of key records (hashes, never values),
// indexed in memory by hash. The CLI and the gateway share the file: writes take a
// lock and replace the file atomically; the gateway notices outside writes through a
// directory watch, a one-second stat poll, and a stat on every unknown hash, so a key
// created by the CLI works on its very first request. Last-use times change on every
// request: they live in a small file of their own beside it, so the key file is only
// rewritten when a key really changes.

import { watch, type FSWatcher } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { readJsonFile, writeJsonAtomic } from '../store/json-file.js';
import { withFileLock } from './file-lock.js';
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

interface FileShape {
  version: 1;
  keys: KeyRecord[];
}

/** Where last-use times are kept: `keys.json` → `keys.lastused.json`. */
export function lastUsedPathFor(keyFile: string): string {
  return keyFile.replace(/(\.json)?$/, '.lastused.json');
}

const POLL_MS = 1_000;
const TOUCH_FLUSH_MS = 10_000;

export class FileKeyStore implements KeyStore {
  private byHash = new Map<string, KeyRecord>();
  private byId = new Map<string, KeyRecord>();
  private mtimeMs = -1;
  private refreshing: Promise<void> | undefined;
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  /** Last use per key id (epoch ms), from the side file and this process's requests. */
  private readonly lastUsed = new Map<string, number>();
  private touchedSinceFlush = false;
  private readonly lastUsedPath: string;
  private watcher: FSWatcher | undefined;
  private timers: NodeJS.Timeout[] = [];

  private constructor(readonly path: string) {
    this.lastUsedPath = lastUsedPathFor(path);
  }

  /** Opens (creating when absent) the store. `live` watches for outside writes. */
  static async open(path: string, options: { live?: boolean } = {}): Promise<FileKeyStore> {
    const store = new FileKeyStore(path);
    await mkdir(dirname(path), { recursive: true });
    await store.refresh(true);
    await store.readLastUsed();
    if (options.live === true) store.startWatching();
    return store;
  }

  private startWatching(): void {
    const name = basename(this.path);
    try {
      this.watcher = watch(dirname(this.path), (_event, file) => {
        if (file === null || file === name) void this.refreshIfChanged();
      });
      this.watcher.on('error', () => undefined);
    } catch {
      // Some filesystems cannot be watched; the poll below still notices changes.
    }
    this.timers.push(setInterval(() => void this.refreshIfChanged(), POLL_MS).unref());
    this.timers.push(setInterval(() => void this.flushTouches(), TOUCH_FLUSH_MS).unref());
  }

  private async readFileShape(): Promise<{ shape: FileShape; mtimeMs: number }> {
    const { value: shape, mtimeMs } = await readJsonFile<FileShape>(this.path, () => ({ version: 1, keys: [] }));
    if (shape.version !== 1 || !Array.isArray(shape.keys)) throw new Error(`${this.path} is not a noderouter key file`);
    return { shape, mtimeMs };
  }

  private async readLastUsed(): Promise<void> {
    let data: { lastUsed?: Record<string, number> };
    try {
      data = (await readJsonFile<{ lastUsed?: Record<string, number> }>(this.lastUsedPath, () => ({}))).value;
    } catch {
      // Unreadable: last-use times are informative, never worth refusing to start.
      return;
    }
    for (const [id, at] of Object.entries(data.lastUsed ?? {})) {
      if (typeof at === 'number' && at > (this.lastUsed.get(id) ?? 0)) this.lastUsed.set(id, at);
    }
  }

  /** A record as callers see it: with its last use merged in. */
  private view(r: KeyRecord): KeyRecord {
    const at = this.lastUsed.get(r.id);
    return at === undefined ? r : { ...r, lastUsedAt: new Date(at).toISOString() };
  }

  private index(keys: readonly KeyRecord[]): void {
    const byHash = new Map<string, KeyRecord>();
    const byId = new Map<string, KeyRecord>();
    for (const r of keys) {
      byId.set(r.id, r);
      byHash.set(r.hash, r);
      for (const old of r.retired) byHash.set(old.hash, r);
    }
    this.byHash = byHash;
    this.byId = byId;
  }

  private async refresh(force: boolean): Promise<void> {
    const info = await stat(this.path).catch(() => undefined);
    const mtime = info?.mtimeMs ?? 0;
    if (!force && mtime === this.mtimeMs) return;
    const { shape, mtimeMs } = await this.readFileShape();
    this.index(shape.keys);
    const first = this.mtimeMs === -1;
    this.mtimeMs = mtimeMs;
    if (!first) this.emit({ all: true });
  }

  /** Re-read the file when it changed; concurrent callers share one read. */
  refreshIfChanged(): Promise<void> {
    this.refreshing ??= this.refresh(false)
      .catch(() => undefined)
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  private emit(change: StoreChange): void {
    for (const l of this.listeners) l(change);
  }

  private match(hash: string): KeyMatch | undefined {
    const record = this.byHash.get(hash);
    if (record === undefined) return undefined;
    const expiry = record.expiresAt === undefined ? Infinity : Date.parse(record.expiresAt);
    if (record.hash === hash) return { record, validUntil: expiry };
    const retired = record.retired.find((r) => r.hash === hash);
    return { record, validUntil: Math.min(expiry, retired === undefined ? 0 : Date.parse(retired.until)) };
  }

  async findByHash(hash: string): Promise<KeyMatch | undefined> {
    const found = this.match(hash);
    if (found !== undefined) return found;
    await this.refreshIfChanged();
    return this.match(hash);
  }

  /**
   * Read-modify-write under the lock, from the file's current content. `fn` returns
   * its result and the records it changed; caches drop exactly their hashes.
   */
  private async mutate<T>(fn: (keys: KeyRecord[]) => [T, KeyRecord]): Promise<T> {
    return withFileLock(this.path, async () => {
      const { shape } = await this.readFileShape();
      const [result, changed] = fn(shape.keys);
      await writeJsonAtomic(this.path, shape, 1);
      const before = this.byId.get(changed.id);
      this.index(shape.keys);
      this.mtimeMs = (await stat(this.path)).mtimeMs;
      const hashes = new Set([changed.hash, ...changed.retired.map((r) => r.hash)]);
      if (before !== undefined) for (const h of [before.hash, ...before.retired.map((r) => r.hash)]) hashes.add(h);
      this.emit({ hashes: [...hashes] });
      return result;
    });
  }

  async create(input: NewKey): Promise<{ record: KeyRecord; value: string }> {
    const created = newKeyRecord(input);
    await this.mutate((keys) => {
      keys.push(created.record);
      return [undefined, created.record];
    });
    return created;
  }

  async put(record: KeyRecord): Promise<void> {
    await this.mutate((keys) => {
      const i = keys.findIndex((k) => k.id === record.id);
      if (i < 0) keys.push(record);
      else keys[i] = record;
      return [undefined, record];
    });
  }

  private find(keys: KeyRecord[], ref: string): number {
    const i = keys.findIndex((k) => k.id === ref || k.prefix === ref);
    if (i < 0) throw new KeyNotFoundError(ref);
    return i;
  }

  async get(ref: string): Promise<KeyRecord | undefined> {
    await this.refreshIfChanged();
    if (this.timers.length === 0) await this.readLastUsed();
    const r = this.byId.get(ref) ?? [...this.byId.values()].find((k) => k.prefix === ref);
    return r === undefined ? undefined : this.view(r);
  }

  async list(filter: { account?: string } = {}): Promise<KeyRecord[]> {
    await this.refreshIfChanged();
    // The CLI reads what the gateway last wrote; the gateway knows better already.
    if (this.timers.length === 0) await this.readLastUsed();
    const all = [...this.byId.values()];
    return (filter.account === undefined ? all : all.filter((k) => k.account === filter.account)).map((r) => this.view(r));
  }

  async revoke(ref: string): Promise<KeyRecord> {
    return this.mutate((keys) => {
      const i = this.find(keys, ref);
      const old = keys[i] as KeyRecord;
      const updated: KeyRecord = { ...old, revokedAt: old.revokedAt ?? new Date().toISOString() };
      keys[i] = updated;
      return [this.view(updated), updated];
    });
  }

  async rotate(ref: string, graceSeconds: number): Promise<{ record: KeyRecord; value: string }> {
    return this.mutate((keys) => {
      const i = this.find(keys, ref);
      const rotated = rotatedKeyRecord(keys[i] as KeyRecord, graceSeconds, Date.now());
      keys[i] = rotated.record;
      return [{ record: this.view(rotated.record), value: rotated.value }, rotated.record];
    });
  }

  touch(id: string, at: number): void {
    this.lastUsed.set(id, at);
    this.touchedSinceFlush = true;
  }

  /** Write the last-use times when requests changed them (one small file, atomically). */
  private async flushTouches(): Promise<void> {
    if (!this.touchedSinceFlush) return;
    this.touchedSinceFlush = false;
    try {
      await writeJsonAtomic(this.lastUsedPath, { version: 1, lastUsed: Object.fromEntries(this.lastUsed) });
    } catch {
      this.touchedSinceFlush = true;
    }
  }

  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.watcher?.close();
    await this.flushTouches();
  }
}
