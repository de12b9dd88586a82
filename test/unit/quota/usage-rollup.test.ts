// Usage rollups gathered in memory (src/quota/usage-rollup.ts) against a history that
// counts what it is asked: calls add to one cell per hour, key, chain, method and
// outcome and reach the history only when flushed, one row per cell however many calls
// it took; an hour's end starts new rows; a write that fails is kept for the next; each
// key keeps its newest failed calls; retention is pruned at most once an hour; close
// writes the rest. The clock is pinned and moved by the tests.

import { expect } from 'chai';
import {
  HOUR_MS,
  LATENCY_BOUNDS_MS,
  LATENCY_BUCKETS,
  hourOf,
  latencyAtMost,
  latencyBucket,
  type FailedCall,
  type UsageBatch,
  type UsageHistory,
  type UsageQuery,
  type UsageTotals,
} from '../../../src/quota/usage-history.js';
import { UsageRollup, type UsageRollupOptions } from '../../../src/quota/usage-rollup.js';

const START = Date.UTC(2026, 2, 30, 12, 0, 0);
const DAY = 24 * HOUR_MS;

class CountingHistory implements UsageHistory {
  readonly batches: UsageBatch[] = [];
  readonly prunes: Array<[number, number]> = [];
  failNext = 0;

  async write(batch: UsageBatch): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('database is locked');
    }
    this.batches.push(batch);
  }

  async read(_q: UsageQuery): Promise<UsageTotals[]> {
    return [];
  }

  async failedCalls(): Promise<FailedCall[]> {
    return [];
  }

  async prune(beforeHour: number, failedBefore: number): Promise<{ rollups: number; failed: number }> {
    this.prunes.push([beforeHour, failedBefore]);
    return { rollups: 0, failed: 0 };
  }

  get rows() {
    return this.batches.flatMap((b) => b.rows);
  }
}

function rollup(history: UsageHistory, clock: { t: number }, options: Partial<UsageRollupOptions> = {}): UsageRollup {
  return new UsageRollup(history, {
    flushIntervalMs: 5_000,
    retentionMs: 400 * DAY,
    failedPerKey: 3,
    failedMaxAgeMs: 30 * DAY,
    now: () => clock.t,
    ...options,
  });
}

function failedCall(keyId: string, at: number, requestId: string): FailedCall {
  return {
    at,
    keyId,
    chain: 'eth',
    method: 'eth_call',
    outcome: 'upstream_timeout',
    status: 504,
    code: 'UPSTREAM_TIMEOUT',
    node: 'eth-1',
    latencyMs: 12.5,
    requestId,
  };
}

describe('usage rollups (in memory)', () => {
  it('sums calls into one row per hour, key, chain, method and outcome, written only when flushed', async () => {
    const history = new CountingHistory();
    const clock = { t: START };
    const r = rollup(history, clock);
    const hour = hourOf(clock.t);
    for (let i = 0; i < 1_000; i++) r.add(hour, 'key_a', 'acme', 'eth', 'eth_call', 'ok', 2, 1, 100, 300, latencyBucket(7));
    r.add(hour, 'key_a', 'acme', 'eth', 'eth_call', 'chain_error', 2, 1, 10, 20, latencyBucket(40));
    r.add(hour, 'key_a', 'acme', 'eth', 'eth_getBalance', 'ok', 1, 1, 5, 6, latencyBucket(0.5));
    r.add(hour, 'key_b', 'acme', 'eth', 'eth_call', 'ok', 2, 0, 5, 6, latencyBucket(50_000));
    expect(history.batches).to.have.length(0);

    await r.flush();
    expect(history.batches).to.have.length(1);
    const rows = history.rows;
    expect(rows).to.have.length(4);
    const calls = rows.find((x) => x.keyId === 'key_a' && x.method === 'eth_call' && x.outcome === 'ok');
    expect(calls).to.deep.include({
      hour,
      account: 'acme',
      chain: 'eth',
      calls: 1_000,
      cost: 2_000,
      nodeCalls: 1_000,
      bytesIn: 100_000,
      bytesOut: 300_000,
    });
    // 7 ms lies in the (5, 10] bucket.
    expect(calls?.latency).to.have.length(LATENCY_BUCKETS);
    expect(calls?.latency[3]).to.equal(1_000);
    expect(rows.find((x) => x.keyId === 'key_b')?.latency[LATENCY_BUCKETS - 1]).to.equal(1);

    // Nothing new: nothing written.
    await r.flush();
    expect(history.batches).to.have.length(1);
    // A cell touched again is written again, as the delta since the last write.
    r.add(hour, 'key_a', 'acme', 'eth', 'eth_call', 'ok', 2, 1, 1, 1, 0);
    await r.flush();
    expect(history.batches[1]?.rows).to.have.length(1);
    expect(history.batches[1]?.rows[0]).to.deep.include({ calls: 1, cost: 2, bytesIn: 1 });
  });

  it('starts new rows at the hour, by the clock, with no Date per call', async () => {
    const history = new CountingHistory();
    const clock = { t: START + HOUR_MS - 1 };
    const r = rollup(history, clock);
    r.add(hourOf(clock.t), 'key_a', 'acme', 'eth', 'eth_call', 'ok', 1, 1, 1, 1, 0);
    clock.t += 1;
    r.add(hourOf(clock.t), 'key_a', 'acme', 'eth', 'eth_call', 'ok', 1, 1, 1, 1, 0);
    r.add(hourOf(clock.t), 'key_a', 'acme', 'eth', 'eth_call', 'ok', 1, 1, 1, 1, 0);
    await r.flush();
    const byHour = history.rows.map((x) => [x.hour * HOUR_MS, x.calls]);
    expect(byHour).to.deep.equal([
      [START, 1],
      [START + HOUR_MS, 2],
    ]);
  });

  it('keeps the deltas of a write that failed and sends them with the next', async () => {
    const history = new CountingHistory();
    const errors: unknown[] = [];
    const clock = { t: START };
    const r = rollup(history, clock, { onError: (e) => errors.push(e) });
    const hour = hourOf(clock.t);
    r.add(hour, 'key_a', 'acme', 'eth', 'eth_call', 'ok', 1, 1, 10, 10, 0);
    r.addFailed(failedCall('key_a', clock.t, 'r1'));
    history.failNext = 1;
    await r.flush();
    expect(errors).to.have.length(1);
    expect(history.batches).to.have.length(0);
    r.add(hour, 'key_a', 'acme', 'eth', 'eth_call', 'ok', 1, 1, 10, 10, 0);
    r.addFailed(failedCall('key_a', clock.t + 1, 'r2'));
    await r.flush();
    expect(history.rows).to.have.length(1);
    expect(history.rows[0]).to.deep.include({ calls: 2, cost: 2, bytesIn: 20 });
    expect(history.batches[0]?.failed.map((f) => f.requestId)).to.deep.equal(['r1', 'r2']);
  });

  it("keeps each key's newest failed calls of an interval, as many as failedPerKey", async () => {
    const history = new CountingHistory();
    const clock = { t: START };
    const r = rollup(history, clock, { failedPerKey: 3 });
    for (let i = 1; i <= 7; i++) r.addFailed(failedCall('key_a', START + i, `a${i}`));
    r.addFailed(failedCall('key_b', START, 'b1'));
    await r.flush();
    const batch = history.batches[0] as UsageBatch;
    expect(batch.failedPerKey).to.equal(3);
    expect(batch.failed.map((f) => f.requestId)).to.deep.equal(['a5', 'a6', 'a7', 'b1']);

    const none = new CountingHistory();
    const off = rollup(none, clock, { failedPerKey: 0 });
    expect(off.keepsFailed).to.equal(false);
    off.addFailed(failedCall('key_a', START, 'x'));
    await off.flush();
    expect(none.batches).to.have.length(0);
  });

  it('prunes past retention at most once an hour', async () => {
    const history = new CountingHistory();
    const clock = { t: START };
    const r = rollup(history, clock, { retentionMs: 400 * DAY, failedMaxAgeMs: 30 * DAY });
    await r.flush();
    expect(history.prunes).to.deep.equal([[hourOf(START - 400 * DAY), START - 30 * DAY]]);
    clock.t += HOUR_MS - 1;
    await r.flush();
    expect(history.prunes).to.have.length(1);
    clock.t += 1;
    await r.flush();
    expect(history.prunes).to.have.length(2);
  });

  it('writes on its interval, and what is left when closed', async () => {
    const history = new CountingHistory();
    const clock = { t: START };
    const r = rollup(history, clock, { flushIntervalMs: 50 });
    r.start();
    r.add(hourOf(clock.t), 'key_a', 'acme', 'eth', 'eth_call', 'ok', 1, 1, 1, 1, 0);
    const deadline = Date.now() + 2_000;
    while (history.batches.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(history.rows).to.have.length(1);
    r.add(hourOf(clock.t), 'key_a', 'acme', 'eth', 'eth_call', 'ok', 1, 1, 1, 1, 0);
    await r.close();
    expect(history.rows.reduce((n, x) => n + x.calls, 0)).to.equal(2);
  });
});

describe('usage latency buckets', () => {
  it("are the request-duration histogram's bounds, each inclusive, and one over the last", () => {
    expect(LATENCY_BOUNDS_MS).to.deep.equal([1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000]);
    expect(latencyBucket(0)).to.equal(0);
    expect(latencyBucket(1)).to.equal(0);
    expect(latencyBucket(1.01)).to.equal(1);
    expect(latencyBucket(30_000)).to.equal(13);
    expect(latencyBucket(30_001)).to.equal(14);
  });

  it('give percentiles as the bound they stay within', () => {
    const counts = new Array<number>(LATENCY_BUCKETS).fill(0);
    counts[3] = 90; // ≤ 10 ms
    counts[6] = 9; // ≤ 100 ms
    counts[14] = 1; // over 30 s
    expect(latencyAtMost(counts, 0.5)).to.equal(10);
    expect(latencyAtMost(counts, 0.95)).to.equal(100);
    expect(latencyAtMost(counts, 0.999)).to.equal(null);
    expect(latencyAtMost(new Array<number>(LATENCY_BUCKETS).fill(0), 0.5)).to.equal(null);
  });
});
