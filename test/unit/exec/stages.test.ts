// The policy stages of a chain (src/exec/stages/policy-stages.ts), composed once from
// its plugin's codecs and its config: a chain whose plugin keeps no node state or cuts
// no calls, or whose config has no consensus, never enters those stages, and a call
// routed to one of them goes to a node like any other.

import { expect } from 'chai';
import type { ChainConsensus } from '../../../src/exec/policies/consensus.js';
import { composeStages } from '../../../src/exec/stages/policy-stages.js';
import type { ChainHandler, JsonRpcCodec, Routing } from '../../../src/plugin/contract.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import { bench, chainConfig, item, scriptedPlugin } from '../../support/chain.js';
import { echoNode, startRpcNode } from '../../support/rpc-node.js';

const handler = (codec: Partial<JsonRpcCodec<undefined>>): ChainHandler => {
  const base = scriptedPlugin().create({ chain: 'c', options: {}, limits: DEFAULT_JSONRPC_LIMITS });
  return { ...base, jsonrpc: { ...(base.jsonrpc as JsonRpcCodec<undefined>), ...codec } };
};
const names = (h: ChainHandler, consensus?: ChainConsensus): string[] => composeStages(h, consensus).policies.map((p) => p.name);

describe('policy stages composed per chain (src/exec/stages/policy-stages.ts)', () => {
  it('gives a chain only the stages its plugin and config enable, in the order calls meet them', () => {
    expect(names(handler({}))).to.deep.equal(['broadcast', 'after-submit']);
    expect(composeStages(handler({}), undefined).halves).to.equal(false);
    const full = handler({
      state: { notFound: { code: -32000, message: 'filter not found' }, newId: () => '"0x1"', idleMs: 1000 },
      split: () => undefined,
    });
    expect(names(full)).to.deep.equal(['state', 'broadcast', 'split', 'after-submit']);
    expect(composeStages(full, undefined).halves).to.equal(true);
    expect(names(full, {} as ChainConsensus)).to.deep.equal(['state', 'broadcast', 'split', 'after-submit', 'consensus']);
  });

  it('sends a call routed to a stage its chain does not have to a node like any other', async () => {
    const node = await startRpcNode(echoNode('n1'));
    const routes: Record<string, Partial<Routing>> = { t_cut: { split: true }, t_state: { state: { role: 'create' } } };
    const b = await bench(await chainConfig([{ name: 'n1', url: node.url, role: 'full' }]), scriptedPlugin(routes));
    try {
      expect(b.rt.stages.policies.map((p) => p.name)).to.deep.equal(['broadcast', 'after-submit']);
      const { results } = await b.run(b.principal(), `[${item('1', 't_cut')},${item('2', 't_state')}]`);
      expect(results).to.deep.equal([
        { answer: '{"jsonrpc":"2.0","id":1,"result":"n1:t_cut"}', verdict: 'ok', sure: true },
        { answer: '{"jsonrpc":"2.0","id":2,"result":"n1:t_state"}', verdict: 'ok', sure: true },
      ]);
      // One node request for both: neither was taken apart by a policy.
      expect(node.received).to.have.length(1);
      expect((await b.metrics.splits.get()).values).to.deep.equal([]);
    } finally {
      await b.close();
      await node.close();
    }
  });
});
