// Per-call policies on a real EVM plugin and a scriptable node (src/exec/policies/policies.ts and
// the call path's use of them): a getLogs a node refuses as oversize is cut in halves
// until it fits and the parts joined in block order; one the chain limits is split to
// fit before any node is asked; a lone resubmitted transaction a node already holds.

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import { isGatewayError } from '../../../src/errors.js';
import { bench, chainConfig, item, type Bench } from '../../support/chain.js';
import { jsonRpcHandler, startRpcNode, type RpcNode } from '../../support/rpc-node.js';

/** A node that answers getLogs over at most `max` blocks with one log per block, and refuses wider ranges as providers do. */
function logsNode(max: number): ReturnType<typeof jsonRpcHandler> {
  return jsonRpcHandler((method, params) => {
    if (method !== 'eth_getLogs') return { result: '0x1' };
    const f = (params as Array<{ fromBlock: string; toBlock: string }>)[0] as { fromBlock: string; toBlock: string };
    const [from, to] = [parseInt(f.fromBlock, 16), parseInt(f.toBlock, 16)];
    if (to - from + 1 > max) return { error: { code: -32005, message: `query exceeds max block range ${max}` } };
    return { result: Array.from({ length: to - from + 1 }, (_, i) => ({ blockNumber: `0x${(from + i).toString(16)}` })) };
  });
}

describe('call policies (src/exec/policies/policies.ts)', () => {
  let node: RpcNode;
  let b: Bench;
  afterEach(async () => {
    await b.close();
    await node.close();
  });

  const logs = async (from: number, to: number): Promise<unknown> => {
    const body = item('9', 'eth_getLogs', [{ fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` }]);
    const { results } = await b.run(b.principal(), body);
    const r = results[0];
    if (r === undefined || isGatewayError(r)) throw new Error(`expected an answer, got ${String(r)}`);
    return JSON.parse(r.answer as string) as unknown;
  };
  const splits = async (reason: string): Promise<number> =>
    Number(
      new RegExp(`noderouter_split_calls_total\\{chain="c",reason="${reason}"\\} (\\d+)`).exec(await b.metrics.registry.metrics())?.[1] ??
        0,
    );

  it('cuts a getLogs a node refuses as too big in halves until each fits, joined in block order under the caller’s id', async () => {
    node = await startRpcNode(logsNode(2));
    b = await bench(await chainConfig([{ name: 'n', url: node.url, role: 'full' }], '    options: { getLogsMaxRange: 0 }'), evm);
    const answer = (await logs(10, 17)) as { id: number; result: Array<{ blockNumber: string }> };
    expect(answer.id).to.equal(9);
    expect(answer.result.map((l) => parseInt(l.blockNumber, 16))).to.deep.equal([10, 11, 12, 13, 14, 15, 16, 17]);
    // 8 blocks → 2 × 4 → 4 × 2: three rounds of halving.
    expect(await splits('oversize')).to.equal(3);
  });

  it('splits a range over the chain’s limit into parts that fit before any node sees it whole', async () => {
    node = await startRpcNode(logsNode(3));
    b = await bench(await chainConfig([{ name: 'n', url: node.url, role: 'full' }], '    options: { getLogsMaxRange: 3 }'), evm);
    const answer = (await logs(1, 10)) as { result: Array<{ blockNumber: string }> };
    expect(answer.result.map((l) => parseInt(l.blockNumber, 16))).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const ranges = node.bodies().filter((body) => body.includes('eth_getLogs')).length;
    expect(ranges).to.equal(4);
    expect(await splits('limit')).to.equal(1);
    expect(await splits('oversize')).to.equal(0);
  });

  it('charges a wide getLogs by its range', async () => {
    node = await startRpcNode(logsNode(100_000));
    b = await bench(await chainConfig([{ name: 'n', url: node.url, role: 'full' }], '    options: { getLogsMaxRange: 0 }'), evm);
    await logs(1, 2500);
    // getLogs costs 5 per thousand blocks: 2500 blocks → 3 × 5.
    expect(b.admits).to.deep.equal([15]);
  });
});
