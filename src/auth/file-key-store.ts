// The key store backend of the file store of earlier versions, which the config no
// longer names: read to adopt it into the record (`store migrate --from FILE`), and a
// KeyBackend the contract tests hold to the same rules. One JSON file of key records
// (hashes, never values), indexed in memory by hash. The CLI and the gateway share the file: a
// commit takes a lock, checks the record is still the one the writer read, and
// replaces the file atomically; the gateway notices outside writes through a
// directory watch, a one-second stat poll, and a stat on every unknown hash, so a key
// created by the CLI works on its very first request. Last-use times change on every
// request: they live in a small file of their own beside it, so the key file is only
// rewritten when a key really changes.

import { watch, type FSWatcher } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { readJsonFile, writeJsonAtomic } from '../store/json-file.js';
import { withFileLock } from './file-lock.js';
import { KeyRepository, type KeyBackend } from './key-repository.js';
import type { KeyRecord, StoreChange } from './key-store.js';

interface FileShape {
  version: 1;
  keys: KeyRecord[];
}

/** Where last-use times are kept: `keys.json` → `keys.lastused.json`. */
export function lastUsedPathFor(keyFile: string): string {
  return keyFile.replace(/(\.json)?$/, '.lastused.json');
}

const POLL_MS = 1_000;

/**
 * A file's identity for change detection: every write renames a new file over the
 * old one (a new inode), so two writes within one mtime tick still differ.
 */
const versionOf = (info: { ino: number; mtimeMs: number; size: number } | undefined): string =>
  info === undefined ? 'absent' : `${info.ino}:${info.mtimeMs}:${info.size}`;

/** Records are compared as the file holds them: two reads of one record print the same. */
const same = (a: KeyRecord | undefined, b: KeyRecord | undefined): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Opens (creating when absent) the file store. `live` watches for outside writes (the gateway). */
export async function openFileKeyStore(path: string, options: { live?: boolean; now?: () => number } = {}): Promise<KeyRepository> {
  const backend = await FileKeyBackend.open(path, options.live === true);
  return new KeyRepository(backend, options);
}

export class FileKeyBackend implements KeyBackend {
  private byHashIndex = new Map<string, KeyRecord>();
  private byIdIndex = new Map<string, KeyRecord>();
  /** What the file was when last read or written (see versionOf); '' before the first read. */
  private version = '';
  private refreshing: Promise<void> | undefined;
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  /** Last use per key id (epoch ms), from the side file and this process's requests. */
  private readonly lastUsedTimes = new Map<string, number>();
  private readonly lastUsedPath: string;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    readonly path: string,
    private readonly live: boolean,
  ) {
    this.lastUsedPath = lastUsedPathFor(path);
  }

  static async open(path: string, live: boolean): Promise<FileKeyBackend> {
    const backend = new FileKeyBackend(path, live);
    await mkdir(dirname(path), { recursive: true });
    await backend.refresh(true);
    await backend.readLastUsed();
    if (live) backend.startWatching();
    return backend;
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
    this.timer = setInterval(() => void this.refreshIfChanged(), POLL_MS).unref();
  }

  /** The file's content and version (the version taken first: a write in between is seen next time). */
  private async readFileShape(): Promise<{ shape: FileShape; version: string }> {
    const version = versionOf(await stat(this.path).catch(() => undefined));
    const { value: shape } = await readJsonFile<FileShape>(this.path, () => ({ version: 1, keys: [] }));
    if (shape.version !== 1 || !Array.isArray(shape.keys)) throw new Error(`${this.path} is not a noderouter key file`);
    return { shape, version };
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
      if (typeof at === 'number' && at > (this.lastUsedTimes.get(id) ?? 0)) this.lastUsedTimes.set(id, at);
    }
  }

  /** Take a fresh read as the current content; caches drop everything when it differs from what was known. */
  private adopt(keys: readonly KeyRecord[], version: string): void {
    const byHash = new Map<string, KeyRecord>();
    const byId = new Map<string, KeyRecord>();
    for (const r of keys) {
      byId.set(r.id, r);
      byHash.set(r.hash, r);
      for (const old of r.retired) byHash.set(old.hash, r);
    }
    this.byHashIndex = byHash;
    this.byIdIndex = byId;
    const changed = this.version !== '' && this.version !== version;
    this.version = version;
    if (changed) for (const l of this.listeners) l({ all: true });
  }

  private async refresh(force: boolean): Promise<void> {
    if (!force && versionOf(await stat(this.path).catch(() => undefined)) === this.version) return;
    const { shape, version } = await this.readFileShape();
    this.adopt(shape.keys, version);
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

  /** A fresh read, whatever the file's version says (another process of the cluster just wrote it). */
  async reread(): Promise<void> {
    await this.refresh(true);
  }

  async byHash(hash: string): Promise<KeyRecord | undefined> {
    const found = this.byHashIndex.get(hash);
    if (found !== undefined) return found;
    // Perhaps written a moment ago by the CLI: one stat says.
    await this.refreshIfChanged();
    return this.byHashIndex.get(hash);
  }

  async byId(id: string): Promise<KeyRecord | undefined> {
    await this.refreshIfChanged();
    return this.byIdIndex.get(id);
  }

  async byPrefix(prefix: string): Promise<KeyRecord[]> {
    await this.refreshIfChanged();
    return [...this.byIdIndex.values()].filter((r) => r.prefix === prefix);
  }

  async list(account?: string): Promise<KeyRecord[]> {
    await this.refreshIfChanged();
    const all = [...this.byIdIndex.values()];
    return account === undefined ? all : all.filter((r) => r.account === account);
  }

  commit(prev: KeyRecord | undefined, next: KeyRecord): Promise<boolean> {
    return withFileLock(this.path, async () => {
      const { shape, version } = await this.readFileShape();
      const i = shape.keys.findIndex((k) => k.id === next.id);
      if (!same(i < 0 ? undefined : shape.keys[i], prev)) {
        // Someone else wrote first: what they wrote is what the next attempt reads.
        this.adopt(shape.keys, version);
        return false;
      }
      if (i < 0) shape.keys.push(next);
      else shape.keys[i] = next;
      await writeJsonAtomic(this.path, shape, 1);
      // Indexed now; "everything changed" only when the file had changed since we last knew it.
      this.adopt(shape.keys, version);
      this.version = versionOf(await stat(this.path));
      return true;
    });
  }

  async lastUsed(): Promise<ReadonlyMap<string, number>> {
    // The CLI reads what the gateway last wrote; the gateway knows better already.
    if (!this.live) await this.readLastUsed();
    return this.lastUsedTimes;
  }

  /** One small file, written whole and atomically. */
  async saveLastUsed(times: ReadonlyMap<string, number>): Promise<void> {
    for (const [id, at] of times) if (at > (this.lastUsedTimes.get(id) ?? 0)) this.lastUsedTimes.set(id, at);
    await writeJsonAtomic(this.lastUsedPath, { version: 1, lastUsed: Object.fromEntries(this.lastUsedTimes) });
  }

  async announce(): Promise<void> {
    // Other processes notice the file's new modification time.
  }

  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.watcher?.close();
  }
}
