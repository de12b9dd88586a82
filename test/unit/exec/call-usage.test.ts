// What one answered request adds to usage history (src/exec/call-usage.ts), from the
// call path's own records over a real chain runtime and node: one entry per call with
// its method label, outcome, units charged and node calls; a batch's bytes in equal
// whole shares, the remainder to the first; every call in the request's latency bucket;
// calls refused at routing (under the plugin's label) and invalid items as calls of their own; a request refused
// whole as one call, charged what it was; failed calls logged without params or keys;
// nothing for a request without a key.

import { expect } from 'chai';
import { recordUsage, type RequestFacts } from '../../../src/exec/call-usage.js';
import { newOutcome, type RequestOutcome } from '../../../src/exec/request-record.js';
import {
  hourOf,
  latencyBucket,
  type FailedCall,
  type RollupRow,
  type UsageBatch,
  type UsageHistory,
} from '../../../src/quota/usage-history.js';
import { UsageRollup } from '../../../src/quota/usage-rollup.js';
import type { Principal } from '../../../src/exec/principal.js';
import { bench, chainConfig, item, scriptedPlugin, type Bench } from '../../support/chain.js';
import { echoNode, startRpcNode, type RpcNode } from '../../support/rpc-node.js';

const NOW = Date.UTC(2026, 2, 30, 12, 34, 56);

class Kept implements UsageHistory {
  readonly batches: UsageBatch[] = [];
  async write(batch: UsageBatch): Promise<void> {
    this.batches.push(batch);
  }
  async read(): Promise<never[]> {
    return [];
  }
  async failedCalls(): Promise<FailedCall[]> {
    return [];
  }
  async prune(): Promise<{ rollups: number; failed: number }> {
    return { rollups: 0, failed: 0 };
  }
}

const FACTS: RequestFacts = { requestId: 'req-1', chain: 'c', transport: 'http', status: 200 };

describe('usage of a request, per call (src/exec/call-usage.ts)', () => {
  let node: RpcNode;
  let b: Bench;
  let kept: Kept;
  let usage: UsageRollup;
  let p: Principal;

  beforeEach(async () => {
    node = await startRpcNode(echoNode('full-1'));
    b = await bench(await chainConfig([{ name: 'full-1', url: node.url, role: 'full' }]), scriptedPlugin({ t_costly: { cost: 10 } }));
    kept = new Kept();
    usage = new UsageRollup(kept, {
      flushIntervalMs: 5_000,
      retentionMs: 86_400_000,
      failedPerKey: 10,
      failedMaxAgeMs: 86_400_000,
      now: () => NOW,
    });
    p = b.principal({}, { deny: ['t_secret'] });
  });

  afterEach(async () => {
    await b.close();
    await node.close();
  });

  async function run(body: string, bytesIn: number, bytesOut: number): Promise<RequestOutcome> {
    const { trace } = await b.run(p, body);
    trace.key = p.record;
    trace.bytesIn = bytesIn;
    trace.bytesOut = bytesOut;
    return trace;
  }

  async function written(): Promise<{ rows: RollupRow[]; failed: readonly FailedCall[] }> {
    await usage.flush();
    return { rows: kept.batches.flatMap((x) => x.rows), failed: kept.batches.flatMap((x) => x.failed) };
  }

  const row = (rows: RollupRow[], method: string, outcome = 'ok'): RollupRow | undefined =>
    rows.find((r) => r.method === method && r.outcome === outcome);

  it('adds each call of a batch, its bytes in equal shares and the remainder to the first, all in the latency of the request', async () => {
    const t = await run(`[${item('1', 't_plain')},${item('2', 't_costly')},${item('3', 't_secret')}]`, 10, 101);
    recordUsage(usage, t, FACTS, 42);
    const { rows, failed } = await written();
    expect(rows).to.have.length(3);
    for (const r of rows) {
      expect(r).to.include({ hour: hourOf(NOW), keyId: p.record.id, account: p.record.account, chain: 'c', calls: 1 });
      expect(r.latency[latencyBucket(42)]).to.equal(1);
    }
    expect(row(rows, 't_plain')).to.include({ cost: 1, nodeCalls: 1, bytesIn: 4, bytesOut: 35 });
    expect(row(rows, 't_costly')).to.include({ cost: 10, nodeCalls: 1, bytesIn: 3, bytesOut: 33 });
    // Refused at routing: never charged, no node call, under the plugin's label all the same.
    expect(row(rows, 't_secret', 'forbidden')).to.include({ cost: 0, nodeCalls: 0, bytesIn: 3, bytesOut: 33 });
    expect(failed).to.deep.equal([
      {
        at: NOW,
        keyId: p.record.id,
        chain: 'c',
        method: 't_secret',
        outcome: 'forbidden',
        status: 403,
        code: 'FORBIDDEN',
        node: undefined,
        latencyMs: 42,
        requestId: 'req-1',
      },
    ]);
  });

  it('adds a single call under its label with the node that answered', async () => {
    const t = await run(item('1', 't_costly'), 50, 60);
    recordUsage(usage, t, FACTS, 3);
    const { rows, failed } = await written();
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ method: 't_costly', outcome: 'ok', calls: 1, cost: 10, nodeCalls: 1, bytesIn: 50, bytesOut: 60 });
    expect(failed).to.deep.equal([]);
  });

  it('counts invalid items as calls, and a request refused whole as one call charged what it was', async () => {
    const t = await run(`[${item('1', 't_plain')}]`, 9, 9);
    t.invalidCalls = 2;
    recordUsage(usage, t, { ...FACTS, transport: 'ws', status: undefined }, 1);
    const whole = newOutcome();
    whole.key = p.record;
    whole.outcome = 'batch_too_large';
    whole.charged = 1;
    whole.bytesIn = 7;
    recordUsage(usage, whole, { ...FACTS, requestId: 'req-2', status: 413 }, 1);
    const { rows, failed } = await written();
    expect(row(rows, 't_plain')).to.include({ calls: 1, bytesIn: 3 });
    expect(row(rows, 'other', 'invalid_request')).to.include({ calls: 2, cost: 0, bytesIn: 6 });
    expect(row(rows, 'other', 'batch_too_large')).to.include({ calls: 1, cost: 1, bytesIn: 7 });
    expect(failed.map((f) => [f.requestId, f.outcome, f.status, f.code])).to.deep.equal([
      ['req-1', 'invalid_request', undefined, 'INVALID_REQUEST'],
      ['req-1', 'invalid_request', undefined, 'INVALID_REQUEST'],
      ['req-2', 'batch_too_large', 413, 'BATCH_TOO_LARGE'],
    ]);
  });

  it('adds nothing for a request without a key', async () => {
    const t = await run(item('1', 't_plain'), 1, 1);
    t.key = undefined;
    recordUsage(usage, t, FACTS, 1);
    expect((await written()).rows).to.deep.equal([]);
  });
});
