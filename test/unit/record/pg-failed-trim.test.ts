// The PostgreSQL failed-call log under two instances flushing at once
// (src/record/pg-usage-history.ts): two writers, each on a pool of its own as two
// machines would be, write batches of failed calls for the same keys (listed in
// opposite orders) back to back, with no rollups (rollups of the same rows would make
// the two take turns on the rows' locks: usage-history.test.ts has those). No write
// fails (a deadlock would fail one), a reader beside them never sees a key hold more
// than its N, and at the end each key holds exactly the newest N of all that both wrote.

import { expect } from 'chai';
import type { FailedCall } from '../../../src/quota/usage-history.js';
import { PgUsageHistory } from '../../../src/record/pg-usage-history.js';
import { tempSchema, type TempSchema } from '../../support/pg.js';

const START = Date.UTC(2026, 2, 30, 12, 0, 0);
const KEYS = Array.from({ length: 8 }, (_, i) => `key_${i}`);
const PER_KEY = 5;
const ROUNDS = 40;
/** Failed calls per key in one batch. */
const PER_BATCH = 3;

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
    latencyMs: 12,
    requestId,
  };
}

describe('the PostgreSQL failed-call log under two instances flushing at once', function () {
  this.timeout(60_000);
  let schema: TempSchema;

  beforeEach(async () => {
    schema = await tempSchema();
  });
  afterEach(() => schema.cleanup());

  it('never holds more than N per key, never deadlocks, and keeps the newest N of both', async () => {
    const writers = [new PgUsageHistory(await schema.open()), new PgUsageHistory(await schema.open())];
    const written: FailedCall[] = [];
    let writing = true;
    let most = 0;
    const table = schema.table('failed_calls');
    // Reads while both write: what any reader may see between their commits.
    const watch = (async () => {
      while (writing) {
        const [row] = await schema.query<{ n: number | null }>(
          `SELECT max(n)::integer AS n FROM (SELECT count(*) AS n FROM ${table} GROUP BY key_id) c`,
        );
        most = Math.max(most, row?.n ?? 0);
      }
    })();
    const results = await Promise.allSettled(
      writers.map(async (history, w) => {
        // The second lists the keys backwards: locks taken in the batch's order would deadlock.
        const keys = w === 0 ? KEYS : [...KEYS].reverse();
        for (let round = 0; round < ROUNDS; round++) {
          const batch: FailedCall[] = [];
          for (const k of keys) {
            // Times interleave between the writers: round r of either is newer than round r - 1 of both.
            for (let i = 0; i < PER_BATCH; i++) batch.push(failed(k, START + round * 100 + i * 10 + w, `${k}-w${w}-r${round}-${i}`));
          }
          written.push(...batch);
          await history.write({ rows: [], failed: batch, failedPerKey: PER_KEY });
        }
      }),
    );
    writing = false;
    await watch;
    expect(results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []))).to.deep.equal([]);
    expect(most).to.be.at.most(PER_KEY);

    const reader = new PgUsageHistory(await schema.open());
    for (const k of KEYS) {
      const newest = written
        .filter((f) => f.keyId === k)
        .sort((a, b) => b.at - a.at)
        .slice(0, PER_KEY)
        .map((f) => f.requestId);
      expect(
        (await reader.failedCalls(k, 100)).map((f) => f.requestId),
        k,
      ).to.deep.equal(newest);
    }
  });
});
