// The call path (src/exec/call-path.ts) over a real chain runtime, real nodes on
// loopback and a real limiter: permissions per call, one admission for the whole
// request, cache hits under the caller's id (charged or free by tier), coalescing of a
// lone cacheable call, only sure good answers cached, errors counted in usage by the
// plugin's verdict, and calls a transport answers itself handed back to it.

import { expect } from 'chai';
import type { ChainRuntime } from '../../../src/chain/runtime.js';
import { isGatewayError, type GatewayError } from '../../../src/errors.js';
import type { CallResult } from '../../../src/exec/attempts/attempts.js';
import type { Routing } from '../../../src/plugin/contract.js';
import { bench, chainConfig, item, scriptedPlugin, type Bench } from '../../support/chain.js';
import { echoNode, jsonRpcHandler, startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { until } from '../../support/until.js';

const ROUTES: Readonly<Record<string, Partial<Routing>>> = {
  t_cached: { cacheTtlMs: 60_000 },
  t_null: { cacheTtlMs: 60_000 },
  t_costly: { cost: 10 },
  t_archive: { archive: true },
};

function answer(r: CallResult<string> | undefined): string {
  if (r === undefined || isGatewayError(r)) throw new Error(`expected an answer, got ${r === undefined ? 'nothing' : r.code}`);
  return r.answer as string;
}

function refusal(r: CallResult<string> | undefined): GatewayError {
  if (r === undefined || !isGatewayError(r)) throw new Error('expected a gateway error');
  return r;
}

async function usage(b: Bench, keyId: string): Promise<{ calls: number; errors: number; limited: number }> {
  const rows = await b.limiter.usage(keyId);
  return rows.reduce((t, r) => ({ calls: t.calls + r.calls, errors: t.errors + r.errors, limited: t.limited + r.limited }), {
    calls: 0,
    errors: 0,
    limited: 0,
  });
}

async function coalescedCount(rt: ChainRuntime, b: Bench): Promise<number> {
  const m = await b.metrics.coalesced.get();
  return m.values.find((v) => v.labels.chain === rt.name)?.value ?? 0;
}

describe('call path (src/exec/call-path.ts)', () => {
  let full: RpcNode;
  let archive: RpcNode;
  let b: Bench;

  beforeEach(async () => {
    full = await startRpcNode(echoNode('full-1'));
    archive = await startRpcNode(echoNode('arch-1'));
    const config = await chainConfig([
      { name: 'full-1', url: full.url, role: 'full' },
      { name: 'arch-1', url: archive.url, role: 'archive' },
    ]);
    b = await bench(config, scriptedPlugin(ROUTES));
  });

  afterEach(async () => {
    await b.close();
    await full.close();
    await archive.close();
  });

  describe('permissions', () => {
    it('refuses per call the methods a key may not call, answers the rest, and counts neither as an error', async () => {
      const p = b.principal({}, { deny: ['t_secret*'] });
      const run = await b.run(p, `[${item('1', 't_plain')},${item('2', 't_secret_thing')},${item('3', 't_other')}]`);
      expect(answer(run.results[0])).to.equal('{"jsonrpc":"2.0","id":1,"result":"full-1:t_plain"}');
      expect(refusal(run.results[1])).to.include({ code: 'FORBIDDEN', status: 403, message: 'API key not permitted for this method' });
      expect(answer(run.results[2])).to.equal('{"jsonrpc":"2.0","id":3,"result":"full-1:t_other"}');
      // The refused call never reached a node, and is not charged.
      expect(full.methods()).to.deep.equal(['t_plain', 't_other']);
      expect(b.admits).to.deep.equal([2]);
      expect(await usage(b, p.record.id)).to.deep.equal({ calls: 2, errors: 0, limited: 0 });
    });

    it('refuses archive calls to a key without archive access, whatever its other calls', async () => {
      const p = b.principal({ archive: false });
      const run = await b.run(p, `[${item('1', 't_archive')},${item('2', 't_plain')}]`);
      expect(refusal(run.results[0])).to.include({ code: 'FORBIDDEN', message: 'API key has no archive access' });
      expect(answer(run.results[1])).to.contain('full-1:t_plain');
      expect(archive.received).to.have.length(0);
      // A key's own archive setting wins over its tier's.
      const allowed = b.principal({ archive: false }, { archive: true });
      expect(answer((await b.run(allowed, item('1', 't_archive'))).results[0])).to.contain('arch-1:t_archive');
    });

    it('admits no call when every call was refused, yet charges the request as invalid', async () => {
      const p = b.principal({ rate: 1, burst: 1 }, { allow: ['eth_*'] });
      const run = await b.run(p, item('1', 't_plain'));
      expect(refusal(run.results[0]).code).to.equal('FORBIDDEN');
      expect(run.admission).to.include({ allowed: true });
      expect(b.admits).to.deep.equal([]);
      expect(run.trace.outcome).to.equal('forbidden');
      // The charge took the key's one token: the next such request meets the rate.
      const again = await b.run(p, item('2', 't_plain'));
      expect(refusal(again.results[0]).code).to.equal('RATE_LIMITED');
      expect(again.trace.outcome).to.equal('rate_limited');
      const [row] = await b.limiter.usage(p.record.id);
      expect(row).to.include({ calls: 0, limited: 1, invalid: 1 });
    });
  });

  describe('admission', () => {
    it('charges the whole request once, at the sum of its calls’ costs, and sends it in one request', async () => {
      const p = b.principal();
      const run = await b.run(p, `[${item('1', 't_plain')},${item('2', 't_costly')},${item('3', 't_plain')}]`);
      expect(run.results.map(answer)).to.have.length(3);
      expect(b.admits).to.deep.equal([12]);
      expect(full.received).to.have.length(1);
      expect(await usage(b, p.record.id)).to.deep.equal({ calls: 12, errors: 0, limited: 0 });
    });

    it('refuses every admitted-for call with the same limit error when the request does not fit, sending nothing', async () => {
      const p = b.principal({ rate: 1, burst: 5 });
      const run = await b.run(p, `[${item('1', 't_plain')},${item('2', 't_costly')},${item('3', 't_nope')}]`);
      const errors = run.results.map(refusal);
      expect(errors.map((e) => e.code)).to.deep.equal(['RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED']);
      expect(errors[0]?.headers?.['retry-after']).to.match(/^\d+$/);
      expect(run.admission?.allowed).to.equal(false);
      expect(full.received).to.have.length(0);
      expect(run.trace.outcome).to.equal('rate_limited');
      expect(await usage(b, p.record.id)).to.deep.equal({ calls: 0, errors: 0, limited: 12 });
    });
  });

  describe('cache', () => {
    it('answers a hit under the caller’s own id, byte for byte, without asking a node; the API key is no part of the key', async () => {
      const first = await b.run(b.principal(), item('1', 't_cached', ['a']));
      expect(first.cache).to.equal('MISS');
      expect(answer(first.results[0])).to.equal('{"jsonrpc":"2.0","id":1,"result":"full-1:t_cached"}');
      const other = b.principal();
      const hit = await b.run(other, item('"\\u0041b"', 't_cached', ['a']));
      expect(hit.cache).to.equal('HIT');
      expect(answer(hit.results[0])).to.equal('{"jsonrpc":"2.0","id":"\\u0041b","result":"full-1:t_cached"}');
      expect(full.received).to.have.length(1);
      // Other params are another answer.
      expect((await b.run(other, item('2', 't_cached', ['b']))).cache).to.equal('MISS');
      expect(full.received).to.have.length(2);
    });

    it('says HIT only when every routed call came from the cache, and nothing when no call was cacheable', async () => {
      const p = b.principal();
      await b.run(p, item('1', 't_cached'));
      expect((await b.run(p, `[${item('1', 't_cached')},${item('2', 't_plain')}]`)).cache).to.equal('MISS');
      expect((await b.run(p, `[${item('1', 't_cached')},${item('2', 't_cached')}]`)).cache).to.equal('HIT');
      expect((await b.run(p, item('1', 't_plain'))).cache).to.equal(undefined);
    });

    it('charges hits like any call, unless the tier makes them free', async () => {
      await b.run(b.principal(), item('1', 't_cached'));
      b.admits.length = 0;
      const paying = b.principal();
      const paid = await b.run(paying, item('7', 't_cached'));
      expect(paid.cache).to.equal('HIT');
      expect(b.admits).to.deep.equal([1]);
      expect(paid.admission?.allowed).to.equal(true);
      expect(await usage(b, paying.record.id)).to.deep.equal({ calls: 1, errors: 0, limited: 0 });

      b.admits.length = 0;
      const free = b.principal({ cacheHitsFree: true });
      const hit = await b.run(free, item('8', 't_cached'));
      expect(answer(hit.results[0])).to.equal('{"jsonrpc":"2.0","id":8,"result":"full-1:t_cached"}');
      expect(b.admits).to.deep.equal([]);
      expect(hit.admission).to.equal(undefined);
      expect(await usage(b, free.record.id)).to.deep.equal({ calls: 0, errors: 0, limited: 0 });
      // A hit and a miss together: only the miss is charged.
      await b.run(free, `[${item('1', 't_cached')},${item('2', 't_costly')}]`);
      expect(b.admits).to.deep.equal([10]);
    });

    it('keeps neither a chain error nor an empty (null) result', async () => {
      let calls = 0;
      full.handler = jsonRpcHandler((method) => {
        calls++;
        if (method === 't_cached') return { error: { code: 3, message: 'execution reverted' } };
        return { result: null };
      });
      const p = b.principal();
      await b.run(p, item('1', 't_cached'));
      await b.run(p, item('2', 't_cached'));
      await b.run(p, item('3', 't_null'));
      await b.run(p, item('4', 't_null'));
      expect(calls).to.equal(4);
    });
  });

  describe('cache and fixed reply ids', () => {
    it('relays an answer a node gave a batch item under a fixed id without keeping it; a lone call’s is certain and kept', async () => {
      const node = await startRpcNode(
        jsonRpcHandler((method, _params, id) =>
          method === 't_cached' ? { raw: '{"jsonrpc":"2.0","id":-1,"result":"fixed"}' } : { result: `ok:${id}` },
        ),
      );
      const fixed = await bench(
        await chainConfig([{ name: 'n', url: node.url, role: 'full' }]),
        scriptedPlugin(ROUTES, { fixedReplyIds: ['-1'] }),
      );
      try {
        const p = fixed.principal();
        const batch = await fixed.run(p, `[${item('1', 't_cached')},${item('2', 't_plain')}]`);
        expect(batch.results.map(answer)).to.deep.equal([
          '{"jsonrpc":"2.0","id":-1,"result":"fixed"}',
          '{"jsonrpc":"2.0","id":2,"result":"ok:1"}',
        ]);
        const lone = await fixed.run(p, item('5', 't_cached'));
        expect(lone.cache).to.equal('MISS');
        expect(answer(lone.results[0])).to.equal('{"jsonrpc":"2.0","id":-1,"result":"fixed"}');
        expect(node.received).to.have.length(2);
        const hit = await fixed.run(p, item('7', 't_cached'));
        expect(hit.cache).to.equal('HIT');
        expect(answer(hit.results[0])).to.equal('{"jsonrpc":"2.0","id":7,"result":"fixed"}');
        expect(node.received).to.have.length(2);
      } finally {
        await fixed.close();
        await node.close();
      }
    });
  });

  describe('coalescing', () => {
    it('gives a lone cacheable call the answer of an identical call in flight, under its own id, from one node call', async () => {
      full.hold = true;
      const p = b.principal();
      const leader = b.run(p, item('1', 't_cached', [1]));
      await until(() => full.received.length === 1, { what: 'the node has the first call' });
      const follower = b.run(b.principal(), item('"two"', 't_cached', [1]));
      await until(async () => (await coalescedCount(b.rt, b)) === 1, { what: 'the second call waits on the first' });
      full.release();
      const [a, c] = await Promise.all([leader, follower]);
      expect(answer(a.results[0])).to.equal('{"jsonrpc":"2.0","id":1,"result":"full-1:t_cached"}');
      expect(answer(c.results[0])).to.equal('{"jsonrpc":"2.0","id":"two","result":"full-1:t_cached"}');
      // The follower's copy is not the one the cache keeps.
      expect((c.results[0] as { sure: boolean }).sure).to.equal(false);
      expect(full.received).to.have.length(1);
    });

    it('never coalesces calls that may not be cached', async () => {
      full.hold = true;
      const p = b.principal();
      const one = b.run(p, item('1', 't_plain'));
      const two = b.run(p, item('2', 't_plain'));
      await until(() => full.received.length === 2, { what: 'both calls reach the node' });
      full.release();
      await Promise.all([one, two]);
      expect(await coalescedCount(b.rt, b)).to.equal(0);
    });
  });

  it('hands calls a transport answers itself back to it, after admitting them with the rest', async () => {
    const handed: Array<[string, Routing]> = [];
    const own = {
      claims: (call: { method: string }) => call.method === 't_subscribe',
      answer: (call: { id: string | undefined; method: string }, routing: Routing): Promise<CallResult<string>> => {
        handed.push([call.method, routing]);
        return Promise.resolve({ answer: `{"jsonrpc":"2.0","id":${call.id},"result":"0xsub"}`, verdict: 'ok', sure: false });
      },
    };
    const p = b.principal();
    const run = await b.run(p, `[${item('1', 't_subscribe')},${item('2', 't_plain')}]`, own);
    expect(run.results.map(answer)).to.deep.equal([
      '{"jsonrpc":"2.0","id":1,"result":"0xsub"}',
      '{"jsonrpc":"2.0","id":2,"result":"full-1:t_plain"}',
    ]);
    expect(handed.map(([m, r]) => [m, r.label, r.cost])).to.deep.equal([['t_subscribe', 't_subscribe', 1]]);
    expect(full.methods()).to.deep.equal(['t_plain']);
    expect(b.admits).to.deep.equal([2]);
    // Refused by the limits: never handed over.
    handed.length = 0;
    const limited = b.principal({ rate: 1, burst: 1 });
    const refused = await b.run(limited, `[${item('1', 't_subscribe')},${item('2', 't_plain')}]`, own);
    expect(refused.results.map((r) => refusal(r).code)).to.deep.equal(['RATE_LIMITED', 'RATE_LIMITED']);
    expect(handed).to.deep.equal([]);
  });
});

describe('call path verdicts in usage (src/exec/call-path.ts)', () => {
  let node: RpcNode;
  let b: Bench;
  const TRACE = { type: 'CALL', gas: '0x5208', calls: [{ type: 'CALL', error: 'execution reverted', revertReason: 'no' }] };

  beforeEach(async () => {
    node = await startRpcNode(
      jsonRpcHandler((method) => {
        if (method === 'debug_traceTransaction') return { result: TRACE };
        if (method === 'eth_call') return { error: { code: 3, message: 'execution reverted' } };
        return { result: '0x1' };
      }),
    );
    // A trace costs 10, as chains price them.
    b = await bench(
      await chainConfig([{ name: 'arch-1', url: node.url, role: 'archive' }]),
      scriptedPlugin({ debug_traceTransaction: { cost: 10 } }),
    );
  });

  afterEach(async () => {
    await b.close();
    await node.close();
  });

  it('counts a good answer whose result carries an "error" field deep inside as ok, and a chain error as an error', async () => {
    const p = b.principal();
    const tx = `0x${'ab'.repeat(32)}`;
    const trace = await b.run(p, item('1', 'debug_traceTransaction', [tx, { tracer: 'callTracer' }]));
    expect(answer(trace.results[0])).to.contain('"error":"execution reverted"');
    expect(trace.trace.outcome).to.equal('ok');
    expect(await usage(b, p.record.id)).to.deep.include({ errors: 0 });

    const reverted = await b.run(p, item('2', 'eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest']));
    expect(answer(reverted.results[0])).to.contain('"code":3');
    expect(reverted.trace.outcome).to.equal('chain_error');
    expect(await usage(b, p.record.id)).to.deep.include({ errors: 1 });

    // In a batch, each item is counted by its own verdict; the request's outcome is its first item's.
    const batch = await b.run(
      p,
      `[${item('3', 'debug_traceTransaction', [tx])},${item('4', 'eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'])}]`,
    );
    expect(batch.trace.outcome).to.equal('ok');
    expect(await usage(b, p.record.id)).to.deep.equal({ calls: 10 + 1 + 10 + 1, errors: 2, limited: 0 });
  });
});
