// The record's schema in PostgreSQL: the same numbered migrations as the SQLite
// record's (migrations.ts: the same versions and names, in PostgreSQL's types), and
// the runner that brings a schema up to date when a record is opened. Each step is a
// transaction that first takes a transaction-scoped advisory lock on the schema's
// name, then reads `schema_migrations`: instances starting at once on machines of
// their own take turns, and the later ones find the work done, so every migration is
// applied exactly once. A schema a newer noderouter wrote is refused, never guessed at.

import { checkMigrations, RecordSchemaError, type Migration } from './migrations.js';

/** Statements on one connection (inside a transaction) or on a pool. */
export interface PgSession {
  query<R>(text: string, values?: readonly unknown[]): Promise<R[]>;
}

/** Runs `fn` in one transaction on one connection. */
export type PgTransactions = <T>(fn: (tx: PgSession) => Promise<T>) => Promise<T>;

/** `name` as a quoted identifier (the caller has checked its characters). */
export const quoteIdentifier = (name: string): string => `"${name.replaceAll('"', '""')}"`;

// As the SQLite record: no foreign key ties keys, tokens or usage to accounts. Times
// are timestamptz (read back as ISO text), last use epoch milliseconds (bigint), the
// nested settings jsonb, a change's hashes text arrays, counts bigint, days `date`,
// hours since the epoch integer.
// The change log's sequence is written under a lock (pg-key-store.ts), so it has no
// gaps and commit order is its order: a reader can tell it missed entries.
export const PG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'keys, their retired values and the change log',
    sql: `
      CREATE TABLE keys (
        id text PRIMARY KEY,
        hash text NOT NULL UNIQUE,
        prefix text NOT NULL,
        account text NOT NULL,
        tier text NOT NULL,
        label text NOT NULL,
        permissions jsonb NOT NULL CHECK (jsonb_typeof(permissions) = 'object'),
        restrictions jsonb CHECK (restrictions IS NULL OR jsonb_typeof(restrictions) = 'object'),
        created_at timestamptz NOT NULL,
        rotated_at timestamptz,
        revoked_at timestamptz,
        expires_at timestamptz,
        last_used_ms bigint
      );
      CREATE INDEX keys_by_account ON keys (account, created_at, id);
      CREATE INDEX keys_by_prefix ON keys (prefix);

      CREATE TABLE retired_key_values (
        hash text PRIMARY KEY,
        key_id text NOT NULL REFERENCES keys (id) ON DELETE CASCADE,
        position integer NOT NULL,
        prefix text NOT NULL,
        until timestamptz NOT NULL,
        UNIQUE (key_id, position)
      );

      CREATE TABLE key_changes (
        seq bigint PRIMARY KEY,
        origin text NOT NULL,
        hashes text[] NOT NULL,
        invalid text[]
      );
    `,
  },
  {
    version: 2,
    name: 'dashboard accounts, sign-in tokens and sessions',
    sql: `
      CREATE TABLE accounts (
        id text PRIMARY KEY,
        name text NOT NULL,
        name_key text NOT NULL UNIQUE,
        email text,
        tiers jsonb NOT NULL CHECK (jsonb_typeof(tiers) = 'array'),
        default_tier text NOT NULL,
        created_at timestamptz NOT NULL,
        disabled_at timestamptz,
        deleted_at timestamptz
      );
      CREATE INDEX accounts_by_age ON accounts (created_at, id);

      CREATE TABLE signin_tokens (
        hash text PRIMARY KEY,
        account_id text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX signin_tokens_by_expiry ON signin_tokens (expires_at);

      CREATE TABLE sessions (
        hash text PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('account', 'operator')),
        account_id text,
        grant_digest text,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);
      CREATE INDEX sessions_by_account ON sessions (account_id) WHERE account_id IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: 'usage per key, day and chain',
    sql: `
      CREATE TABLE usage_days (
        key_id text NOT NULL,
        day date NOT NULL,
        chain text NOT NULL,
        calls bigint NOT NULL,
        errors bigint NOT NULL,
        limited bigint NOT NULL,
        invalid bigint NOT NULL,
        PRIMARY KEY (key_id, day, chain)
      );
    `,
  },
  {
    version: 4,
    name: 'operators holds on nodes',
    sql: `
      CREATE TABLE node_holds (
        id text PRIMARY KEY,
        state text NOT NULL CHECK (state IN ('cordoned', 'draining')),
        since timestamptz NOT NULL,
        reason text NOT NULL
      );
    `,
  },
  {
    version: 5,
    name: 'hourly usage rollups and the failed-call log',
    // As the SQLite record's: hour is hours since 1970-01-01T00:00Z, each row added to by
    // every instance's flush, never replaced; le_* count calls that finished within the
    // bound (and above the one before), over_30s the rest; at_ms epoch milliseconds.
    // Neither table holds a key's value, params or bodies.
    sql: `
      CREATE TABLE usage_hours (
        key_id text NOT NULL,
        hour integer NOT NULL,
        chain text NOT NULL,
        method text NOT NULL,
        outcome text NOT NULL,
        account text NOT NULL,
        calls bigint NOT NULL,
        cost bigint NOT NULL,
        node_calls bigint NOT NULL,
        bytes_in bigint NOT NULL,
        bytes_out bigint NOT NULL,
        le_1ms bigint NOT NULL,
        le_2_5ms bigint NOT NULL,
        le_5ms bigint NOT NULL,
        le_10ms bigint NOT NULL,
        le_25ms bigint NOT NULL,
        le_50ms bigint NOT NULL,
        le_100ms bigint NOT NULL,
        le_250ms bigint NOT NULL,
        le_500ms bigint NOT NULL,
        le_1s bigint NOT NULL,
        le_2_5s bigint NOT NULL,
        le_5s bigint NOT NULL,
        le_10s bigint NOT NULL,
        le_30s bigint NOT NULL,
        over_30s bigint NOT NULL,
        PRIMARY KEY (key_id, hour, chain, method, outcome)
      );
      CREATE INDEX usage_hours_by_account ON usage_hours (account, hour);
      CREATE INDEX usage_hours_by_hour ON usage_hours (hour);

      CREATE TABLE failed_calls (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        key_id text NOT NULL,
        at_ms bigint NOT NULL,
        chain text NOT NULL,
        method text NOT NULL,
        outcome text NOT NULL,
        status integer,
        code text,
        node text,
        latency_ms double precision NOT NULL,
        request_id text NOT NULL
      );
      CREATE INDEX failed_calls_by_key ON failed_calls (key_id, at_ms DESC, id DESC);
      CREATE INDEX failed_calls_by_age ON failed_calls (at_ms);
    `,
  },
];

/** Where a record is, for messages. */
const where = (schema: string): string => `PostgreSQL schema "${schema}"`;

/**
 * Creates the schema when absent and brings it up to the last migration; returns the
 * versions this call applied (none when another instance, or an earlier start,
 * applied them).
 */
export async function migratePg(
  transaction: PgTransactions,
  schema: string,
  migrations: readonly Migration[] = PG_MIGRATIONS,
  now: () => number = Date.now,
): Promise<number[]> {
  checkMigrations(migrations);
  const s = quoteIdentifier(schema);
  const tracking = `${s}.schema_migrations`;
  // Under the lock too: two CREATE … IF NOT EXISTS at once can both try, and one fails.
  const lock = (tx: PgSession): Promise<unknown> =>
    tx.query("SELECT pg_advisory_xact_lock(hashtext('noderouter.migrations'), hashtext($1))", [schema]);
  const newest = await transaction(async (tx) => {
    await lock(tx);
    const found = await tx.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    // Created only when absent: CREATE SCHEMA needs a right an existing schema's user may not have.
    if (found.length === 0) await tx.query(`CREATE SCHEMA ${s}`);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${tracking} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`,
    );
    const [row] = await tx.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${tracking}`);
    return row?.v ?? 0;
  });
  const known = migrations.length;
  if (newest > known) {
    throw new RecordSchemaError(
      'RECORD_SCHEMA_NEWER',
      `${where(schema)} has schema version ${newest}, newer than this noderouter knows (${known}): run the noderouter that wrote it, or a newer one`,
    );
  }
  const applied: number[] = [];
  for (const m of migrations) {
    // Skipped without the lock when it was applied before this instance started.
    if (m.version <= newest) continue;
    try {
      const done = await transaction(async (tx) => {
        await lock(tx);
        if ((await tx.query(`SELECT 1 FROM ${tracking} WHERE version = $1`, [m.version])).length > 0) return false;
        // The migration's own statements name tables without the schema.
        await tx.query(`SET LOCAL search_path TO ${s}`);
        await tx.query(m.sql);
        await tx.query(`INSERT INTO ${tracking} (version, name, applied_at) VALUES ($1, $2, $3)`, [
          m.version,
          m.name,
          new Date(now()).toISOString(),
        ]);
        return true;
      });
      if (done) applied.push(m.version);
    } catch (err) {
      throw new RecordSchemaError(
        'RECORD_MIGRATION_FAILED',
        `${where(schema)}: migration ${m.version} (${m.name}) failed: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }
  return applied;
}

/** The versions a schema has applied, in order. */
export async function appliedPgMigrations(db: PgSession, schema: string): Promise<number[]> {
  const rows = await db.query<{ version: number }>(`SELECT version FROM ${quoteIdentifier(schema)}.schema_migrations ORDER BY version`);
  return rows.map((r) => r.version);
}
