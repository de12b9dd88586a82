// The record in PostgreSQL, for many instances: a connection pool, the schema every
// table lives in (created when missing; one database can hold several records, tests
// use one per run) and the schema brought up to date before anything reads it. Every
// statement names its tables with the schema (no search_path), so any pool will do,
// pgbouncer's transaction pooling included; a statement with parameters is prepared
// once per connection, under a name taken from its text. Values come back as the
// SQLite record gives them: times as ISO text, bigints as numbers, JSON as its text,
// dates as 'YYYY-MM-DD'. It owns the connection, not what the tables mean.

import { createHash } from 'node:crypto';
import pg from 'pg';
import { RecordSchemaError, type Migration } from './migrations.js';
import { migratePg, PG_MIGRATIONS, quoteIdentifier, type PgSession } from './pg-migrations.js';

export type { PgSession } from './pg-migrations.js';

/** A connection string, a pool's settings, or a pool (which the caller ends, after the record). */
export type PgTarget = string | pg.PoolConfig | pg.Pool;

export interface PgOptions {
  /** The schema that holds the record's tables (created when missing). */
  readonly schema?: string;
  /** The schema to bring the record to (tests give their own). */
  readonly migrations?: readonly Migration[];
  readonly now?: () => number;
}

export const DEFAULT_PG_SCHEMA = 'noderouter';

/** Connections a record's pool opens at most, unless its settings say. */
const POOL_MAX = 10;
/** A database that cannot be reached fails a call after this, instead of holding it. */
const CONNECT_TIMEOUT_MS = 5_000;

const OID = { int8: 20, json: 114, date: 1082, timestamptz: 1184, jsonb: 3802 } as const;
const parseTimestamp = pg.types.getTypeParser(OID.timestamptz) as (text: string) => Date | number;

/** As the SQLite record's values: the stores map one kind of row to records. */
function typeParser(oid: number, format?: string): unknown {
  switch (oid) {
    // Counts and epoch milliseconds, far below 2^53.
    case OID.int8:
      return (text: string) => Number(text);
    case OID.json:
    case OID.jsonb:
    case OID.date:
      return (text: string) => text;
    case OID.timestamptz:
      return (text: string) => {
        const t = parseTimestamp(text);
        return new Date(t).toISOString();
      };
    default:
      return pg.types.getTypeParser(oid, format as 'text' | undefined);
  }
}
const TYPES = { getTypeParser: typeParser } as pg.CustomTypesConfig;

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Runs statements on one connection, or on any of the pool's. */
class Session implements PgSession {
  constructor(
    private readonly on: pg.Pool | pg.PoolClient,
    private readonly names: Map<string, string>,
  ) {}

  async query<R>(text: string, values?: readonly unknown[]): Promise<R[]> {
    if (values === undefined) return (await this.on.query({ text, types: TYPES })).rows as R[];
    let name = this.names.get(text);
    if (name === undefined) {
      name = `nr_${createHash('sha256').update(text).digest('hex').slice(0, 40)}`;
      this.names.set(text, name);
    }
    return (await this.on.query({ name, text, values: values as unknown[], types: TYPES })).rows as R[];
  }
}

export class PgDatabase implements PgSession {
  private readonly names = new Map<string, string>();
  private readonly session: Session;
  private closed = false;

  private constructor(
    readonly pool: pg.Pool,
    private readonly ownsPool: boolean,
    readonly schema: string,
    /** The migrations this open applied (none when the schema was up to date). */
    readonly applied: readonly number[],
  ) {
    this.session = new Session(pool, this.names);
  }

  /** Connects, creates the schema when absent and applies the migrations it lacks. */
  static async open(target: PgTarget, options: PgOptions = {}): Promise<PgDatabase> {
    const schema = options.schema ?? DEFAULT_PG_SCHEMA;
    if (!SCHEMA_NAME.test(schema)) {
      throw new RecordSchemaError(
        'RECORD_SCHEMA_NAME',
        `"${schema}" cannot name the record's schema: use letters, digits and _ (at most 63, not starting with a digit)`,
      );
    }
    const ownsPool = !(target instanceof pg.Pool);
    const pool = target instanceof pg.Pool ? target : newPool(target);
    try {
      const names = new Map<string, string>();
      const applied = await migratePg((fn) => transaction(pool, names, fn), schema, options.migrations ?? PG_MIGRATIONS, options.now);
      return new PgDatabase(pool, ownsPool, schema, applied);
    } catch (err) {
      if (ownsPool) await pool.end();
      throw err;
    }
  }

  /** The schema-qualified, quoted name of a table, for statement text. */
  table(name: string): string {
    return `${quoteIdentifier(this.schema)}.${quoteIdentifier(name)}`;
  }

  query<R>(text: string, values?: readonly unknown[]): Promise<R[]> {
    return this.session.query<R>(text, values);
  }

  /** `fn` on one connection, in one transaction: committed when it returns, rolled back when it throws. */
  transaction<T>(fn: (tx: PgSession) => Promise<T>): Promise<T> {
    return transaction(this.pool, this.names, fn);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.pool.end();
  }
}

function newPool(target: string | pg.PoolConfig): pg.Pool {
  const config: pg.PoolConfig = typeof target === 'string' ? { connectionString: target } : target;
  const pool = new pg.Pool({
    max: POOL_MAX,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // An idle pool keeps no process alive (the CLI ends when its work does).
    allowExitOnIdle: true,
    ...config,
  });
  // An idle connection the server ends (a restart, a failover) is dropped from the
  // pool; without a listener the error would end the process.
  pool.on('error', () => undefined);
  return pool;
}

async function transaction<T>(pool: pg.Pool, names: Map<string, string>, fn: (tx: PgSession) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(new Session(client, names));
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((e: unknown) => {
      // A connection that cannot roll back is not given to anyone else.
      broken = e instanceof Error ? e : new Error(String(e));
    });
    throw err;
  } finally {
    client.release(broken);
  }
}
