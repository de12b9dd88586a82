// The bench's PostgreSQL records (issue #31, point 5): a schema of the bench's own per
// gateway on BENCH_PG_URL (default: the test server, 127.0.0.1:5432, trust auth,
// database `test`), migrated by the record's own code, then the keys written before the
// gateway starts, and every schema dropped at the end of the run. A large key count is
// written by one INSERT … SELECT over generate_series (synthetic hashes no client holds,
// as other customers' keys are to the load), then the bench's real keys through the
// record's own writer, so 1 000 000 keys take seconds, not the minutes a row per
// statement would.

import pg from 'pg';
import type { KeyRecord } from '../src/auth/key-store.js';
import { redactUrl } from '../src/config/redact.js';
import { PgDatabase } from '../src/record/pg-database.js';
import { writePgRows } from '../src/record/pg-rows.js';

export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const created: string[] = [];

/** A new schema's name for one gateway (created by the record when it opens). */
export function pgSchema(): string {
  const name = `nrbench_${process.pid}_${created.length + 1}`;
  created.push(name);
  return name;
}

/** `store.record` of a gateway on `schema`. */
export function pgRecordConfig(schema: string): string {
  return `{ kind: postgres, url: "${PG_URL}", schema: ${schema}, poolSize: 4 }`;
}

/** Undefined when PostgreSQL answers at PG_URL; otherwise why not. */
export async function pgUnreachable(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (err) {
    return `PostgreSQL is not answering at ${redactUrl(PG_URL)} (${err instanceof Error ? err.message : String(err)})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The record on `schema` with `synthetic` keys no client holds and `keys` (the bench's
 * own), migrated by the record's code; the table is vacuumed and its planner statistics
 * taken after the bulk insert, as autovacuum would soon after in service (left to
 * autovacuum, it runs on the bench's cores while the gateways are measured).
 */
export async function pgStore(schema: string, synthetic: number, keys: readonly KeyRecord[]): Promise<void> {
  const db = await PgDatabase.open({ connectionString: PG_URL, max: 1 }, { schema });
  try {
    if (synthetic > 0) {
      await db.query(
        `INSERT INTO ${db.table('keys')} (id, hash, prefix, account, tier, label, permissions, created_at)
         SELECT 'key_bench' || i, encode(sha256(('bench-' || i)::bytea), 'hex'), 'nrk_' || substr(md5(i::text), 1, 4),
           'a' || (i % 1000), 'bench', '', '{"chains":["*"],"allow":["*"],"deny":[]}'::jsonb, now()
         FROM generate_series(1, ${Math.floor(synthetic)}) AS i`,
      );
    }
    await writePgRows(
      db,
      keys.map((key) => ({ kind: 'key', key })),
    );
    await db.query(`VACUUM (ANALYZE) ${db.table('keys')}`);
  } finally {
    await db.close();
  }
}

/** Drops every schema this run created (the gateways on them stopped first). */
export async function dropPgSchemas(): Promise<void> {
  if (created.length === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  client.on('error', () => undefined);
  try {
    await client.connect();
    for (const schema of created.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** What the gateways did to a record's tables so far, from PostgreSQL's statistics (sent by each backend within a second). */
export interface RecordActivity {
  /** Scans of its tables, sequential or by an index: lookups and reads of any kind. */
  readonly reads: number;
  /** Rows inserted, updated or deleted. */
  readonly writes: number;
}

export async function recordActivity(schema: string): Promise<RecordActivity> {
  const client = new pg.Client({ connectionString: PG_URL });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ reads: string | null; writes: string | null }>(
      `SELECT sum(seq_scan + coalesce(idx_scan, 0)) AS reads, sum(n_tup_ins + n_tup_upd + n_tup_del) AS writes
       FROM pg_stat_user_tables WHERE schemaname = $1`,
      [schema],
    );
    return { reads: Number(rows[0]?.reads ?? 0), writes: Number(rows[0]?.writes ?? 0) };
  } finally {
    await client.end().catch(() => undefined);
  }
}
