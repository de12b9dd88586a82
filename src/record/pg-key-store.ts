// The key store's backend in the PostgreSQL record, shared by many instances: a row
// per key (its current value's hash and prefix, never a value), a row per retired
// value still in the record, and a change log written in the same transaction as
// each change. A lookup by hash is one indexed query (the key and its retired values
// together), made only when the key cache misses. A commit locks the log's table
// (lookups and the log's readers never wait for it), reads the key again and writes
// only when it is still the record the writer read, so two instances changing one key
// both land (the repository retries the loser); the lock also makes the log's
// sequence gap-free and in commit order. Last use is a column, written in batches and
// never part of a change.
//
// How other instances hear of a change: a live backend (the gateway) reads the log
// every second and tells its caches exactly which hashes changed, or everything when
// it fell behind the log's kept tail. The log, not LISTEN/NOTIFY: a notification sent
// while an instance is disconnected is lost (so the log would be needed anyway), and
// listening holds a connection per instance outside the pool, which pgbouncer's
// transaction pooling cannot give. A second is well inside the key cache's TTL; the
// hot state (Redis announcements) tells instances sooner, and the log covers what
// they missed while it was away.

import { randomUUID } from 'node:crypto';
import { KeyRepository, type KeyBackend } from '../auth/key-repository.js';
import { changeBetween, type KeyRecord, type StoreChange } from '../auth/key-store.js';
import { changesSince, changeText, KEY_COLUMNS as COLUMNS, recordOf, rowOf, type KeyRow, type RetiredRow } from './key-rows.js';
import type { PgDatabase, PgSession } from './pg-database.js';

const POLL_MS = 1_000;
/** Changes kept in the log: far more than a second's worth, so a reader falls behind only when stopped. */
const CHANGES_KEPT = 10_000;
/** Log entries read at one look: the rest at the next. */
const CHANGES_READ = 1_000;

/** A key row with its retired values as JSON: [[hash, prefix, until], …] in position order. */
export interface ReadRow extends KeyRow {
  retired: string;
}

interface ChangeRow {
  seq: number;
  origin: string;
  hashes: string[];
  invalid: string[] | null;
}

export interface PgKeyStoreOptions {
  /** Read other instances' changes from the log (the gateway); the CLI only writes. */
  readonly live?: boolean;
  readonly now?: () => number;
}

/** The PostgreSQL key store over an open record (which the caller closes, after the store). */
export async function openPgKeyStore(db: PgDatabase, options: PgKeyStoreOptions = {}): Promise<KeyRepository> {
  return new KeyRepository(await PgKeyBackend.open(db, options.live === true), options);
}

/** The statement texts, with the record's schema (pg-rows.ts writes keys with them too). */
export function keyStatements(db: PgDatabase) {
  const keys = db.table('keys');
  const retired = db.table('retired_key_values');
  const changes = db.table('key_changes');
  const select = `SELECT ${COLUMNS}, coalesce((SELECT json_agg(json_build_array(r.hash, r.prefix, r.until) ORDER BY r.position)
    FROM ${retired} r WHERE r.key_id = k.id), '[]') AS retired FROM ${keys} k`;
  return {
    // One query: the key whose current or retired value has this hash, with its retired values.
    byHash: `${select} WHERE k.id = coalesce((SELECT id FROM ${keys} WHERE hash = $1), (SELECT key_id FROM ${retired} WHERE hash = $1))`,
    byId: `${select} WHERE k.id = $1`,
    byIds: `${select} WHERE k.id = ANY($1::text[])`,
    byPrefix: `${select} WHERE k.prefix = $1 ORDER BY k.created_at, k.id`,
    all: `${select} ORDER BY k.created_at, k.id`,
    // Ids ordered byte by byte, as SQLite orders them: both records export keys in one order.
    everyKey: `${select} ORDER BY k.created_at, k.id COLLATE "C"`,
    byAccount: `${select} WHERE k.account = $1 ORDER BY k.created_at, k.id`,
    // Readers (the lookups, the log's readers) take no lock this mode waits for.
    lock: `LOCK TABLE ${changes} IN EXCLUSIVE MODE`,
    insert: `INSERT INTO ${keys} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9::timestamptz, $10::timestamptz,
      $11::timestamptz, $12::timestamptz, $13::bigint)`,
    // Last use only moves forward: a record read before a batch of touches must not take it back.
    update: `UPDATE ${keys} SET hash = $2, prefix = $3, account = $4, tier = $5, label = $6, permissions = $7::jsonb,
      restrictions = $8::jsonb, created_at = $9::timestamptz, rotated_at = $10::timestamptz, revoked_at = $11::timestamptz,
      expires_at = $12::timestamptz, last_used_ms = nullif(greatest(coalesce(last_used_ms, 0), coalesce($13::bigint, 0)), 0)
      WHERE id = $1`,
    dropRetired: `DELETE FROM ${retired} WHERE key_id = $1`,
    insertRetired: `INSERT INTO ${retired} (hash, key_id, position, prefix, until)
      SELECT v.hash, $1, v.position, v.prefix, v.until
      FROM unnest($2::text[], $3::text[], $4::timestamptz[]) WITH ORDINALITY AS v(hash, prefix, until, position)`,
    log: `INSERT INTO ${changes} (seq, origin, hashes, invalid)
      SELECT coalesce(max(seq), 0) + 1, $1, $2::text[], $3::text[] FROM ${changes} RETURNING seq`,
    prune: `DELETE FROM ${changes} WHERE seq <= $1::bigint - ${CHANGES_KEPT}`,
    lastSeq: `SELECT coalesce(max(seq), 0) AS seq FROM ${changes}`,
    changes: `SELECT seq, origin, hashes, invalid FROM ${changes} WHERE seq > $1 ORDER BY seq LIMIT ${CHANGES_READ}`,
    lastUsed: `SELECT id, last_used_ms FROM ${keys} WHERE id = ANY($1::text[]) AND last_used_ms IS NOT NULL`,
    // Rows locked in one order by every instance: two batches of touches never deadlock.
    lockTouched: `SELECT id FROM ${keys} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
    touch: `UPDATE ${keys} k SET last_used_ms = greatest(coalesce(k.last_used_ms, 0), v.at)
      FROM unnest($1::text[], $2::bigint[]) AS v(id, at) WHERE k.id = v.id`,
  };
}

/** A `keys` row's values, in KEY_COLUMNS' order. */
export function keyValues(row: KeyRow): unknown[] {
  return [
    row.id,
    row.hash,
    row.prefix,
    row.account,
    row.tier,
    row.label,
    row.permissions,
    row.restrictions,
    row.created_at,
    row.rotated_at,
    row.revoked_at,
    row.expires_at,
    row.last_used_ms,
  ];
}

export function readRecord(row: ReadRow): KeyRecord {
  const retired = (JSON.parse(row.retired) as Array<[string, string, string]>).map(([hash, prefix, until]): RetiredRow => ({
    key_id: row.id,
    hash,
    prefix,
    until: new Date(until).toISOString(),
  }));
  return recordOf(row, retired);
}

export class PgKeyBackend implements KeyBackend {
  private readonly listeners: Array<(c: StoreChange) => void> = [];
  /** Tags this instance's log entries: its own repository announced them already. */
  private readonly origin = randomUUID();
  private readonly sql: ReturnType<typeof keyStatements>;
  private readonly timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  private constructor(
    private readonly db: PgDatabase,
    /** The last log entry read (or, at open, written before this backend existed). */
    private seen: number,
    live: boolean,
  ) {
    this.sql = keyStatements(db);
    if (live) this.timer = setInterval(() => void this.poll(), POLL_MS).unref();
  }

  static async open(db: PgDatabase, live: boolean): Promise<PgKeyBackend> {
    const [row] = await db.query<{ seq: number }>(keyStatements(db).lastSeq);
    return new PgKeyBackend(db, row?.seq ?? 0, live);
  }

  private async one(on: PgSession, text: string, value: string): Promise<KeyRecord | undefined> {
    const [row] = await on.query<ReadRow>(text, [value]);
    return row === undefined ? undefined : readRecord(row);
  }

  byHash(hash: string): Promise<KeyRecord | undefined> {
    return this.one(this.db, this.sql.byHash, hash);
  }

  byId(id: string): Promise<KeyRecord | undefined> {
    return this.one(this.db, this.sql.byId, id);
  }

  async byPrefix(prefix: string): Promise<KeyRecord[]> {
    return (await this.db.query<ReadRow>(this.sql.byPrefix, [prefix])).map(readRecord);
  }

  /** Oldest first, then by id (two keys made in one millisecond). */
  async list(account?: string): Promise<KeyRecord[]> {
    const rows =
      account === undefined ? await this.db.query<ReadRow>(this.sql.all, []) : await this.db.query<ReadRow>(this.sql.byAccount, [account]);
    return rows.map(readRecord);
  }

  /** One transaction: the lock, the check, the row, its retired values and the log entry. */
  commit(prev: KeyRecord | undefined, next: KeyRecord, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.query(this.sql.lock);
      const stored = await this.one(tx, this.sql.byId, next.id);
      if (changeText(stored) !== changeText(prev)) return false;
      // Retired rows first: the old current value may become a retired one.
      await tx.query(this.sql.dropRetired, [next.id]);
      await tx.query(stored === undefined ? this.sql.insert : this.sql.update, keyValues(rowOf(next)));
      if (next.retired.length > 0) {
        await tx.query(this.sql.insertRetired, [
          next.id,
          next.retired.map((r) => r.hash),
          next.retired.map((r) => r.prefix),
          next.retired.map((r) => r.until),
        ]);
      }
      const change = changeBetween(prev, next, now);
      const [logged] = await tx.query<{ seq: number }>(this.sql.log, [this.origin, change.hashes, change.invalid ?? null]);
      await tx.query(this.sql.prune, [logged?.seq ?? 0]);
      return true;
    });
  }

  async lastUsed(ids: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const out = new Map<string, number>();
    if (ids.length === 0) return out;
    for (const row of await this.db.query<{ id: string; last_used_ms: number }>(this.sql.lastUsed, [ids]))
      out.set(row.id, row.last_used_ms);
    return out;
  }

  async saveLastUsed(times: ReadonlyMap<string, number>): Promise<void> {
    if (times.size === 0) return;
    const ids = [...times.keys()];
    await this.db.transaction(async (tx) => {
      await tx.query(this.sql.lockTouched, [ids]);
      await tx.query(this.sql.touch, [ids, ids.map((id) => times.get(id))]);
    });
  }

  async announce(): Promise<void> {
    // Written with the change itself (commit): other instances read the log.
  }

  onChange(listener: (change: StoreChange) => void): void {
    this.listeners.push(listener);
  }

  async reread(): Promise<void> {
    // Every read goes to the database.
  }

  /** Other instances' changes since the last look; everything when entries were pruned unread. */
  poll(): Promise<void> {
    this.polling ??= this.readLog().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async readLog(): Promise<void> {
    let rows: ChangeRow[];
    try {
      rows = await this.db.query<ChangeRow>(this.sql.changes, [this.seen]);
    } catch {
      // Unreachable for now: the next look reads the same entries.
      return;
    }
    const read = changesSince(this.seen, rows, this.origin, (r) =>
      r.invalid === null ? { hashes: r.hashes } : { hashes: r.hashes, invalid: r.invalid },
    );
    this.seen = read.seen;
    for (const c of read.changes) this.emit(c);
  }

  private emit(change: StoreChange): void {
    for (const l of this.listeners) l(change);
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.polling;
  }
}
