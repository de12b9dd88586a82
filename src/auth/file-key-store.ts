// The embedded key store: one JSON file of key records (hashes, never values),
// indexed in memory by hash. The CLI and the gateway share the file: writes take a
// lock and replace the file atomically; the gateway notices outside writes through a
// directory watch, a one-second stat poll, and a stat on every unknown hash, so a key
// created by the CLI works on its very first request.

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

const POLL_MS = 1_000;
const TOUCH_FLUSH_MS = 10_000;

export class FileKeyStore implements KeyStore {
  private byHash = new Map<string, KeyRecord>();
  private byId = new Map<string, KeyRecord>();
  private mtimeMs = -1;
  private refreshing: Promise<void> | undefined;
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  private readonly touched = new Map<string, number>();
  private watcher: FSWatcher | undefined;
  private timers: NodeJS.Timeout[] = [];

  private constructor(readonly path: string) {}

  /** Opens (creating when absent) the store. `live` watches for outside writes. */
  static async open(path: string, options: { live?: boolean } = {}): Promise<FileKeyStore> {
    const store = new FileKeyStore(path);
    await mkdir(dirname(path), { recursive: true });
    await store.refresh(true);
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

  /** Read-modify-write under the lock, from the file's current content. */
  private async mutate<T>(fn: (keys: KeyRecord[]) => T): Promise<T> {
    return withFileLock(this.path, async () => {
      const { shape } = await this.readFileShape();
      const result = fn(shape.keys);
      await writeJsonAtomic(this.path, shape, 1);
      this.index(shape.keys);
      this.mtimeMs = (await stat(this.path)).mtimeMs;
      this.emit({ all: true });
      return result;
    });
  }

  async create(input: NewKey): Promise<{ record: KeyRecord; value: string }> {
    const created = newKeyRecord(input);
    await this.mutate((keys) => keys.push(created.record));
    return created;
  }

  async put(record: KeyRecord): Promise<void> {
    await this.mutate((keys) => {
      const i = keys.findIndex((k) => k.id === record.id);
      if (i < 0) keys.push(record);
      else keys[i] = record;
    });
  }

  private find(keys: KeyRecord[], ref: string): number {
    const i = keys.findIndex((k) => k.id === ref || k.prefix === ref);
    if (i < 0) throw new KeyNotFoundError(ref);
    return i;
  }

  async get(ref: string): Promise<KeyRecord | undefined> {
    await this.refreshIfChanged();
    return this.byId.get(ref) ?? [...this.byId.values()].find((k) => k.prefix === ref);
  }

  async list(filter: { account?: string } = {}): Promise<KeyRecord[]> {
    await this.refreshIfChanged();
    const all = [...this.byId.values()];
    return filter.account === undefined ? all : all.filter((k) => k.account === filter.account);
  }

  async revoke(ref: string): Promise<KeyRecord> {
    return this.mutate((keys) => {
      const i = this.find(keys, ref);
      const old = keys[i] as KeyRecord;
      const updated: KeyRecord = { ...old, revokedAt: old.revokedAt ?? new Date().toISOString() };
      keys[i] = updated;
      return updated;
    });
  }

  async rotate(ref: string, graceSeconds: number): Promise<{ record: KeyRecord; value: string }> {
    return this.mutate((keys) => {
      const i = this.find(keys, ref);
      const rotated = rotatedKeyRecord(keys[i] as KeyRecord, graceSeconds, Date.now());
      keys[i] = rotated.record;
      return rotated;
    });
  }

  touch(id: string, at: number): void {
    this.touched.set(id, at);
  }

  private async flushTouches(): Promise<void> {
    if (this.touched.size === 0) return;
    const pending = new Map(this.touched);
    this.touched.clear();
    await this.mutate((keys) => {
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i] as KeyRecord;
        const at = pending.get(k.id);
        if (at !== undefined) keys[i] = { ...k, lastUsedAt: new Date(at).toISOString() };
      }
    }).catch(() => {
      for (const [id, at] of pending) if (!this.touched.has(id)) this.touched.set(id, at);
    });
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
