// The record's schema, as an ordered list of numbered migrations kept in the code,
// and the runner that brings a database up to date when it is opened. Each migration
// runs in its own BEGIN IMMEDIATE transaction that first checks `schema_migrations`:
// two processes opening one new file at once (a primary and its workers, or the CLI
// beside a gateway) take turns on the write lock, and the second finds the work done,
// so every migration is applied exactly once. A database written by a newer
// noderouter (a version this code does not know) is refused, never guessed at.
// This module owns the schema only; what the rows mean is each store's.

import type BetterSqlite3 from 'better-sqlite3';

export interface Migration {
  /** 1, 2, 3 …: the order they run in; never renumbered once released. */
  readonly version: number;
  /** What it does, for `schema_migrations` (people read it there). */
  readonly name: string;
  /** Statements run as they are, inside the migration's transaction. */
  readonly sql: string;
}

/** Why a record cannot be opened as it is (or, RECORD_SCHEMA_NAME, where it was asked to be). */
export type RecordSchemaCode = 'RECORD_SCHEMA_NEWER' | 'RECORD_MIGRATION_FAILED' | 'RECORD_SCHEMA_NAME';

export class RecordSchemaError extends Error {
  constructor(
    readonly code: RecordSchemaCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RecordSchemaError';
  }
}

// Times are ISO 8601 text as the gateway writes them (fixed width, UTC: text order is
// time order); last use is epoch milliseconds, as the key store hands it over. JSON
// columns hold only small nested settings (a key's permissions and restrictions, an
// account's tiers). No foreign key ties keys, tokens or usage to accounts: a key's
// account is any name the operator gives (accounts are the dashboard's), as in the
// file and Redis stores.
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'keys, their retired values and the change log',
    sql: `
      CREATE TABLE keys (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        account TEXT NOT NULL,
        tier TEXT NOT NULL,
        label TEXT NOT NULL,
        permissions TEXT NOT NULL CHECK (json_valid(permissions)),
        restrictions TEXT CHECK (restrictions IS NULL OR json_valid(restrictions)),
        created_at TEXT NOT NULL,
        rotated_at TEXT,
        revoked_at TEXT,
        expires_at TEXT,
        last_used_ms INTEGER
      ) STRICT;
      CREATE INDEX keys_by_account ON keys (account, created_at, id);
      CREATE INDEX keys_by_prefix ON keys (prefix);

      -- Values superseded by a rotation, working until their grace ends: a presented
      -- value's hash finds its key here when it is not a current one.
      CREATE TABLE retired_key_values (
        hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL REFERENCES keys (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        prefix TEXT NOT NULL,
        until TEXT NOT NULL,
        UNIQUE (key_id, position)
      ) STRICT, WITHOUT ROWID;

      -- Every committed key change, written in the same transaction: other processes
      -- on the file read it to drop exactly those hashes from their caches.
      CREATE TABLE key_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        origin TEXT NOT NULL,
        hashes TEXT NOT NULL CHECK (json_valid(hashes)),
        invalid TEXT CHECK (invalid IS NULL OR json_valid(invalid))
      ) STRICT;
    `,
  },
  {
    version: 2,
    name: 'dashboard accounts, sign-in tokens and sessions',
    sql: `
      CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL UNIQUE,
        email TEXT,
        tiers TEXT NOT NULL CHECK (json_valid(tiers)),
        default_tier TEXT NOT NULL,
        created_at TEXT NOT NULL,
        disabled_at TEXT,
        deleted_at TEXT
      ) STRICT;
      CREATE INDEX accounts_by_age ON accounts (created_at, id);

      CREATE TABLE signin_tokens (
        hash TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX signin_tokens_by_expiry ON signin_tokens (expires_at);

      CREATE TABLE sessions (
        hash TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('account', 'operator')),
        account_id TEXT,
        grant_digest TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);
      CREATE INDEX sessions_by_account ON sessions (account_id) WHERE account_id IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: 'usage per key, day and chain',
    sql: `
      CREATE TABLE usage_days (
        key_id TEXT NOT NULL,
        day TEXT NOT NULL,
        chain TEXT NOT NULL,
        calls INTEGER NOT NULL,
        errors INTEGER NOT NULL,
        limited INTEGER NOT NULL,
        invalid INTEGER NOT NULL,
        PRIMARY KEY (key_id, day, chain)
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    name: 'operators holds on nodes',
    sql: `
      CREATE TABLE node_holds (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('cordoned', 'draining')),
        since TEXT NOT NULL,
        reason TEXT NOT NULL
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 5,
    name: 'hourly usage rollups and the failed-call log',
    // hour: hours since 1970-01-01T00:00Z (datetime(hour * 3600, 'unixepoch') reads it).
    // Each row is added to by every instance's flush, never replaced. le_* count calls
    // that finished within the bound (and above the one before); over_30s the rest.
    // at_ms: epoch milliseconds. Neither table holds a key's value, params or bodies.
    sql: `
      CREATE TABLE usage_hours (
        key_id TEXT NOT NULL,
        hour INTEGER NOT NULL,
        chain TEXT NOT NULL,
        method TEXT NOT NULL,
        outcome TEXT NOT NULL,
        account TEXT NOT NULL,
        calls INTEGER NOT NULL,
        cost INTEGER NOT NULL,
        node_calls INTEGER NOT NULL,
        bytes_in INTEGER NOT NULL,
        bytes_out INTEGER NOT NULL,
        le_1ms INTEGER NOT NULL,
        le_2_5ms INTEGER NOT NULL,
        le_5ms INTEGER NOT NULL,
        le_10ms INTEGER NOT NULL,
        le_25ms INTEGER NOT NULL,
        le_50ms INTEGER NOT NULL,
        le_100ms INTEGER NOT NULL,
        le_250ms INTEGER NOT NULL,
        le_500ms INTEGER NOT NULL,
        le_1s INTEGER NOT NULL,
        le_2_5s INTEGER NOT NULL,
        le_5s INTEGER NOT NULL,
        le_10s INTEGER NOT NULL,
        le_30s INTEGER NOT NULL,
        over_30s INTEGER NOT NULL,
        PRIMARY KEY (key_id, hour, chain, method, outcome)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX usage_hours_by_account ON usage_hours (account, hour);
      CREATE INDEX usage_hours_by_hour ON usage_hours (hour);

      CREATE TABLE failed_calls (
        id INTEGER PRIMARY KEY,
        key_id TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        chain TEXT NOT NULL,
        method TEXT NOT NULL,
        outcome TEXT NOT NULL,
        status INTEGER,
        code TEXT,
        node TEXT,
        latency_ms REAL NOT NULL,
        request_id TEXT NOT NULL
      ) STRICT;
      CREATE INDEX failed_calls_by_key ON failed_calls (key_id, at_ms);
      CREATE INDEX failed_calls_by_age ON failed_calls (at_ms);
    `,
  },
];

/** A list the runner can trust: versions 1, 2, 3 … in order, none missing or twice. */
export function checkMigrations(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration "${m.name}" is numbered ${m.version} where ${i + 1} was expected`);
  });
}

const TRACKING = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  ) STRICT
`;

/**
 * Brings the database up to the last migration; returns the versions this call applied
 * (none when another process, or an earlier start, applied them). Needs a busy timeout
 * on the connection: a process that finds the lock taken waits for it.
 */
export function migrate(db: BetterSqlite3.Database, migrations: readonly Migration[] = MIGRATIONS, now: () => number = Date.now): number[] {
  checkMigrations(migrations);
  db.transaction(() => db.exec(TRACKING)).immediate();
  const appliedVersion = db.prepare<[number], { version: number }>('SELECT version FROM schema_migrations WHERE version = ?');
  const latest = db.prepare<[], { v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
  const record = db.prepare<[number, string, string]>('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  const known = migrations.length;
  const newest = latest.get()?.v ?? 0;
  if (newest > known) {
    throw new RecordSchemaError(
      'RECORD_SCHEMA_NEWER',
      `${db.name} has schema version ${newest}, newer than this noderouter knows (${known}): run the noderouter that wrote it, or a newer one`,
    );
  }
  const applied: number[] = [];
  for (const m of migrations) {
    // Skipped without the write lock when it was applied before this process started.
    if (m.version <= newest) continue;
    const apply = db.transaction(() => {
      if (appliedVersion.get(m.version) !== undefined) return false;
      db.exec(m.sql);
      record.run(m.version, m.name, new Date(now()).toISOString());
      return true;
    });
    try {
      if (apply.immediate()) applied.push(m.version);
    } catch (err) {
      throw new RecordSchemaError(
        'RECORD_MIGRATION_FAILED',
        `${db.name}: migration ${m.version} (${m.name}) failed: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }
  return applied;
}

/** The versions a database has applied, in order. */
export function appliedMigrations(db: BetterSqlite3.Database): number[] {
  return db
    .prepare<[], { version: number }>('SELECT version FROM schema_migrations ORDER BY version')
    .all()
    .map((r) => r.version);
}
