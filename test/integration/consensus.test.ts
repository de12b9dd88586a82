// Issue 22: answers checked, not trusted. Chains configured for agreement send the
// methods they list to several devnet nodes and answer only what enough of them say;
// one node of three lies (the devnet's lie fault: altered balances, another app hash).
// The client gets the truth and is charged one call, the liar is recorded and leaves
// rotation, and methods not listed still go to one node.

import { expect } from 'chai';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const three = (prefix: string, sameAs?: string): ChainSpec['nodes'] =>
  (['full-1', 'full-2', 'archive-1'] as const).map((n) => ({
    name: `${prefix}-${n}`,
    role: n.startsWith('full') ? ('full' as const) : ('archive' as const),
    ...(sameAs === undefined ? {} : { sameAs: `${sameAs}-${n}` }),
  }));

const CHAINS: ChainSpec[] = [
  {
    name: 'l1',
    plugin: 'evm',
    path: '/l1',
    extra: '    consensus: { ask: 3, agree: 2, minCompared: 3, maxDisputeRate: 0.5, coolDownMs: 600000 }',
    nodes: three('ev'),
  },
  {
    name: 'l1-strict',
    plugin: 'evm',
    path: '/l1-strict',
    network: 'l1',
    extra: '    consensus: { ask: 3, agree: 3, onDisagree: error, minCompared: 1000 }',
    nodes: three('strict', 'ev'),
  },
  {
    name: 'l1-archive',
    plugin: 'evm',
    path: '/l1-archive',
    network: 'l1',
    extra: '    consensus: { ask: 2, agree: 2, onDisagree: prefer-archive, minCompared: 1000 }',
    nodes: three('pa', 'ev'),
  },
  {
    name: 'l1-back',
    plugin: 'evm',
    path: '/l1-back',
    network: 'l1',
    extra: '    consensus: { ask: 3, agree: 2, minCompared: 1, maxDisputeRate: 0, coolDownMs: 100 }',
    nodes: three('back', 'ev'),
  },
  {
    name: 'objectx',
    plugin: 'objectx',
    path: '/objectx',
    extra: '    consensus: { ask: 3, agree: 2, minCompared: 2, maxDisputeRate: 0.5 }',
    nodes: three('ox'),
  },
  {
    name: 'hub-rpc',
    plugin: 'sdk-rpc',
    path: '/hub/rpc',
    network: 'hub',
    extra: '    consensus: { ask: 3, agree: 2, minCompared: 1000 }',
    nodes: three('cmt'),
  },
  {
    name: 'hub-rest',
    plugin: 'sdk-rest',
    path: '/hub/rest',
    network: 'hub',
    extra: '    consensus: { ask: 3, agree: 2, minCompared: 1000 }',
    nodes: three('rest'),
  },
];

const ADDRESS = '0x00000000000000000000000000000000000000aa';

interface Dispute {
  at: string;
  chain: string;
  method: string;
  outcome: string;
  nodes: Array<{ node: string; answer: string | null; agrees: boolean }>;
}

describe('answers checked by agreement (N of M)', function () {
  this.timeout(30_000);
  let stack: Stack;
  const received = (node: string, marker: string): number =>
    stack.devnet.node(node).received.filter((r) => r.body.includes(marker) || r.path.includes(marker)).length;
  const call = (path: string, method: string, params: unknown, key = stack.key) =>
    rpc(stack.url(path), { jsonrpc: '2.0', id: 7, method, params }, { apikey: key });
  /** What an honest node answers itself. */
  const truth = async (node: string, method: string, params: unknown): Promise<unknown> =>
    (await rpc(stack.devnet.node(node).url, { jsonrpc: '2.0', id: 1, method, params })).json;
  const disputes = async (): Promise<Dispute[]> => ((await get(stack.admin('/health/disputes'))).json as { disputes: Dispute[] }).disputes;
  const metrics = async (): Promise<string> => (await get(stack.admin('/metrics'))).text;
  const nodeOf = async (chain: string, node: string): Promise<{ inRotation: boolean; reason: string | null }> => {
    const { chains } = (await get(stack.admin('/health/chains'))).json as {
      chains: Array<{ chain: string; nodes: Array<{ name: string; inRotation: boolean; reason: string | null }> }>;
    };
    return chains.find((c) => c.chain === chain)?.nodes.find((n) => n.name === node) as { inRotation: boolean; reason: string | null };
  };
  const head = (network: string): number => stack.devnet.chains.get(network)?.height() as number;

  before(async () => {
    stack = await startStack({ chains: CHAINS });
    for (const n of ['ev-full-2', 'ox-full-2', 'cmt-full-2', 'rest-full-2']) await stack.devnet.node(n).setFaults({ lie: true });
  });
  after(() => stack?.close());

  describe('EVM', () => {
    it('answers the truth with one of three nodes lying, asks every node, and charges one call', async () => {
      const h = `0x${(head('l1') - 1).toString(16)}`;
      const honest = (await truth('ev-full-1', 'eth_getBalance', [ADDRESS, h])) as { result: string };
      const lied = (await truth('ev-full-2', 'eth_getBalance', [ADDRESS, h])) as { result: string };
      expect(lied.result).to.not.equal(honest.result);
      const metered = await stack.createKey('enterprise');
      const before = ['ev-full-1', 'ev-full-2', 'ev-archive-1'].map((n) => received(n, 'eth_getBalance'));
      const r = await call('/l1', 'eth_getBalance', [ADDRESS, h], metered.value);
      expect(r.status).to.equal(200);
      expect(r.json).to.deep.equal({ jsonrpc: '2.0', id: 7, result: honest.result });
      // Every node was asked, the liar too: its answer arrives, and is recorded, after the client's.
      await until(() =>
        ['ev-full-1', 'ev-full-2', 'ev-archive-1'].every((n, i) => received(n, 'eth_getBalance') === (before[i] as number) + 1),
      );
      const rows = await stack.gateway.services.bundle.limiter.usage(metered.id);
      expect(rows[0]).to.include({ calls: 1 });
    });

    it('pins a latest read to the served head, so every node answers at one height', async () => {
      await stack.gateway
        .runtimes()
        .find((rt) => rt.name === 'l1')
        ?.prober.probeAll();
      const r = await call('/l1', 'eth_getBalance', [ADDRESS, 'latest']);
      expect(r.status).to.equal(200);
      const served = stack.gateway.runtimes().find((rt) => rt.name === 'l1')?.pool.servedHead as number;
      const honest = (await truth('ev-full-1', 'eth_getBalance', [ADDRESS, `0x${served.toString(16)}`])) as { result: string };
      expect((r.json as { result: string }).result).to.equal(honest.result);
    });

    it('records the liar in /health/disputes (hashes of answers, never a key) and takes it out of rotation once', async () => {
      for (let i = 0; i < 3; i++) await call('/l1', 'eth_getBalance', [ADDRESS, `0x${(head('l1') - 2 - i).toString(16)}`]);
      await until(async () => !(await nodeOf('l1', 'ev-full-2')).inRotation);
      expect((await nodeOf('l1', 'ev-full-2')).reason).to.equal('disputed by the majority');
      expect((await nodeOf('l1', 'ev-full-1')).inRotation).to.equal(true);
      const page = await get(stack.admin('/health/disputes'));
      expect(page.text).to.not.include(stack.key);
      const mine = ((page.json as { disputes: Dispute[] }).disputes ?? []).filter((d) => d.chain === 'l1');
      expect(mine.length).to.be.at.least(3);
      const entry = mine[0] as Dispute;
      expect(entry.method).to.equal('eth_getBalance');
      expect(entry.outcome).to.equal('agreed');
      expect(Number.isNaN(Date.parse(entry.at))).to.equal(false);
      const by = new Map(entry.nodes.map((n) => [n.node, n]));
      expect(by.get('ev-full-2')?.agrees).to.equal(false);
      expect(by.get('ev-full-1')?.agrees).to.equal(true);
      expect(by.get('ev-archive-1')?.agrees).to.equal(true);
      expect(by.get('ev-full-1')?.answer).to.match(/^[0-9a-f]{16}$/);
      expect(by.get('ev-full-1')?.answer).to.equal(by.get('ev-archive-1')?.answer);
      expect(by.get('ev-full-2')?.answer).to.not.equal(by.get('ev-full-1')?.answer);
      const m = await metrics();
      expect(m).to.match(/noderouter_node_disagreements_total\{chain="l1",node="ev-full-2"\} [3-9]/);
      expect(m).to.not.match(/noderouter_node_disagreements_total\{chain="l1",node="ev-full-1"\}/);
      expect(m).to.match(/noderouter_consensus_total\{chain="l1",outcome="agreed"\} \d+/);
      expect(m).to.match(/noderouter_node_transitions_total\{chain="l1",node="ev-full-2",to="out"\} 1/);
      // Out of rotation, the liar is asked nothing more; the two others still agree.
      const before = received('ev-full-2', 'eth_getBalance');
      const r = await call('/l1', 'eth_getBalance', [ADDRESS, `0x${(head('l1') - 1).toString(16)}`]);
      const honest = (await truth('ev-full-1', 'eth_getBalance', [ADDRESS, `0x${(head('l1') - 1).toString(16)}`])) as { result: string };
      expect((r.json as { result: string }).result).to.equal(honest.result);
      expect(received('ev-full-2', 'eth_getBalance')).to.equal(before);
    });

    it('sends methods it does not list to one node only', async () => {
      const nodes = ['ev-full-1', 'ev-full-2', 'ev-archive-1'];
      const before = nodes.map((n) => received(n, 'eth_chainId'));
      const r = await call('/l1-strict', 'eth_chainId', []);
      expect(r.status).to.equal(200);
      const after = nodes.map((n) => received(n, 'eth_chainId'));
      expect(after.reduce((a, b) => a + b) - before.reduce((a, b) => a + b)).to.equal(1);
    });

    it('answers "nodes disagree" (-32603) under onDisagree: error when too few agree', async () => {
      const r = await call('/l1-strict', 'eth_getBalance', [ADDRESS, `0x${(head('l1') - 1).toString(16)}`]);
      expect(r.status).to.equal(502);
      expect(r.json).to.deep.equal({ jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'nodes disagree' } });
      expect(await metrics()).to.match(/noderouter_consensus_total\{chain="l1-strict",outcome="refused"\} 1/);
    });

    it('answers the archive node under onDisagree: prefer-archive', async () => {
      const h = `0x${(head('l1') - 1).toString(16)}`;
      const honest = (await truth('ev-archive-1', 'eth_getBalance', [ADDRESS, h])) as { result: string };
      // Two of three asked, agree 2: whenever the liar is among them they cannot agree.
      for (let i = 0; i < 4; i++) {
        const r = await call('/l1-archive', 'eth_getBalance', [ADDRESS, h]);
        expect((r.json as { result: string }).result).to.equal(honest.result);
      }
    });

    it('brings a disputed node back through probes after its cool-down', async () => {
      await call('/l1-back', 'eth_getBalance', [ADDRESS, `0x${(head('l1') - 1).toString(16)}`]);
      await until(async () => !(await nodeOf('l1-back', 'back-full-2')).inRotation);
      await stack.devnet.node('ev-full-2').clearFaults();
      try {
        const rt = stack.gateway.runtimes().find((c) => c.name === 'l1-back');
        // Probes before the 100 ms cool-down ends leave it out; the first one after brings it back.
        await until(
          async () => {
            await rt?.prober.probeAll();
            return (await nodeOf('l1-back', 'back-full-2')).inRotation;
          },
          { what: 'a probe after the cool-down brings it back', everyMs: 25 },
        );
      } finally {
        await stack.devnet.node('ev-full-2').setFaults({ lie: true });
      }
    });
  });

  describe('Cosmos SDK and objectx', () => {
    it('CometBFT: a block at a height carries the majority app hash; the other app hash is disputed', async () => {
      const h = String(head('hub') - 1);
      const honest = (await truth('cmt-full-1', 'block', { height: h })) as { result: { block: { header: { app_hash: string } } } };
      const lied = (await truth('cmt-full-2', 'block', { height: h })) as { result: { block: { header: { app_hash: string } } } };
      expect(lied.result.block.header.app_hash).to.not.equal(honest.result.block.header.app_hash);
      const r = await call('/hub/rpc', 'block', { height: h });
      expect((r.json as typeof honest).result.block.header.app_hash).to.equal(honest.result.block.header.app_hash);
      await until(async () => (await disputes()).some((d) => d.chain === 'hub-rpc' && d.method === 'block'));
      const d = (await disputes()).find((x) => x.chain === 'hub-rpc') as Dispute;
      expect(d.nodes.find((n) => n.node === 'cmt-full-2')?.agrees).to.equal(false);
    });

    it('CometBFT: abci_query at a height answers the majority; status (no height) goes to one node', async () => {
      const h = String(head('hub') - 1);
      const r = await call('/hub/rpc', 'abci_query', { path: '/cosmos.bank.v1beta1.Query/Balance', data: '0a', height: h });
      expect((r.json as { result: { response: { value: unknown } } }).result.response.value).to.equal(null);
      const nodes = ['cmt-full-1', 'cmt-full-2', 'cmt-archive-1'];
      const before = nodes.map((n) => received(n, '"status"'));
      await call('/hub/rpc', 'status', {});
      expect(nodes.map((n) => received(n, '"status"')).reduce((a, b) => a + b) - before.reduce((a, b) => a + b)).to.equal(1);
    });

    it('SDK REST: a bank balance at a height answers the majority', async () => {
      const h = String(head('hub') - 1);
      const path = '/cosmos/bank/v1beta1/balances/cosmos1abc';
      const honest = await get(`${stack.devnet.node('rest-full-1').url}${path}`, { 'x-cosmos-block-height': h });
      const lied = await get(`${stack.devnet.node('rest-full-2').url}${path}`, { 'x-cosmos-block-height': h });
      expect(lied.text).to.not.equal(honest.text);
      for (let i = 0; i < 3; i++) {
        const r = await get(stack.url(`/hub/rest${path}`), { apikey: stack.key, 'x-cosmos-block-height': h });
        expect(r.status).to.equal(200);
        expect(r.json).to.deep.equal(honest.json);
      }
      await until(async () => (await disputes()).some((d) => d.chain === 'hub-rest'));
    });

    it('objectx: getBalance answers the majority and the liar leaves rotation', async () => {
      const params = ['0x00aa', '0x2::sui::SUI'];
      const honest = (await truth('ox-full-1', 'suix_getBalance', params)) as { result: unknown };
      for (let i = 0; i < 2; i++) {
        const r = await call('/objectx', 'suix_getBalance', params);
        expect((r.json as { result: unknown }).result).to.deep.equal(honest.result);
      }
      await until(async () => !(await nodeOf('objectx', 'ox-full-2')).inRotation);
    });
  });
});
