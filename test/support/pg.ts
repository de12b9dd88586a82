// PostgreSQL records for tests: the test server (127.0.0.1:5432, trust auth, database
// `test`; NODEROUTER_TEST_PG_URL names another), a schema of its own per test with a
// random name, opened as many times as a test needs instances (each open is a pool of
// its own, as another machine would hold), every pool ended and the schema dropped
// afterwards. A server that is not answering fails the test, naming the fix: the
// tests never skip what they cannot check.

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PgDatabase, type PgOptions } from '../../src/record/pg-database.js';

export const PG_URL = process.env.NODEROUTER_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Connections each test instance opens at most: many instances fit the server's limit. */
const INSTANCE_POOL_MAX = 4;

export interface TempSchema {
  readonly schema: string;
  /** A new instance on the schema: a pool of its own (migrations applied at open). */
  open(options?: Omit<PgOptions, 'schema'>): Promise<PgDatabase>;
  /** A statement run by the test itself, outside any instance (names tables with the schema). */
  query<R>(text: string, values?: readonly unknown[]): Promise<R[]>;
  /** The schema-qualified name of a table, for the test's own statements. */
  table(name: string): string;
  /** Ends every pool opened here and drops the schema. */
  cleanup(): Promise<void>;
}

/** No server to talk to (refused, no such host or database, not let in). */
const isUnreachable = (err: unknown): boolean =>
  ['ECONNREFUSED', 'ENOTFOUND', '3D000', '28000'].includes(String((err as { code?: unknown }).code));

function unreachable(err: unknown): Error {
  if (isUnreachable(err)) {
    return new Error(
      `PostgreSQL is not answering at ${PG_URL} (${(err as Error).message}): start it ` +
        '(`pg_ctlcluster --skip-systemctl-redirect <version> main start`; bash .ci/run starts it when it is not answering)',
      { cause: err },
    );
  }
  return err instanceof Error ? err : new Error(String(err));
}

export async function tempSchema(): Promise<TempSchema> {
  const schema = `nrtest_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1, allowExitOnIdle: true });
  admin.on('error', () => undefined);
  const opened: PgDatabase[] = [];
  const quoted = `"${schema}"`;
  return {
    schema,
    async open(options = {}) {
      try {
        const db = await PgDatabase.open({ connectionString: PG_URL, max: INSTANCE_POOL_MAX }, { ...options, schema });
        opened.push(db);
        return db;
      } catch (err) {
        throw unreachable(err);
      }
    },
    async query<R>(text: string, values?: readonly unknown[]) {
      try {
        return (await admin.query(text, values as unknown[] | undefined)).rows as R[];
      } catch (err) {
        throw unreachable(err);
      }
    },
    table: (name) => `${quoted}."${name}"`,
    async cleanup() {
      await Promise.all(opened.map((db) => db.close()));
      try {
        await admin.query(`DROP SCHEMA IF EXISTS ${quoted} CASCADE`);
      } catch (err) {
        // Without a server there is nothing to drop; the test has failed already, saying why.
        if (!isUnreachable(err)) throw err;
      } finally {
        await admin.end();
      }
    },
  };
}
