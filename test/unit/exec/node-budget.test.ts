// The node-call budget on the call path (src/exec/policies/node-budget.ts and the attempt loop's
// use of it) with the EVM plugin and scriptable nodes: a hedge is a node call of the
// budget and, sent or cancelled, is counted upstream; agreement asks no more nodes than
// the budget has left and is charged per node asked when the tier says so; a getLogs
// halved until the budget is spent is answered with the node's limit and charged per
// part; and the evm plugin reads a provider's limit from its refusal.

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import { rangeAdvice, rangeLimitIn } from '../../../plugins/evm/logs.js';
import { isGatewayError } from '../../../src/errors.js';
import { bench, chainConfig, item, type Bench } from '../../support/chain.js';
import { jsonRpcHandler, startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { pause, until } from '../../support/until.js';

const refusal = (message: string): string => `{"jsonrpc":"2.0","id":"max block range 99","error":{"code":-32005,"message":"${message}"}}`;

describe('node calls per client call (src/exec/policies/node-budget.ts)', () => {
  let nodes: RpcNode[] = [];
  let b: Bench;
  afterEach(async () => {
    for (const n of nodes) n.release();
    await b.close();
    await Promise.all(nodes.map((n) => n.close()));
    nodes = [];
  });

  const start = async (count: number, extra: string, answer = jsonRpcHandler(() => ({ result: '0x1' }))): Promise<void> => {
    nodes = await Promise.all(Array.from({ length: count }, () => startRpcNode(answer)));
    b = await bench(
      await chainConfig(
        nodes.map((n, i) => ({ name: `n${i}`, url: n.url, role: 'full' as const })),
        extra,
      ),
      evm,
    );
  };
  const asked = (method: string): number[] => nodes.map((n) => n.bodies().filter((x) => x.includes(method)).length);
  const upstream = async (): Promise<number> => {
    let sum = 0;
    for (const line of (await b.metrics.registry.metrics()).split('\n')) {
      if (line.startsWith('noderouter_upstream_requests_total{chain="c"')) sum += Number(line.split(' ').pop());
    }
    return sum;
  };

  it('sends a hedge from the budget and counts both attempts upstream, the loser too', async () => {
    await start(2, '    hedge: { minDelayMs: 1, maxDelayMs: 1, perSecond: 100 }');
    for (const n of nodes) n.hold = true;
    const running = b.run(b.principal(), item('1', 'eth_chainId'));
    await until(() => asked('eth_chainId').every((k) => k === 1), { what: 'both nodes are asked' });
    (nodes[1] as RpcNode).release();
    const { results } = await running;
    expect(isGatewayError(results[0])).to.equal(false);
    // The other attempt ends cancelled (or outrun): a node call all the same.
    await until(async () => (await upstream()) === 2, { what: 'both attempts are counted' });
  });

  it('sends no hedge when the call’s budget is one node call', async () => {
    await start(2, '    hedge: { minDelayMs: 1, maxDelayMs: 1, perSecond: 100 }');
    for (const n of nodes) n.hold = true;
    const running = b.run(b.principal({ nodeCalls: 1 }), item('1', 'eth_chainId'));
    await until(() => asked('eth_chainId').some((k) => k === 1), { what: 'a node is asked' });
    // Fifty times the hedge delay: a hedge the budget let through would have been sent.
    await pause(50);
    expect(asked('eth_chainId').reduce((x, y) => x + y, 0)).to.equal(1);
    for (const n of nodes) n.release();
    expect(isGatewayError((await running).results[0])).to.equal(false);
  });

  it('asks no more nodes for agreement than the budget allows, and charges per node asked when the tier says so', async () => {
    await start(3, '    consensus: { ask: 3, agree: 2 }');
    const call = item('1', 'eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0x10']);
    const once = await b.run(b.principal({ nodeCalls: 2 }), call);
    expect(isGatewayError(once.results[0])).to.equal(false);
    expect(asked('eth_getBalance').reduce((x, y) => x + y, 0)).to.equal(2);
    expect(b.charges).to.deep.equal([]);
    await b.run(b.principal({ chargeFanout: true }), call);
    await until(() => asked('eth_getBalance').reduce((x, y) => x + y, 0) === 5, { what: 'every node is asked' });
    // One call admitted at its cost, two more nodes charged after it.
    expect(b.admits.slice(-1)).to.deep.equal([1]);
    expect(b.charges).to.deep.equal([2]);
  });

  it('stops halving a getLogs at the budget: the node’s limit in the answer, each part charged', async () => {
    await start(
      1,
      '    options: { getLogsMaxRange: 0 }',
      jsonRpcHandler((method, params) => {
        const f = (params as Array<{ fromBlock: string; toBlock: string }>)[0];
        if (method !== 'eth_getLogs' || f === undefined) return { result: '0x1' };
        if (parseInt(f.toBlock, 16) > parseInt(f.fromBlock, 16))
          return { error: { code: -32005, message: 'query exceeds max block range 1' } };
        return { result: [] };
      }),
    );
    const { results } = await b.run(b.principal({ nodeCalls: 6 }), item('7', 'eth_getLogs', [{ fromBlock: '0x10', toBlock: '0x1f' }]));
    const r = results[0];
    expect(isGatewayError(r) && r.code).to.equal('NODE_BUDGET_EXCEEDED');
    expect(isGatewayError(r) && r.rpcCode).to.equal(-32005);
    expect(isGatewayError(r) && r.message).to.equal('range too large: split it into ranges of 1 block');
    // 16 blocks: the whole, 2 halves, 2 quarters of the first half refused; 1 call left, too few to halve anything more.
    expect(asked('eth_getLogs')).to.deep.equal([5]);
    expect(b.admits).to.deep.equal([5]);
    expect(b.charges).to.deep.equal([4 * 5]);
  });
});

describe('the range a provider names in a refusal (plugins/evm/logs.ts)', () => {
  it('reads geth’s, erigon’s, QuickNode’s and Alchemy’s wordings from the error message only', () => {
    expect(rangeLimitIn(refusal('query exceeds max block range 1'))).to.equal(1);
    expect(rangeLimitIn(refusal('exceed maximum block range: 5000'))).to.equal(5000);
    expect(rangeLimitIn(refusal('eth_getLogs is limited to a 10,000 range'))).to.equal(10_000);
    expect(rangeLimitIn(refusal('Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range'))).to.equal(
      2000,
    );
    // The id says "max block range 99": only the message is read.
    expect(rangeLimitIn(refusal('query returned more than 10000 results'))).to.equal(undefined);
    expect(rangeLimitIn(undefined)).to.equal(undefined);
  });

  it('tells the client the node’s limit, else the size the gateway was cutting to', () => {
    expect(rangeAdvice(refusal('query exceeds max block range 1'), 60)).to.equal('range too large: split it into ranges of 1 block');
    expect(rangeAdvice(refusal('query returned more than 10000 results'), 60)).to.equal(
      'range too large: split it into ranges of 60 blocks',
    );
  });
});
