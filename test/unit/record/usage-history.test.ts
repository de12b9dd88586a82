// Usage history in the SQLite record (src/record/sqlite-usage-history.ts, real files)
// and the PostgreSQL one (src/record/pg-usage-history.ts, a schema per test), written by
// the in-memory rollups (src/quota/usage-rollup.ts): two instances on one record sum
// exactly; a flush upserts each row touched once, however many calls it counted, and
// recording a call touches no table; reads sum per hour, day or range, split and
// filtered by key, account, chain, method and outcome; the failed-call log keeps each
// key's newest N and nothing older than its age, and holds no params, bodies or key
// values; retention drops old hours through the index.

import { expect } from 'chai';
import { HOUR_MS, hourOf, LATENCY_BUCKETS, latencyBucket, type FailedCall, type UsageHistory } from '../../../src/quota/usage-history.js';
import { UsageRollup } from '../../../src/quota/usage-rollup.js';
import { PgUsageHistory } from '../../../src/record/pg-usage-history.js';
import { SqliteUsageHistory } from '../../../src/record/sqlite-usage-history.js';
import { LATENCY_COLUMNS } from '../../../src/record/usage-history-rows.js';
import { tempSchema } from '../../support/pg.js';
import { tempRecord } from '../../support/record.js';

const DAY = 24 * HOUR_MS;
const START = Date.UTC(2026, 2, 30, 12, 0, 0);

interface Backend {
  /** A new instance's history on the same record (a connection, or a pool, of its own). */
  open(): Promise<UsageHistory>;
  /** A table's columns, in order. */
  columns(table: string): Promise<string[]>;
  /** usage_hours' rows and their calls. */
  stored(): Promise<{ n: number; calls: number }>;
  /** usage_hours rows inserted or updated since the last call (the first call: since the record opened). */
  changed(): Promise<number>;
  /** The plan of a retention prune of usage_hours. */
  prunePlan(): Promise<string>;
  cleanup(): Promise<void>;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'SQLite',
    async () => {
      const record = await tempRecord();
      const db = record.open();
      // Rows inserted, updated or deleted on this connection since it opened; the test's instances write on it.
      const total = (): number => (db.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
      let seen = 0;
      let first = true;
      return {
        async open() {
          // The first instance shares the connection whose changes are counted.
          if (!first) return new SqliteUsageHistory(record.open());
          first = false;
          return new SqliteUsageHistory(db);
        },
        columns: async (table) => (db.db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name),
        stored: async () =>
          db.db.prepare('SELECT count(*) AS n, sum(calls) AS calls FROM usage_hours').get() as { n: number; calls: number },
        async changed() {
          const now = total();
          const n = now - seen;
          seen = now;
          return n;
        },
        prunePlan: async () =>
          (db.db.prepare('EXPLAIN QUERY PLAN DELETE FROM usage_hours WHERE hour < ?').all(1) as Array<{ detail: string }>)
            .map((p) => p.detail)
            .join(' '),
        cleanup: () => record.cleanup(),
      };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const schema = await tempSchema();
      // Each row's version: a row a transaction inserted or updated carries that transaction's id.
      let versions = new Map<string, string>();
      return {
        open: async () => new PgUsageHistory(await schema.open()),
        columns: async (table) =>
          (
            await schema.query<{ name: string }>(
              'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
              [schema.schema, table],
            )
          ).map((c) => c.name),
        stored: async () =>
          (
            await schema.query<{ n: number; calls: number }>(
              `SELECT count(*)::integer AS n, sum(calls)::integer AS calls FROM ${schema.table('usage_hours')}`,
            )
          )[0] as {
            n: number;
            calls: number;
          },
        async changed() {
          const rows = await schema.query<{ row: string; version: string }>(
            `SELECT concat_ws('/', key_id, hour, chain, method, outcome) AS row, xmin::text AS version FROM ${schema.table('usage_hours')}`,
          );
          const now = new Map(rows.map((r) => [r.row, r.version]));
          const n = rows.filter((r) => versions.get(r.row) !== r.version).length;
          versions = now;
          return n;
        },
        async prunePlan() {
          const db = await schema.open();
          const plan = await db.transaction(async (tx) => {
            // A small table is cheaper to scan: what is asked is whether the index serves the prune.
            await tx.query('SET LOCAL enable_seqscan = off');
            return tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN DELETE FROM ${db.table('usage_hours')} WHERE hour < 1`);
          });
          return plan.map((p) => p['QUERY PLAN']).join(' ');
        },
        cleanup: () => schema.cleanup(),
      };
    },
  ],
];

function instance(
  history: UsageHistory,
  clock: { t: number },
  failedPerKey = 100,
): { rollup: UsageRollup; history: UsageHistory; errors: unknown[] } {
  const errors: unknown[] = [];
  const rollup = new UsageRollup(history, {
    flushIntervalMs: 5_000,
    retentionMs: 400 * DAY,
    failedPerKey,
    failedMaxAgeMs: 30 * DAY,
    now: () => clock.t,
    onError: (err) => errors.push(err),
  });
  return { rollup, history, errors };
}

function call(r: UsageRollup, at: number, keyId: string, method: string, outcome = 'ok', ms = 7, chain = 'eth', account = 'acme'): void {
  r.add(hourOf(at), keyId, account, chain, method, outcome, 2, 1, 100, 1_000, latencyBucket(ms));
}

function failed(keyId: string, at: number, requestId: string): FailedCall {
  return {
    at,
    keyId,
    chain: 'eth',
    method: 'eth_call',
    outcome: 'upstream_failed',
    status: 502,
    code: 'UPSTREAM_FAILED',
    node: 'eth-1',
    latencyMs: 31.5,
    requestId,
  };
}

for (const [name, open] of backends) {
  describe(`usage history: ${name}`, () => {
    let backend: Backend;
    beforeEach(async () => {
      backend = await open();
    });
    afterEach(() => backend.cleanup());

    it('has a latency column per bucket', async () => {
      expect(LATENCY_COLUMNS).to.have.length(LATENCY_BUCKETS);
      await backend.open();
      expect(await backend.columns('usage_hours')).to.include.members(LATENCY_COLUMNS);
    });

    it('sums exactly what two instances on one record count', async () => {
      const clock = { t: START };
      const a = instance(await backend.open(), clock);
      const b = instance(await backend.open(), clock);
      for (let i = 0; i < 250; i++) call(a.rollup, clock.t, 'key_a', 'eth_call');
      for (let i = 0; i < 170; i++) call(b.rollup, clock.t, 'key_a', 'eth_call');
      call(b.rollup, clock.t, 'key_a', 'eth_call', 'chain_error', 300);
      // Interleaved flushes: each adds its delta to the same row.
      await a.rollup.flush();
      await b.rollup.flush();
      for (let i = 0; i < 80; i++) call(a.rollup, clock.t, 'key_a', 'eth_call');
      await a.rollup.flush();

      const [total] = await a.history.read({ keyId: 'key_a', from: START, to: START + HOUR_MS, by: [], step: 'total' });
      expect(total).to.deep.include({ calls: 501, cost: 1_002, nodeCalls: 501, bytesIn: 50_100, bytesOut: 501_000 });
      expect(total?.latency[latencyBucket(7)]).to.equal(500);
      expect(total?.latency[latencyBucket(300)]).to.equal(1);
      const byOutcome = await b.history.read({ keyId: 'key_a', from: START, to: START + HOUR_MS, by: ['outcome'], step: 'total' });
      expect(byOutcome.map((r) => [r.outcome, r.calls])).to.deep.equal([
        ['chain_error', 1],
        ['ok', 500],
      ]);
    });

    it('counts every call when instances flush the same rows at the same moment, each having met them in another order', async () => {
      const clock = { t: START };
      const instances = await Promise.all(Array.from({ length: 4 }, async () => instance(await backend.open(), clock, 3)));
      const keys = Array.from({ length: 40 }, (_, i) => `key_${String(i).padStart(2, '0')}`);
      for (let round = 0; round < 3; round++) {
        instances.forEach(({ rollup }, n) => {
          // Each instance meets the keys in an order of its own: its rows reach the write in that order.
          const order = n % 2 === 0 ? keys : [...keys].reverse();
          for (const k of order.slice(n * 7).concat(order.slice(0, n * 7))) {
            call(rollup, clock.t, k, 'eth_call');
            call(rollup, clock.t, k, 'eth_getBalance');
            rollup.addFailed(failed(k, clock.t + round * 10 + n, `${k}-${round}-${n}`));
          }
        });
        await Promise.all(instances.map(({ rollup }) => rollup.flush()));
      }
      expect(instances.flatMap((i) => i.errors)).to.deep.equal([]);
      const byKey = await instances[0]!.history.read({ from: START, to: START + HOUR_MS, by: ['key'], step: 'total' });
      expect(byKey.map((r) => [r.keyId, r.calls])).to.deep.equal(keys.map((k) => [k, 4 * 3 * 2]));
      // Each key's newest three, whichever instance wrote them: the last round's three latest.
      const kept = await instances[1]!.history.failedCalls('key_07', 100);
      expect(kept.map((f) => f.requestId)).to.deep.equal(['key_07-2-3', 'key_07-2-2', 'key_07-2-1']);
    });

    it('upserts each row once per flush however many calls it counted, and recording touches no table', async () => {
      const clock = { t: START };
      const { rollup } = instance(await backend.open(), clock);
      await rollup.flush(); // the first flush prunes: out of the way
      await backend.changed();
      for (let i = 0; i < 10_000; i++) call(rollup, clock.t, `key_${i % 2}`, i % 3 === 0 ? 'eth_call' : 'eth_getBalance');
      expect(await backend.changed()).to.equal(0);
      await rollup.flush();
      // Two keys × two methods: four rows, one change each.
      expect(await backend.changed()).to.equal(4);
      for (let i = 0; i < 5_000; i++) call(rollup, clock.t, 'key_0', 'eth_call');
      await rollup.flush();
      expect(await backend.changed()).to.equal(1);
      expect(await backend.stored()).to.deep.equal({ n: 4, calls: 15_000 });
    });

    it('reads per hour, per UTC day or in total, split by method, chain or outcome, for a key or an account', async () => {
      const clock = { t: START };
      const { rollup, history } = instance(await backend.open(), clock);
      call(rollup, START, 'key_a', 'eth_call');
      call(rollup, START + 10 * 60_000, 'key_a', 'eth_call');
      call(rollup, START + HOUR_MS, 'key_a', 'eth_getBalance');
      call(rollup, START + DAY, 'key_a', 'eth_call', 'ok', 7, 'polygon');
      call(rollup, START, 'key_b', 'eth_call', 'ok', 7, 'eth', 'acme');
      call(rollup, START, 'key_c', 'eth_call', 'ok', 7, 'eth', 'other');
      await rollup.flush();
      const range = { from: START - 12 * HOUR_MS, to: START + 2 * DAY };

      const hours = await history.read({ ...range, keyId: 'key_a', by: [], step: 'hour' });
      expect(hours.map((r) => [r.start, r.calls])).to.deep.equal([
        [START, 2],
        [START + HOUR_MS, 1],
        [START + DAY, 1],
      ]);
      const days = await history.read({ ...range, keyId: 'key_a', by: ['method'], step: 'day' });
      expect(days.map((r) => [new Date(r.start as number).toISOString().slice(0, 10), r.method, r.calls])).to.deep.equal([
        ['2026-03-30', 'eth_call', 2],
        ['2026-03-30', 'eth_getBalance', 1],
        ['2026-03-31', 'eth_call', 1],
      ]);
      const chains = await history.read({ ...range, keyId: 'key_a', by: ['chain'], step: 'total' });
      expect(chains.map((r) => [r.start, r.chain, r.calls])).to.deep.equal([
        [undefined, 'eth', 3],
        [undefined, 'polygon', 1],
      ]);
      const account = await history.read({ ...range, account: 'acme', by: ['key'], step: 'total' });
      expect(account.map((r) => [r.keyId, r.calls])).to.deep.equal([
        ['key_a', 4],
        ['key_b', 1],
      ]);
      const filtered = await history.read({ ...range, account: 'acme', chain: 'eth', method: 'eth_call', by: [], step: 'total' });
      expect(filtered.map((r) => r.calls)).to.deep.equal([3]);
      // The range is whole hours: the hour holding `from`, up to the one holding `to` (exclusive at an hour's start).
      const oneHour = await history.read({ keyId: 'key_a', from: START + 30 * 60_000, to: START + HOUR_MS, by: [], step: 'total' });
      expect(oneHour.map((r) => r.calls)).to.deep.equal([2]);
      expect(await history.read({ keyId: 'nobody', ...range, by: [], step: 'total' })).to.deep.equal([]);
    });

    it("keeps each key's newest failed calls, drops those past their age, and holds no params, bodies or keys", async () => {
      const clock = { t: START };
      const { rollup, history } = instance(await backend.open(), clock, 3);
      for (let i = 1; i <= 4; i++) rollup.addFailed(failed('key_a', START + i, `a${i}`));
      rollup.addFailed(failed('key_b', START, 'b1'));
      await rollup.flush();
      // A later flush of the same key (another instance's alike) trims what is stored to the newest 3.
      rollup.addFailed(failed('key_a', START + 10, 'a10'));
      await rollup.flush();
      const a = await history.failedCalls('key_a', 100);
      expect(a.map((f) => f.requestId)).to.deep.equal(['a10', 'a4', 'a3']);
      expect(a[0]).to.deep.equal(failed('key_a', START + 10, 'a10'));
      expect((await history.failedCalls('key_b', 100)).map((f) => f.requestId)).to.deep.equal(['b1']);
      expect((await history.failedCalls('key_a', 1)).map((f) => f.requestId)).to.deep.equal(['a10']);

      expect(await backend.columns('failed_calls')).to.deep.equal([
        'id',
        'key_id',
        'at_ms',
        'chain',
        'method',
        'outcome',
        'status',
        'code',
        'node',
        'latency_ms',
        'request_id',
      ]);

      // 30 days on (the first flush pruned already; an hour later it may again).
      clock.t = START + 30 * DAY + HOUR_MS;
      rollup.addFailed(failed('key_b', clock.t, 'b2'));
      await rollup.flush();
      expect((await history.failedCalls('key_a', 100)).map((f) => f.requestId)).to.deep.equal([]);
      expect((await history.failedCalls('key_b', 100)).map((f) => f.requestId)).to.deep.equal(['b2']);
    });

    it('prunes hours past retention, keeping the rest', async () => {
      const clock = { t: START };
      const { rollup, history } = instance(await backend.open(), clock);
      call(rollup, START - 401 * DAY, 'key_a', 'eth_call');
      call(rollup, START - 399 * DAY, 'key_a', 'eth_call');
      call(rollup, START, 'key_a', 'eth_call');
      // The flush writes, then prunes (the first flush of an instance does).
      await rollup.flush();
      const kept = await history.read({ keyId: 'key_a', from: START - 500 * DAY, to: START + HOUR_MS, by: [], step: 'hour' });
      expect(kept.map((r) => r.start)).to.deep.equal([START - 399 * DAY, START]);
      expect(await backend.prunePlan()).to.match(/usage_hours_by_hour/);
    });
  });
}
