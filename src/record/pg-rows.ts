// A PostgreSQL record as the `store` commands see it: opened (its schema migrated on
// open) and named with its version. Reading or writing every row (export, import,
// adopting an earlier store) is sqlite-rows.ts's alone so far: here it is refused with
// what works instead, before anything is read or written.

import { ControlError } from '../control-errors.js';
import type { PgDatabase } from './pg-database.js';
import { appliedPgMigrations } from './pg-migrations.js';
import type { RecordRows } from './record-rows.js';

function notYet(what: string): ControlError {
  return new ControlError(
    'INVALID_INPUT',
    `${what} is not available for a PostgreSQL record yet (store migrate without --from is): ` +
      'run it against a SQLite record (store.record: { kind: sqlite, path: … }) instead',
  );
}

/** The rows of an open PostgreSQL record (closed with it). */
export async function pgRows(db: PgDatabase, where: string): Promise<RecordRows> {
  let version = 0;
  try {
    version = (await appliedPgMigrations(db, db.schema)).at(-1) ?? 0;
  } catch (err) {
    await db.close();
    throw err;
  }
  return {
    name: `${where} (postgres)`,
    applied: db.applied,
    version,
    read: () => Promise.reject(notYet('store export')),
    write: () => Promise.reject(notYet('store import (and store migrate --from)')),
    close: () => db.close(),
  };
}
