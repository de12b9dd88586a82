// N-of-M agreement on the call path (src/exec/policies/consensus.ts) with the EVM plugin and
// scriptable nodes: numbers where the highest wins, the chain's own error answer
// relayed when no answer can be compared, a node that fails replaced, a batch with a
// checked call charged once.

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import { isGatewayError } from '../../../src/errors.js';
import { bench, chainConfig, item, type Bench } from '../../support/chain.js';
import { jsonRpcHandler, startRpcNode, type ItemOutcome, type RpcNode } from '../../support/rpc-node.js';
import { until } from '../../support/until.js';

describe('agreement across nodes (src/exec/policies/consensus.ts)', () => {
  let nodes: RpcNode[] = [];
  let b: Bench;
  afterEach(async () => {
    await b.close();
    await Promise.all(nodes.map((n) => n.close()));
    nodes = [];
  });

  const start = async (answers: Array<(method: string) => ItemOutcome>, consensus: string): Promise<void> => {
    nodes = await Promise.all(answers.map((a) => startRpcNode(jsonRpcHandler((m) => a(m)))));
    const specs = nodes.map((n, i) => ({ name: `n${i}`, url: n.url, role: 'full' as const }));
    b = await bench(await chainConfig(specs, `    consensus: ${consensus}`), evm);
  };
  const answer = async (body: string): Promise<unknown> => {
    const r = (await b.run(b.principal(), body)).results[0];
    if (r === undefined || isGatewayError(r)) throw new Error(`expected an answer, got ${String(r)}`);
    return JSON.parse(r.answer as string) as unknown;
  };
  const asked = (method: string): number[] => nodes.map((n) => n.bodies().filter((x) => x.includes(method)).length);

  it('gives the highest nonce of the nodes asked, and disputes nobody for it', async () => {
    await start(
      ['0x5', '0x7', '0x6'].map((nonce) => () => ({ result: nonce })),
      '{ ask: 3, agree: 3 }',
    );
    const r = await answer(item('4', 'eth_getTransactionCount', ['0x00000000000000000000000000000000000000aa', 'pending']));
    expect(r).to.deep.equal({ jsonrpc: '2.0', id: 4, result: '0x7' });
    expect(asked('eth_getTransactionCount')).to.deep.equal([1, 1, 1]);
    expect(await b.metrics.registry.metrics()).to.not.include('noderouter_node_disagreements_total{');
  });

  it('answers once two agree, and disputes a liar whose answer comes after', async () => {
    await start(
      ['0x10', '0x10', '0x99'].map((balance) => () => ({ result: balance })),
      '{ ask: 3, agree: 2, minCompared: 1, maxDisputeRate: 0.5 }',
    );
    const liar = nodes[2] as RpcNode;
    liar.hold = true;
    const r = await answer(item('1', 'eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0x10']));
    expect(r).to.deep.equal({ jsonrpc: '2.0', id: 1, result: '0x10' });
    await until(() => liar.received.length > 0, { what: 'the liar is asked' });
    liar.hold = false;
    liar.release();
    await until(() => b.rt.pool.nodes[2]?.inRotation === false, { what: 'the liar is out of rotation' });
    expect(await b.metrics.registry.metrics()).to.match(/noderouter_node_disagreements_total\{chain="c",node="n2"\} 1/);
    expect(b.rt.pool.nodes[2]?.outReason).to.equal('disputed by the majority');
  });

  it('relays the chain’s own error when every node gives one, and replaces a node that fails', async () => {
    const revert = (): ItemOutcome => ({ error: { code: 3, message: 'execution reverted' } });
    await start([revert, revert, () => ({ raw: 'not json' })], '{ ask: 2, agree: 2 }');
    for (let i = 0; i < 3; i++) {
      const r = await answer(item('1', 'eth_call', [{ to: '0x00000000000000000000000000000000000000aa', data: '0x' }, '0x10']));
      expect(r).to.deep.equal({ jsonrpc: '2.0', id: 1, error: { code: 3, message: 'execution reverted' } });
    }
    expect(await b.metrics.registry.metrics()).to.match(/noderouter_consensus_total\{chain="c",outcome="agreed"\} 3/);
  });

  it('charges a batch with a checked call once, at its cost', async () => {
    await start(
      [0, 1, 2].map(() => (m: string) => ({ result: m === 'eth_getBalance' ? '0x10' : '0x1' })),
      '{ ask: 3, agree: 2 }',
    );
    const body = `[${item('1', 'eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0x10'])},${item('2', 'eth_chainId')}]`;
    const { results } = await b.run(b.principal(), body);
    expect(results.map((r) => (isGatewayError(r) ? r.code : JSON.parse(r.answer as string)))).to.deep.equal([
      { jsonrpc: '2.0', id: 1, result: '0x10' },
      { jsonrpc: '2.0', id: 2, result: '0x1' },
    ]);
    expect(b.admits).to.deep.equal([2]);
    expect(asked('eth_chainId').reduce((x, y) => x + y)).to.equal(1);
  });
});
