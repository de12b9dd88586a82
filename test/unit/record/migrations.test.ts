// The record's schema migrations on real SQLite files: several processes opening one
// new file at the same moment apply each migration once between them; a file is
// brought forward from where an older noderouter left it, kept as it is when up to
// date, and refused when a newer noderouter wrote it; a migration that fails leaves
// nothing half done. The file is private and in WAL mode.

import { expect } from 'chai';
import { stat } from 'node:fs/promises';
import { appliedMigrations, checkMigrations, MIGRATIONS, RecordSchemaError, type Migration } from '../../../src/record/migrations.js';
import type { SqliteDatabase } from '../../../src/record/sqlite-database.js';
import { openSqliteKeyStore } from '../../../src/record/sqlite-key-store.js';
import { hashKey } from '../../../src/auth/key-format.js';
import { runTogether, tempRecord, type TempRecord } from '../../support/record.js';

const ALL = MIGRATIONS.map((m) => m.version);

function tables(db: SqliteDatabase): string[] {
  return db.db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all()
    .map((r) => r.name);
}

function refusal(fn: () => unknown): RecordSchemaError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RecordSchemaError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('record: schema migrations (SQLite)', () => {
  let record: TempRecord;
  beforeEach(async () => {
    record = await tempRecord();
  });
  afterEach(() => record.cleanup());

  it('applies each migration exactly once when six processes open one new file at the same moment', async () => {
    const results = (await runTogether(Array.from({ length: 6 }, () => ['open', record.path]))) as Array<{ applied: number[] }>;
    const applied = results.flatMap((r) => r.applied).sort((a, b) => a - b);
    expect(applied).to.deep.equal(ALL);
    const db = record.open();
    expect(db.applied).to.deep.equal([]);
    expect(appliedMigrations(db.db)).to.deep.equal(ALL);
    expect(tables(db)).to.include.members(['keys', 'retired_key_values', 'accounts', 'sessions', 'usage_days', 'node_holds']);
  });

  it('applies nothing when the file is up to date, and keeps what it holds', async () => {
    const first = record.open();
    expect(first.applied).to.deep.equal(ALL);
    const { record: key, value } = await openSqliteKeyStore(first).create({ account: 'acme', tier: 'free' });
    first.close();
    const again = record.open();
    expect(again.applied).to.deep.equal([]);
    expect((await openSqliteKeyStore(again).findByHash(hashKey(value)))?.record.id).to.equal(key.id);
  });

  it('brings a file an older noderouter wrote forward, applying only what it lacks', async () => {
    const older = record.open({ migrations: MIGRATIONS.slice(0, 2) });
    expect(older.applied).to.deep.equal([1, 2]);
    expect(tables(older)).to.not.include('usage_days');
    older.close();
    const now = record.open();
    expect(now.applied).to.deep.equal(ALL.slice(2));
    expect(tables(now)).to.include('usage_days');
  });

  it('refuses a file a newer noderouter wrote, saying so', async () => {
    const newer: Migration = { version: MIGRATIONS.length + 1, name: 'from the future', sql: 'CREATE TABLE later (x INTEGER) STRICT' };
    record.open({ migrations: [...MIGRATIONS, newer] }).close();
    const err = refusal(() => record.open());
    expect(err.code).to.equal('RECORD_SCHEMA_NEWER');
    expect(err.message).to.contain(`has schema version ${MIGRATIONS.length + 1}, newer than this noderouter knows (${MIGRATIONS.length})`);
  });

  it('leaves nothing of a migration that fails, and names it', async () => {
    const broken: Migration = {
      version: MIGRATIONS.length + 1,
      name: 'half a change',
      sql: 'CREATE TABLE half (x INTEGER) STRICT; INSERT INTO no_such_table VALUES (1);',
    };
    const err = refusal(() => record.open({ migrations: [...MIGRATIONS, broken] }));
    expect(err.code).to.equal('RECORD_MIGRATION_FAILED');
    expect(err.message).to.match(new RegExp(`migration ${broken.version} \\(half a change\\) failed: no such table: no_such_table`));
    // What came before it stayed; the failed one left no table and no row.
    const db = record.open();
    expect(appliedMigrations(db.db)).to.deep.equal(ALL);
    expect(tables(db)).to.not.include('half');
  });

  it('takes only migrations numbered 1, 2, 3 … in order', () => {
    expect(() => checkMigrations(MIGRATIONS)).to.not.throw();
    const [one, , three] = MIGRATIONS as [Migration, Migration, Migration];
    expect(() => checkMigrations([one, three])).to.throw('migration "usage per key, day and chain" is numbered 3 where 2 was expected');
  });

  it('keeps the file private, in WAL mode, with foreign keys enforced', async () => {
    const db = record.open();
    expect(db.db.pragma('journal_mode', { simple: true })).to.equal('wal');
    expect(db.db.pragma('foreign_keys', { simple: true })).to.equal(1);
    await openSqliteKeyStore(db).create({ account: 'acme', tier: 'free' });
    for (const file of [record.path, `${record.path}-wal`]) expect((await stat(file)).mode & 0o777, file).to.equal(0o600);
  });
});
