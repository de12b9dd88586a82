// A gateway killed (SIGKILL) while a usage flush is under way, on a SQLite record and on
// a PostgreSQL one, as `noderouter serve` runs: the test holds the record's write lock
// (SQLite: a transaction of its own begun IMMEDIATE; PostgreSQL: LOCK TABLE on the
// history in an open transaction), so the gateway's flush is stuck waiting for it, and
// the gateway keeps serving meanwhile. After the kill and the lock's release the
// history holds exactly the calls of the flushes written before (every row whole), the
// record opens cleanly (`store migrate` finds it up to date, a new gateway serves on
// it), and a graceful stop then loses nothing.

import BetterSqlite3 from 'better-sqlite3';
import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { LATENCY_COLUMNS } from '../../src/record/usage-history-rows.js';
import { runCli } from '../support/cli.js';
import { configYaml, storeYaml } from '../support/harness.js';
import { PG_URL, tempSchema, type TempSchema } from '../support/pg.js';
import { serve, type Served } from '../support/serve.js';
import { until } from '../support/until.js';

const TOKEN = 'usage-crash-admin-token-0123456789';
const TIERS = `
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 100, archive: true }
`;
const CALL = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };
/** What a flush that could not write logs (its calls go with the next write). */
const NOT_WRITTEN = 'usage history not written';

/** A key's rollups, each row's counts: an eth_blockNumber call adds one to each of them. */
interface Counted {
  readonly calls: number;
  readonly cost: number;
  readonly nodeCalls: number;
  /** The row's latency histogram, summed. */
  readonly timed: number;
}

const ROW_SQL = (table: string, param: string): string =>
  `SELECT calls, cost, node_calls AS "nodeCalls", ${LATENCY_COLUMNS.join(' + ')} AS timed FROM ${table} WHERE key_id = ${param}`;

/** A record, as the test reaches it beside the gateway. */
interface RecordSide {
  /** The `store:` mapping of the gateway's config. */
  readonly storeYaml: string;
  /** The key's rows in usage_hours. */
  rows(keyId: string): Promise<Counted[]>;
  /** Takes the write lock the gateway's flush needs, and keeps it. */
  hold(): Promise<void>;
  /** Resolves once the gateway's flush is waiting for the held lock. */
  flushWaits(served: Served): Promise<void>;
  /** Whether the flush still waits (with the lock still held). */
  stillWaits(served: Served): Promise<boolean>;
  /** Lets the lock go; resolves once nothing the killed gateway began is left in the record. */
  release(): Promise<void>;
  /** The record's own check that nothing was left broken. */
  intact(): Promise<void>;
  /** The `store migrate` line that says the record is up to date. */
  readonly upToDate: RegExp;
  cleanup(): Promise<void>;
}

async function sqliteSide(dir: string): Promise<RecordSide> {
  const path = join(dir, 'record.sqlite');
  let holder: BetterSqlite3.Database | undefined;
  let reader: BetterSqlite3.Database | undefined;
  const read = (): BetterSqlite3.Database => (reader ??= new BetterSqlite3(path, { readonly: true }));
  const warnings = (served: Served): number => served.out().split(NOT_WRITTEN).length - 1;
  let seen = 0;
  return {
    storeYaml: storeYaml(path),
    rows: async (keyId) => read().prepare(ROW_SQL('usage_hours', '?')).all(keyId) as Counted[],
    async hold() {
      holder = new BetterSqlite3(path);
      holder.exec('BEGIN IMMEDIATE');
    },
    // The flush tries for the lock on timers for the busy timeout (5 s) and then gives
    // up, saying so, its rows kept: the flushes queued behind it meanwhile (one per
    // second) start the moment it has, so once it has said so another is waiting.
    async flushWaits(served) {
      await until(() => warnings(served) > 0, { what: 'a flush gives up waiting for the lock', timeoutMs: 15_000, everyMs: 20 });
      seen = warnings(served);
    },
    stillWaits: async (served) => warnings(served) === seen,
    async release() {
      holder?.exec('ROLLBACK');
      holder?.close();
      holder = undefined;
    },
    async intact() {
      expect(read().pragma('integrity_check', { simple: true })).to.equal('ok');
    },
    upToDate: /^record \S+ \(sqlite\): schema version \d+ \(up to date\)$/m,
    async cleanup() {
      holder?.close();
      reader?.close();
    },
  };
}

async function postgresSide(): Promise<RecordSide> {
  const schema: TempSchema = await tempSchema();
  const table = schema.table('usage_hours');
  let holder: pg.Client | undefined;
  /** The backend of the gateway's flush, waiting for the lock. */
  let waiter: number | undefined;
  const warnings = (served: Served): number => served.out().split(NOT_WRITTEN).length - 1;
  let seen = 0;
  const waiting = async (): Promise<number | undefined> => {
    const [row] = await schema.query<{ pid: number }>(
      `SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.relation = to_regclass($1) AND NOT l.granted AND a.wait_event_type = 'Lock' AND a.query LIKE 'INSERT INTO%'`,
      [table],
    );
    return row?.pid;
  };
  return {
    storeYaml: `{ record: { kind: postgres, url: "${PG_URL}", schema: ${schema.schema} }, hot: { kind: memory } }`,
    rows: (keyId) => schema.query<Counted>(ROW_SQL(table, '$1'), [keyId]),
    async hold() {
      holder = new pg.Client({ connectionString: PG_URL });
      await holder.connect();
      await holder.query('BEGIN');
      // What an INSERT needs (ROW EXCLUSIVE) conflicts with EXCLUSIVE; readers do not.
      await holder.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
    },
    // A flush behind the lock gives up after its lock_timeout (5 s), saying so, its rows
    // kept; the next one (a second later) waits inside its transaction again.
    async flushWaits(served) {
      await until(() => warnings(served) > 0, { what: 'a flush gives up waiting for the lock', timeoutMs: 15_000, everyMs: 20 });
      seen = warnings(served);
      await until(async () => (waiter = await waiting()) !== undefined, {
        what: "the gateway's next flush waits for the lock inside its transaction",
        timeoutMs: 5_000,
        everyMs: 20,
      });
    },
    stillWaits: async (served) => warnings(served) === seen && (await waiting()) === waiter,
    // The killed gateway's backend gets the lock, runs its INSERT, finds its client gone
    // and ends, its transaction rolled back, never committed.
    async release() {
      await holder?.query('ROLLBACK');
      await holder?.end();
      holder = undefined;
      await until(async () => (await schema.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [waiter])).length === 0, {
        what: "the killed gateway's backend ends",
      });
    },
    // No transaction is left holding or waiting on the history.
    async intact() {
      expect(await schema.query('SELECT pid FROM pg_locks WHERE relation = to_regclass($1)', [table])).to.deep.equal([]);
    },
    upToDate: new RegExp(`^record \\S+, schema ${schema.schema} \\(postgres\\): schema version \\d+ \\(up to date\\)$`, 'm'),
    async cleanup() {
      await holder?.end();
      await schema.cleanup();
    },
  };
}

/** One POST on a connection of its own. */
function call(url: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close', apikey: key } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(CALL));
  });
}

async function calls(served: Served, key: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push(await call(`${served.url}/l1`, key));
  return statuses;
}

const sum = (rows: readonly Counted[], k: keyof Counted): number => rows.reduce((n, r) => n + Number(r[k]), 0);

const sides: Array<[string, (dir: string) => Promise<RecordSide>]> = [
  ['SQLite', sqliteSide],
  ['PostgreSQL', () => postgresSide()],
];

for (const [name, open] of sides) {
  describe(`a gateway killed during a usage flush: ${name} record`, function () {
    this.timeout(120_000);
    let devnet: Devnet;
    let dir: string;
    let file: string;
    let side: RecordSide;
    let served: Served | undefined;

    beforeEach(async () => {
      devnet = await startDevnet([{ network: 'l1', family: 'evm', name: 'c-full-1', role: 'full' }], { blockTimeMs: 0, noControl: true });
      dir = await mkdtemp(join(tmpdir(), 'noderouter-usage-crash-'));
      side = await open(dir);
      file = join(dir, 'gateway.yaml');
      await writeFile(
        file,
        configYaml(
          [{ name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'c-full-1', role: 'full' }] }],
          new Map([['c-full-1', devnet.node('c-full-1').url]]),
          {
            tiers: TIERS,
            storeYaml: side.storeYaml,
            probeIntervalMs: 600_000,
            adminToken: TOKEN,
            logYaml: '{ level: warn }',
            extraYaml: 'usage: { flushInterval: 1s }',
          },
        ),
      );
    });

    afterEach(async () => {
      if (served !== undefined && served.child.exitCode === null && served.child.signalCode === null) {
        served.child.kill('SIGKILL');
        await served.exited;
      }
      await side.release().catch(() => undefined);
      await side.cleanup();
      await devnet.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('loses only the calls since the last written flush, leaves no row half-written, and the record opens cleanly', async () => {
      served = await serve(['--config', file]);
      const made = await fetch(`${served.admin}/admin/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ account: 'crash', tier: 'enterprise' }),
      });
      expect(made.status).to.equal(201);
      const { key, record } = (await made.json()) as { key: string; record: { id: string } };

      // Written by a flush: what the kill must leave.
      expect(await calls(served, key, 5)).to.deep.equal(Array(5).fill(200));
      await until(async () => sum(await side.rows(record.id), 'calls') === 5, { what: 'a flush writes the first 5 calls' });

      await side.hold();
      expect(await calls(served, key, 7)).to.deep.equal(Array(7).fill(200));
      await side.flushWaits(served);
      // A flush waiting for the record holds up no request.
      expect(await calls(served, key, 3)).to.deep.equal(Array(3).fill(200));
      expect(await side.stillWaits(served)).to.equal(true);

      served.child.kill('SIGKILL');
      expect(await served.exited).to.equal(null);
      await side.release();

      const rows = await side.rows(record.id);
      expect(sum(rows, 'calls')).to.equal(5);
      // Each row whole: its counts from the same calls.
      for (const r of rows) expect([r.cost, r.nodeCalls, r.timed].map(Number)).to.deep.equal([r.calls, r.calls, r.calls].map(Number));
      await side.intact();

      const migrated = await runCli(['store', 'migrate', '--config', file]);
      expect(migrated.stderr).to.equal('');
      expect(migrated.stdout).to.match(side.upToDate);

      // A new gateway on the record serves the key; its graceful stop writes every call it counted.
      served = await serve(['--config', file]);
      expect(served.out()).to.not.include(NOT_WRITTEN);
      expect(await calls(served, key, 2)).to.deep.equal([200, 200]);
      served.child.kill('SIGTERM');
      expect(await served.exited).to.equal(0);
      expect(sum(await side.rows(record.id), 'calls')).to.equal(7);
    });
  });
}
