// The key store's backend in the SQLite record: a row per key (its current value's
// hash and prefix, never a value), a row per retired value still in the record (found
// by its hash), and a change log written in the same transaction as each change. A
// commit is one IMMEDIATE transaction that reads the key again and writes only when it
// is still the record the writer read, so two processes changing one key both land
// (the repository retries the loser). Reads go to the file, so a key the CLI created a
// moment ago works on its first request; a live backend (the gateway) reads the change
// log as soon as the file's write-ahead log changes (a commit of any process: the CLI
// revoking a key is refused on the gateway's next request), and every second in case
// a change went unseen, and tells its caches exactly which hashes changed, or
// everything when it fell behind the log's kept tail. Last use is a column, written in batches
// and never part of a change.

import { randomUUID } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { KeyRepository, type KeyBackend } from '../auth/key-repository.js';
import { changeBetween, type KeyRecord, type StoreChange } from '../auth/key-store.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { changesSince, changeText, KEY_COLUMNS as COLUMNS, recordOf, rowOf, type KeyRow, type RetiredRow } from './key-rows.js';

// SQLite's own statements of a key's rows (named parameters, its two-argument max), also
// written by sqlite-rows.ts; the dialect-free mapping is key-rows.ts's.

/** A new `keys` row, from named parameters (a KeyRow). */
export const INSERT_KEY = `INSERT INTO keys (${COLUMNS}) VALUES (@id, @hash, @prefix, @account, @tier, @label, @permissions,
  @restrictions, @created_at, @rotated_at, @revoked_at, @expires_at, @last_used_ms)`;

/** Every column of a `keys` row but last use, which only moves forward: a record read before a batch of touches must not take it back. */
export const UPDATE_KEY = `UPDATE keys SET hash = @hash, prefix = @prefix, account = @account, tier = @tier, label = @label,
  permissions = @permissions, restrictions = @restrictions, created_at = @created_at, rotated_at = @rotated_at,
  revoked_at = @revoked_at, expires_at = @expires_at,
  last_used_ms = nullif(max(coalesce(last_used_ms, 0), coalesce(@last_used_ms, 0)), 0)
  WHERE id = @id`;

/** A retired value's row: hash, key id, position (1, 2 … in the record's order), prefix, until. */
export const INSERT_RETIRED = 'INSERT INTO retired_key_values (hash, key_id, position, prefix, until) VALUES (?, ?, ?, ?, ?)';

const POLL_MS = 1_000;
/** Changes kept in the log: far more than a second's worth, so a reader falls behind only when stopped. */
const CHANGES_KEPT = 10_000;

interface ChangeRow {
  seq: number;
  origin: string;
  hashes: string;
  invalid: string | null;
}

export interface SqliteKeyStoreOptions {
  /** Read other processes' changes from the log (the gateway); the CLI only writes. */
  readonly live?: boolean;
  readonly now?: () => number;
}

/** The SQLite key store over an open record (which the caller closes, after the store). */
export function openSqliteKeyStore(db: SqliteDatabase, options: SqliteKeyStoreOptions = {}): KeyRepository {
  return new KeyRepository(new SqliteKeyBackend(db, options.live === true), options);
}

export class SqliteKeyBackend implements KeyBackend {
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  /** Tags this process's log entries: its own repository announced them already. */
  private readonly origin = randomUUID();
  /** The last log entry read (or, at open, written before this backend existed). */
  private seen: number;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly watcher: FSWatcher | undefined;

  private readonly byHashStmt;
  private readonly retiredOwnerStmt;
  private readonly byIdStmt;
  private readonly byPrefixStmt;
  private readonly allStmt;
  private readonly byAccountStmt;
  private readonly retiredOfStmt;
  private readonly retiredAllStmt;
  private readonly retiredOfAccountStmt;
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly dropRetiredStmt;
  private readonly insertRetiredStmt;
  private readonly logStmt;
  private readonly pruneStmt;
  private readonly lastSeqStmt;
  private readonly changesStmt;
  private readonly lastUsedStmt;
  private readonly touchStmt;
  private readonly commitTx: (prev: KeyRecord | undefined, next: KeyRecord, now: number) => boolean;
  private readonly touchTx: (times: ReadonlyMap<string, number>) => Promise<void>;

  constructor(db: SqliteDatabase, live: boolean) {
    this.byHashStmt = db.statement<[string], KeyRow>(`SELECT ${COLUMNS} FROM keys WHERE hash = ?`);
    this.retiredOwnerStmt = db.statement<[string], { key_id: string }>('SELECT key_id FROM retired_key_values WHERE hash = ?');
    this.byIdStmt = db.statement<[string], KeyRow>(`SELECT ${COLUMNS} FROM keys WHERE id = ?`);
    this.byPrefixStmt = db.statement<[string], KeyRow>(`SELECT ${COLUMNS} FROM keys WHERE prefix = ? ORDER BY created_at, id`);
    this.allStmt = db.statement<[], KeyRow>(`SELECT ${COLUMNS} FROM keys ORDER BY created_at, id`);
    this.byAccountStmt = db.statement<[string], KeyRow>(`SELECT ${COLUMNS} FROM keys WHERE account = ? ORDER BY created_at, id`);
    this.retiredOfStmt = db.statement<[string], RetiredRow>(
      'SELECT key_id, hash, prefix, until FROM retired_key_values WHERE key_id = ? ORDER BY position',
    );
    this.retiredAllStmt = db.statement<[], RetiredRow>(
      'SELECT key_id, hash, prefix, until FROM retired_key_values ORDER BY key_id, position',
    );
    this.retiredOfAccountStmt = db.statement<[string], RetiredRow>(
      `SELECT r.key_id, r.hash, r.prefix, r.until FROM retired_key_values r JOIN keys k ON k.id = r.key_id
       WHERE k.account = ? ORDER BY r.key_id, r.position`,
    );
    this.insertStmt = db.statement<[KeyRow]>(INSERT_KEY);
    this.updateStmt = db.statement<[KeyRow]>(UPDATE_KEY);
    this.dropRetiredStmt = db.statement<[string]>('DELETE FROM retired_key_values WHERE key_id = ?');
    this.insertRetiredStmt = db.statement<[string, string, number, string, string]>(INSERT_RETIRED);
    this.logStmt = db.statement<[string, string, string | null]>('INSERT INTO key_changes (origin, hashes, invalid) VALUES (?, ?, ?)');
    this.pruneStmt = db.statement<[number]>('DELETE FROM key_changes WHERE seq <= (SELECT max(seq) FROM key_changes) - ?');
    this.lastSeqStmt = db.statement<[], { seq: number | null }>('SELECT max(seq) AS seq FROM key_changes');
    this.changesStmt = db.statement<[number], ChangeRow>(
      'SELECT seq, origin, hashes, invalid FROM key_changes WHERE seq > ? ORDER BY seq LIMIT 1000',
    );
    this.lastUsedStmt = db.statement<[string], { id: string; last_used_ms: number }>(
      'SELECT id, last_used_ms FROM keys WHERE id IN (SELECT value FROM json_each(?)) AND last_used_ms IS NOT NULL',
    );
    this.touchStmt = db.statement<[number, string]>('UPDATE keys SET last_used_ms = max(coalesce(last_used_ms, 0), ?) WHERE id = ?');
    this.commitTx = db.writer((prev, next, now) => this.commitNow(prev, next, now));
    // Written on an interval, off the request path: waits for the lock on timers (asyncWriter).
    this.touchTx = db.asyncWriter((times: ReadonlyMap<string, number>) => {
      for (const [id, at] of times) this.touchStmt.run(at, id);
    });
    this.seen = this.lastSeqStmt.get()?.seq ?? 0;
    if (live) {
      this.timer = setInterval(() => this.poll(), POLL_MS).unref();
      this.watcher = watchWal(db.path, () => this.poll());
    }
  }

  private read(row: KeyRow | undefined): KeyRecord | undefined {
    return row === undefined ? undefined : recordOf(row, this.retiredOfStmt.all(row.id));
  }

  /** Rows with their retired values, read in one query for all of them. */
  private readAll(rows: readonly KeyRow[], retired: readonly RetiredRow[]): KeyRecord[] {
    const byKey = new Map<string, RetiredRow[]>();
    for (const r of retired) {
      const list = byKey.get(r.key_id);
      if (list === undefined) byKey.set(r.key_id, [r]);
      else list.push(r);
    }
    return rows.map((row) => recordOf(row, byKey.get(row.id) ?? []));
  }

  async byHash(hash: string): Promise<KeyRecord | undefined> {
    const current = this.byHashStmt.get(hash);
    if (current !== undefined) return this.read(current);
    const owner = this.retiredOwnerStmt.get(hash);
    return owner === undefined ? undefined : this.read(this.byIdStmt.get(owner.key_id));
  }

  async byId(id: string): Promise<KeyRecord | undefined> {
    return this.read(this.byIdStmt.get(id));
  }

  async byPrefix(prefix: string): Promise<KeyRecord[]> {
    return this.byPrefixStmt.all(prefix).flatMap((row) => this.read(row) ?? []);
  }

  /** Oldest first, then by id (two keys made in one millisecond). */
  async list(account?: string): Promise<KeyRecord[]> {
    if (account === undefined) return this.readAll(this.allStmt.all(), this.retiredAllStmt.all());
    return this.readAll(this.byAccountStmt.all(account), this.retiredOfAccountStmt.all(account));
  }

  async commit(prev: KeyRecord | undefined, next: KeyRecord, now: number): Promise<boolean> {
    return this.commitTx(prev, next, now);
  }

  /** Inside the write transaction: the check, the row, its retired values and the log entry. */
  private commitNow(prev: KeyRecord | undefined, next: KeyRecord, now: number): boolean {
    const stored = this.read(this.byIdStmt.get(next.id));
    if (changeText(stored) !== changeText(prev)) return false;
    const row = rowOf(next);
    // Retired rows first: the old current value may become a retired one.
    this.dropRetiredStmt.run(next.id);
    if (stored === undefined) this.insertStmt.run(row);
    else this.updateStmt.run(row);
    next.retired.forEach((r, i) => this.insertRetiredStmt.run(r.hash, next.id, i + 1, r.prefix, r.until));
    const change = changeBetween(prev, next, now);
    this.logStmt.run(this.origin, JSON.stringify(change.hashes), change.invalid === undefined ? null : JSON.stringify(change.invalid));
    this.pruneStmt.run(CHANGES_KEPT);
    return true;
  }

  async lastUsed(ids: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const out = new Map<string, number>();
    if (ids.length === 0) return out;
    for (const row of this.lastUsedStmt.all(JSON.stringify(ids))) out.set(row.id, row.last_used_ms);
    return out;
  }

  async saveLastUsed(times: ReadonlyMap<string, number>): Promise<void> {
    if (times.size > 0) await this.touchTx(times);
  }

  async announce(): Promise<void> {
    // Written with the change itself (commit): other processes read the log.
  }

  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  async reread(): Promise<void> {
    // Every read goes to the file.
  }

  /** Other processes' changes since the last look; everything when entries were pruned unread. */
  poll(): void {
    let rows: ChangeRow[];
    try {
      rows = this.changesStmt.all(this.seen);
    } catch {
      // Busy or closing: the next tick reads the same entries.
      return;
    }
    const read = changesSince(this.seen, rows, this.origin, decode);
    this.seen = read.seen;
    for (const c of read.changes) this.emit(c);
  }

  private emit(change: StoreChange): void {
    for (const l of this.listeners) l(change);
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.watcher?.close();
  }
}

/**
 * Calls `changed` whenever the file's write-ahead log is written (every commit, by any
 * process). The folder is watched, not the file: a log reset or recreated keeps being
 * seen. Where the platform cannot watch, the poll alone reads the changes.
 */
function watchWal(path: string, changed: () => void): FSWatcher | undefined {
  const wal = `${basename(path)}-wal`;
  try {
    const watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
      if (name === wal) changed();
    });
    watcher.on('error', () => watcher.close());
    return watcher;
  } catch {
    return undefined;
  }
}

function decode(row: ChangeRow): StoreChange {
  try {
    const hashes = JSON.parse(row.hashes) as string[];
    return row.invalid === null ? { hashes } : { hashes, invalid: JSON.parse(row.invalid) as string[] };
  } catch {
    // An unreadable entry drops everything, which is always safe.
    return { all: true };
  }
}
