// Opening the record named by `store.record`: accounts, key hashes and settings,
// restrictions, sign-in tokens and sessions, the usage archive and operators' holds,
// all on one database. SQLite: one file in WAL mode, its migrations applied on open (a
// primary and its workers, or the CLI beside a gateway, share it). PostgreSQL: a pool
// per process (each cluster worker opens its own), the schema migrated on open, shared
// by every instance. Also the record's rows read and written whole, for the `store`
// commands. The hot state is open-hot.ts's.

import type { AccountStore } from '../accounts/account-store.js';
import type { KeyRepository } from '../auth/key-repository.js';
import { recordName } from '../config/store-config.js';
import type { PostgresRecordConfig, RecordConfig } from '../config/types.js';
import type { HoldStore } from '../ops/holds/hold-store.js';
import type { UsageArchive, UsageBook } from '../quota/usage.js';
import type { UsageHistory } from '../quota/usage-history.js';
import { PgAccountStore } from '../record/pg-account-store.js';
import { PgDatabase } from '../record/pg-database.js';
import { PgHoldStore } from '../record/pg-holds.js';
import { openPgKeyStore } from '../record/pg-key-store.js';
import { PgUsageHistory } from '../record/pg-usage-history.js';
import { PgUsageStore } from '../record/pg-usage-store.js';
import { SqliteAccountStore } from '../record/sqlite-account-store.js';
import { SqliteDatabase } from '../record/sqlite-database.js';
import { SqliteHoldStore } from '../record/sqlite-holds.js';
import { openSqliteKeyStore } from '../record/sqlite-key-store.js';
import { SqliteUsageHistory } from '../record/sqlite-usage-history.js';
import { SqliteUsageStore } from '../record/sqlite-usage-store.js';
import type { RecordRows } from '../record/record-rows.js';
import { sqliteRows } from '../record/sqlite-rows.js';
import { pgRows } from '../record/pg-rows.js';

export interface RecordParts {
  readonly kind: RecordConfig['kind'];
  readonly keys: KeyRepository;
  /** Dashboard accounts, sign-in tokens and sessions. */
  readonly accounts: AccountStore;
  /** Operators' holds on nodes (cordon, drain). */
  readonly holds: HoldStore;
  /** Where a memory limiter keeps its usage book between runs. */
  readonly usage: (book: UsageBook) => UsageArchive;
  /** Usage history (hourly rollups, the failed-call log), written by this process on its own connection. */
  readonly history: UsageHistory;
  /** After everything opened over it (the usage archive flushes into it on close). */
  close(): Promise<void>;
}

export interface OpenRecordOptions {
  /** The gateway reads other processes' key changes; the CLI only writes. */
  readonly live: boolean;
  readonly now?: () => number;
}

export async function openRecord(config: RecordConfig, options: OpenRecordOptions): Promise<RecordParts> {
  return config.kind === 'postgres' ? openPgRecord(config, options) : openSqliteRecord(config.path, options);
}

/** The pool's settings: at most `poolSize` connections, to the URL's database. */
export function pgTarget(config: PostgresRecordConfig): { connectionString: string; max: number } {
  return { connectionString: config.url, max: config.poolSize };
}

async function openPgRecord(config: PostgresRecordConfig, options: OpenRecordOptions): Promise<RecordParts> {
  const db = await PgDatabase.open(pgTarget(config), { schema: config.schema, now: options.now });
  try {
    // Key records are stamped in real time (rotation grace, revocation), as operators read them.
    const keys = await openPgKeyStore(db, { live: options.live });
    const accounts = new PgAccountStore(db, options.now);
    const holds = new PgHoldStore(db);
    return {
      kind: 'postgres',
      keys,
      accounts,
      holds,
      usage: (book) => new PgUsageStore(book, db),
      history: new PgUsageHistory(db),
      close: async () => {
        await keys.close();
        await accounts.close();
        await holds.close();
        await db.close();
      },
    };
  } catch (err) {
    await db.close();
    throw err;
  }
}

function openSqliteRecord(path: string, options: OpenRecordOptions): RecordParts {
  const db = SqliteDatabase.open(path, { now: options.now });
  // Key records are stamped in real time (rotation grace, revocation), as operators read them.
  const keys = openSqliteKeyStore(db, { live: options.live });
  const accounts = new SqliteAccountStore(db, options.now);
  const holds = new SqliteHoldStore(db);
  return {
    kind: 'sqlite',
    keys,
    accounts,
    holds,
    usage: (book) => new SqliteUsageStore(book, db),
    history: new SqliteUsageHistory(db),
    close: async () => {
      await keys.close();
      await accounts.close();
      await holds.close();
      db.close();
    },
  };
}

/** The record's rows read and written whole (the `store` commands), its migrations applied. */
export async function openRecordRows(config: RecordConfig): Promise<RecordRows> {
  if (config.kind === 'sqlite') return sqliteRows(config.path);
  return pgRows(await PgDatabase.open(pgTarget(config), { schema: config.schema }), recordName(config).replace(/^postgres /, ''));
}
