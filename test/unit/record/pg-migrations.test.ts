// The record's schema migrations on a real PostgreSQL, a new schema per test: several
// instances (pools, and processes of their own) opening one new schema at the same
// moment apply each migration once between them; a schema is brought forward from
// where an older noderouter left it, kept as it is when up to date, and refused when a
// newer noderouter wrote it; a migration that fails leaves nothing half done. The
// migrations are the SQLite record's, version for version, in PostgreSQL's types, and
// two records in one database stay apart.

import { expect } from 'chai';
import pg from 'pg';
import { hashKey } from '../../../src/auth/key-format.js';
import { MIGRATIONS, RecordSchemaError, type Migration } from '../../../src/record/migrations.js';
import { PgDatabase } from '../../../src/record/pg-database.js';
import { openPgKeyStore } from '../../../src/record/pg-key-store.js';
import { appliedPgMigrations, PG_MIGRATIONS } from '../../../src/record/pg-migrations.js';
import { PG_URL, tempSchema, type TempSchema } from '../../support/pg.js';
import { runTogether } from '../../support/record.js';

const ALL = PG_MIGRATIONS.map((m) => m.version);

async function tables(schema: TempSchema): Promise<string[]> {
  const rows = await schema.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY tablename', [
    schema.schema,
  ]);
  return rows.map((r) => r.name);
}

async function refusal(p: Promise<unknown>): Promise<RecordSchemaError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof RecordSchemaError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('record: schema migrations (PostgreSQL)', () => {
  let schema: TempSchema;
  beforeEach(async () => {
    schema = await tempSchema();
  });
  afterEach(() => schema.cleanup());

  it('numbers and names its migrations as the SQLite record does', () => {
    expect(PG_MIGRATIONS.map((m) => [m.version, m.name])).to.deep.equal(MIGRATIONS.map((m) => [m.version, m.name]));
  });

  it('applies each migration exactly once when six instances open one new schema at the same moment', async () => {
    const opened = await Promise.all(Array.from({ length: 6 }, () => schema.open()));
    const applied = opened.flatMap((db) => db.applied).sort((a, b) => a - b);
    expect(applied).to.deep.equal(ALL);
    expect(await appliedPgMigrations(opened[0] as PgDatabase, schema.schema)).to.deep.equal(ALL);
    expect(await tables(schema)).to.include.members([
      'keys',
      'retired_key_values',
      'key_changes',
      'accounts',
      'sessions',
      'usage_days',
      'node_holds',
    ]);
  });

  it('applies each migration exactly once when four processes open one new schema at the same moment', async () => {
    const results = (await runTogether(Array.from({ length: 4 }, () => ['pg-open', PG_URL, schema.schema]))) as Array<{
      applied: number[];
    }>;
    expect(results.flatMap((r) => r.applied).sort((a, b) => a - b)).to.deep.equal(ALL);
    expect((await schema.open()).applied).to.deep.equal([]);
  });

  it('applies nothing when the schema is up to date, and keeps what it holds', async () => {
    const first = await schema.open();
    expect(first.applied).to.deep.equal(ALL);
    const { record: key, value } = await (await openPgKeyStore(first)).create({ account: 'acme', tier: 'free' });
    const again = await schema.open();
    expect(again.applied).to.deep.equal([]);
    expect((await (await openPgKeyStore(again)).findByHash(hashKey(value)))?.record.id).to.equal(key.id);
  });

  it('brings a schema an older noderouter wrote forward, applying only what it lacks, in PostgreSQL types', async () => {
    const older = await schema.open({ migrations: PG_MIGRATIONS.slice(0, 2) });
    expect(older.applied).to.deep.equal([1, 2]);
    expect(await tables(schema)).to.not.include('usage_days');
    const now = await schema.open();
    expect(now.applied).to.deep.equal(ALL.slice(2));
    const types = await schema.query<{ column: string; type: string }>(
      `SELECT table_name || '.' || column_name AS column, data_type AS type FROM information_schema.columns
       WHERE table_schema = $1 AND (table_name, column_name) IN (('keys', 'created_at'), ('keys', 'permissions'), ('keys', 'last_used_ms'),
         ('key_changes', 'hashes'), ('usage_days', 'day'), ('usage_days', 'calls')) ORDER BY 1`,
      [schema.schema],
    );
    expect(types).to.deep.equal([
      { column: 'key_changes.hashes', type: 'ARRAY' },
      { column: 'keys.created_at', type: 'timestamp with time zone' },
      { column: 'keys.last_used_ms', type: 'bigint' },
      { column: 'keys.permissions', type: 'jsonb' },
      { column: 'usage_days.calls', type: 'bigint' },
      { column: 'usage_days.day', type: 'date' },
    ]);
  });

  it('refuses a schema a newer noderouter wrote, saying so', async () => {
    const newer: Migration = { version: PG_MIGRATIONS.length + 1, name: 'from the future', sql: 'CREATE TABLE later (x integer)' };
    await schema.open({ migrations: [...PG_MIGRATIONS, newer] });
    const err = await refusal(schema.open());
    expect(err.code).to.equal('RECORD_SCHEMA_NEWER');
    expect(err.message).to.equal(
      `PostgreSQL schema "${schema.schema}" has schema version ${PG_MIGRATIONS.length + 1}, newer than this noderouter knows ` +
        `(${PG_MIGRATIONS.length}): run the noderouter that wrote it, or a newer one`,
    );
  });

  it('leaves nothing of a migration that fails, and names it', async () => {
    const broken: Migration = {
      version: PG_MIGRATIONS.length + 1,
      name: 'half a change',
      sql: 'CREATE TABLE half (x integer); INSERT INTO no_such_table VALUES (1);',
    };
    const err = await refusal(schema.open({ migrations: [...PG_MIGRATIONS, broken] }));
    expect(err.code).to.equal('RECORD_MIGRATION_FAILED');
    expect(err.message).to.match(
      new RegExp(`migration ${broken.version} \\(half a change\\) failed: relation "no_such_table" does not exist`),
    );
    // What came before it stayed; the failed one left no table and no row.
    expect(await appliedPgMigrations(await schema.open(), schema.schema)).to.deep.equal(ALL);
    expect(await tables(schema)).to.not.include('half');
  });

  it('refuses a schema name it cannot use, before connecting', async () => {
    const err = await refusal(PgDatabase.open('postgres://nowhere.invalid/none', { schema: 'no-such"name' }));
    expect(err.code).to.equal('RECORD_SCHEMA_NAME');
    expect(err.message).to.match(/^"no-such"name" cannot name the record's schema: use letters, digits and _/);
  });

  it('opens over a pool its caller owns, and leaves it open when closed', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      const db = await PgDatabase.open(pool, { schema: schema.schema });
      expect(db.applied).to.deep.equal(ALL);
      await (await openPgKeyStore(db)).create({ account: 'acme', tier: 'free' });
      await db.close();
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${schema.table('keys')}`)).rows).to.deep.equal([{ n: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it('keeps two records in one database apart', async () => {
    const other = await tempSchema();
    try {
      const here = await openPgKeyStore(await schema.open());
      const there = await openPgKeyStore(await other.open());
      const { value } = await here.create({ account: 'acme', tier: 'free' });
      expect(await here.findByHash(hashKey(value))).to.not.equal(undefined);
      expect(await there.findByHash(hashKey(value))).to.equal(undefined);
    } finally {
      await other.cleanup();
    }
  });
});
