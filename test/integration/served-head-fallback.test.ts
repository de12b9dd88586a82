// The served head rises on one node's word (its answer to a head read), before any
// probe has seen the other nodes reach it. When that node then goes down, calls at the
// latest state go to the nodes below it, pinned to the served head: a node that has the
// block answers it, one that lacks it says so and the call moves on (never to archive
// state, never refused for want of archive access), and agreement asks them too.

import { expect } from 'chai';
import type { ChainRuntime } from '../../src/chain/runtime.js';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const ADDRESS = '0x00000000000000000000000000000000000000aa';
const hex = (n: number): string => `0x${n.toString(16)}`;

describe('the served head when the only node known to hold it goes down', function () {
  this.timeout(30_000);
  let stack: Stack;
  let top = 0;

  before(async () => {
    const nodes = [
      { name: 'a', role: 'full' as const },
      { name: 'b', role: 'full' as const },
      { name: 'c', role: 'full' as const },
    ];
    // A long breaker reset and no outlier ejection: node a stays in rotation, down, so the
    // calls meet it first, as they do in the moment before a probe or breaker takes it out.
    const keep =
      '    breaker: { resetTimeoutMs: 600000, errorThresholdPercentage: 100, volumeThreshold: 1000 }\n    ejection: { consecutive: 0 }';
    stack = await startStack({
      chains: [
        { name: 'l1', plugin: 'evm', path: '/l1', extra: keep, nodes },
        {
          name: 'agree',
          plugin: 'evm',
          path: '/agree',
          extra: `${keep}\n    consensus: { ask: 3, agree: 2, methods: [eth_getBalance], minCompared: 1000 }`,
          nodes: nodes.map((n) => ({ ...n, name: `agree-${n.name}`, sameAs: n.name })),
        },
      ],
    });
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    // Nodes b and c stop one block short of a, and the probes know all three at that block.
    for (const n of ['b', 'c']) await stack.devnet.node(n).setFaults({ stalled: true });
    stack.devnet.chains.get('l1')?.advance(1);
    top = stack.devnet.node('a').height();
    // A head read node a answers raises each chain's served head to its block.
    for (const rt of stack.gateway.runtimes()) {
      await until(
        async () => {
          await rpc(stack.url(`/${rt.name}`), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: stack.key });
          return rt.pool.servedHead === top;
        },
        { what: `node a's answer raised ${rt.name}'s served head` },
      );
      expect(rt.pool.nodes.filter((n) => n.head === top).map((n) => n.name)).to.deep.equal([rt.name === 'l1' ? 'a' : 'agree-a']);
    }
    await stack.devnet.node('a').setFaults({ down: true });
  });
  after(() => stack?.close());

  const call = (path: string, method: string, params: unknown[], key = stack.key) =>
    rpc(stack.url(path), { jsonrpc: '2.0', id: 7, method, params }, { apikey: key });
  const bodies = (node: string, method: string): string[] =>
    stack.devnet
      .node(node)
      .received.map((r) => r.body)
      .filter((b) => b.includes(method));
  const clear = (): void => {
    for (const n of ['a', 'b', 'c']) stack.devnet.node(n).clearReceived();
  };

  it('fails as the nodes did while none has the block yet: never archive fallback or a refusal for want of archive access', async () => {
    clear();
    const free = await stack.createKey('free');
    for (const key of [stack.key, free.value]) {
      const r = await call('/l1', 'eth_getBalance', [ADDRESS, 'latest'], key);
      // Node a failed; b and c said they lack the block.
      expect(r.status).to.equal(502);
      expect(r.json).to.deep.include({ error: { code: -32603, message: 'Upstream nodes failed to answer' } });
    }
    // Each node below was asked at the served head, not at its own latest.
    for (const n of ['b', 'c']) {
      const sent = bodies(n, 'eth_getBalance');
      expect(sent).to.have.length(2);
      for (const b of sent)
        expect(b)
          .to.contain(`"${hex(top)}"`)
          .and.not.contain('latest');
    }
    const metrics = (await get(stack.admin('/metrics'))).text;
    expect(metrics).to.match(/noderouter_upstream_requests_total\{chain="l1",node="b",outcome="pruned"\} 2/);
  });

  it('answers from the nodes below once they have the block, pinned to it, and head reads never go back', async () => {
    for (const n of ['b', 'c']) await stack.devnet.node(n).clearFaults();
    clear();
    const rt = stack.gateway.runtimes().find((r) => r.name === 'l1') as ChainRuntime;
    const truth = (await rpc(stack.devnet.node('b').url, { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [ADDRESS, hex(top)] }))
      .json as { result: string };
    for (let i = 0; i < 4; i++) {
      const r = await call('/l1', 'eth_getBalance', [ADDRESS, 'latest']);
      expect(r.status).to.equal(200);
      expect(r.json).to.deep.equal({ jsonrpc: '2.0', id: 7, result: truth.result });
      const head = await call('/l1', 'eth_blockNumber', []);
      expect(head.json).to.deep.include({ result: hex(top) });
    }
    const sent = [...bodies('b', 'eth_getBalance'), ...bodies('c', 'eth_getBalance')];
    expect(sent.length).to.be.at.least(4);
    for (const b of sent)
      expect(b)
        .to.contain(`"${hex(top)}"`)
        .and.not.contain('latest');
    expect(rt.pool.servedHead).to.equal(top);
  });

  it('agreement asks the nodes below at the served head, and they agree', async () => {
    clear();
    const r = await call('/agree', 'eth_getBalance', [ADDRESS, 'latest']);
    expect(r.status).to.equal(200);
    await until(() => bodies('b', 'eth_getBalance').length === 1 && bodies('c', 'eth_getBalance').length === 1, {
      what: 'both nodes below were asked',
    });
    for (const b of [...bodies('b', 'eth_getBalance'), ...bodies('c', 'eth_getBalance')]) expect(b).to.contain(`"${hex(top)}"`);
    const metrics = (await get(stack.admin('/metrics'))).text;
    expect(metrics).to.match(/noderouter_consensus_total\{chain="agree",outcome="agreed"\} 1/);
  });
});
