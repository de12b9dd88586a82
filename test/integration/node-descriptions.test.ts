// Nodes that describe themselves, through a real gateway: a node that says it is on
// another chain (the devnet's otherChain fault, on from before the gateway starts) never
// joins rotation and never gets a call; what every node said is in /health/chains; the
// mismatch is logged once and exported as a metric; a node that starts saying another
// chain leaves at its next description and returns when it says the chain again; a
// node without a configured role is given the one it shows; config's chainId wins.

import { expect } from 'chai';
import type { ChainRuntime } from '../../src/chain/runtime.js';
import { createLogger } from '../../src/ops/log.js';
import { get, rpc, startStack, type Stack } from '../support/harness.js';

interface NodeState {
  name: string;
  role: string;
  inRotation: boolean;
  reason: string | null;
  described: { chainId: string | null; client: string | null; earliest: number | null; role: string | null; namespaces: string[] } | null;
  mismatches: string[];
}
interface ChainState {
  chain: string;
  chainId: string | null;
  usable: boolean;
  nodes: NodeState[];
}

describe('nodes that describe themselves', function () {
  this.timeout(20_000);
  let stack: Stack;
  const lines: string[] = [];

  before(async () => {
    stack = await startStack({
      chains: [
        {
          name: 'l1',
          plugin: 'evm',
          path: '/l1',
          extra: '    health: { intervalMs: 60000, timeoutMs: 1000, describeIntervalMs: 60000 }',
          nodes: [
            { name: 'l1-full-1', role: 'full' },
            { name: 'l1-full-2', role: 'full' },
            { name: 'l1-archive-1', role: 'archive' },
            { name: 'l1-stranger', role: 'full' },
            // The archive node again, its role left to what it shows.
            { name: 'l1-unlabelled', sameAs: 'l1-archive-1' },
          ],
        },
        {
          name: 'hub-rpc',
          plugin: 'sdk-rpc',
          path: '/hub/rpc',
          network: 'hub',
          // A long probe timeout: a description the first round missed under load would leave the node unjudged.
          extra: '    chainId: cosmoshub-4\n    health: { intervalMs: 60000, timeoutMs: 5000 }',
          nodes: [{ name: 'hub-rpc-full-1', role: 'full' }],
        },
      ],
      faults: { 'l1-stranger': { otherChain: true } },
      logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
    });
  });
  after(() => stack.close());

  const chains = async (): Promise<ChainState[]> => ((await get(stack.admin('/health/chains'))).json as { chains: ChainState[] }).chains;
  const l1 = async (): Promise<ChainState> => (await chains()).find((c) => c.chain === 'l1') as ChainState;
  const node = async (name: string): Promise<NodeState> => (await l1()).nodes.find((n) => n.name === name) as NodeState;
  const rt = (): ChainRuntime => stack.gateway.runtimes().find((r) => r.name === 'l1') as ChainRuntime;
  /** The next round describes every node again (as once describeIntervalMs has passed). */
  const describeAgain = async (): Promise<void> => {
    for (const n of rt().pool.nodes) n.describedAt = 0;
    await rt().prober.probeAll();
  };

  it('keeps a node that says another chain out of rotation from the start: it never gets a call', async () => {
    const chain = await l1();
    expect(chain.chainId).to.equal('1');
    const stranger = await node('l1-stranger');
    expect(stranger).to.deep.include({ inRotation: false, reason: 'wrong chain: the node says 2, the chain is 1' });
    expect(stranger.described?.chainId).to.equal('2');
    expect(stranger.mismatches).to.deep.equal(['the node says chain 2, not 1 (what most nodes say): kept out of rotation']);
    for (let i = 0; i < 30; i++) {
      const res = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: `g${i}`, method: 'eth_gasPrice' }, { apikey: stack.key });
      expect(res.status).to.equal(200);
    }
    expect(stack.devnet.node('l1-stranger').received.filter((r) => r.body.includes('eth_gasPrice'))).to.deep.equal([]);
    // Logged once, however many rounds say it again.
    await describeAgain();
    const logged = lines.filter((l) => l.includes('"event":"node_mismatch"') && l.includes('l1-stranger'));
    expect(logged).to.have.length(1);
    expect(JSON.parse(logged[0] as string)).to.deep.include({ level: 'warn', chain: 'l1', kind: 'chain', said: '2' });
    const metrics = (await get(stack.admin('/metrics'))).text;
    expect(metrics).to.include('noderouter_node_mismatch{chain="l1",node="l1-stranger",kind="chain"} 1');
    expect(metrics).to.include('noderouter_node_mismatch{chain="l1",node="l1-full-1",kind="chain"} 0');
  });

  it('shows what every node said: chain id, client, oldest state, role and namespaces', async () => {
    const full = await node('l1-full-1');
    expect(full.described).to.deep.include({
      chainId: '1',
      client: 'Geth/v1.14.0-devnet/linux-amd64/go1.22',
      role: 'full',
      namespaces: [],
    });
    expect(full.described?.earliest).to.be.a('number').above(1);
    expect((await node('l1-archive-1')).described).to.deep.include({ role: 'archive', earliest: 1, namespaces: ['debug', 'trace'] });
  });

  it('gives a node configured without a role the one it shows, and sends archive calls to it', async () => {
    const unlabelled = await node('l1-unlabelled');
    expect([unlabelled.role, unlabelled.inRotation, unlabelled.described?.role]).to.deep.equal(['archive', true, 'archive']);
    expect(lines.some((l) => l.includes('"event":"node_role"') && l.includes('l1-unlabelled') && l.includes('"role":"archive"'))).to.equal(
      true,
    );
    for (let i = 0; i < 4; i++) {
      const res = await rpc(
        stack.url('/l1'),
        { jsonrpc: '2.0', id: i, method: 'eth_getBalance', params: ['0x00000000000000000000000000000000000000e1', 'earliest'] },
        { apikey: stack.key },
      );
      expect(res.status).to.equal(200);
    }
    // Archive calls go to both archive nodes: the configured one and the described one.
    const metrics = (await get(stack.admin('/metrics'))).text;
    for (const n of ['l1-archive-1', 'l1-unlabelled']) {
      expect(metrics).to.match(new RegExp(`noderouter_upstream_requests_total\\{chain="l1",node="${n}",outcome="ok"\\} [1-9]`));
    }
  });

  it('takes a node that starts saying another chain out at its next description, and back when it says the chain again', async () => {
    await stack.devnet.node('l1-full-2').setFaults({ otherChain: true });
    await describeAgain();
    expect(await node('l1-full-2')).to.deep.include({ inRotation: false, reason: 'wrong chain: the node says 2, the chain is 1' });
    await stack.devnet.node('l1-full-2').clearFaults();
    await describeAgain();
    expect(await node('l1-full-2')).to.deep.include({ inRotation: true, reason: null, mismatches: [] });
  });

  it('holds the nodes to the chainId in config: none of a chain that says another is used', async () => {
    // The start's round runs unawaited; this one makes sure the node has been asked (a no-op once it has).
    await (stack.gateway.runtimes().find((r) => r.name === 'hub-rpc') as ChainRuntime).prober.probeAll();
    const hub = (await chains()).find((c) => c.chain === 'hub-rpc');
    expect(hub?.chainId).to.equal('cosmoshub-4');
    expect(hub?.usable).to.equal(false);
    expect(hub?.nodes[0]).to.deep.include({
      inRotation: false,
      reason: 'wrong chain: the node says hub-devnet-1, the chain is cosmoshub-4',
    });
    const res = await rpc(stack.url('/hub/rpc'), { jsonrpc: '2.0', id: 1, method: 'status' }, { apikey: stack.key });
    expect(res.status).to.equal(503);
    const ready = (await get(stack.admin('/health/ready'))).json as { chainsWithoutNodes: string[] };
    expect(ready.chainsWithoutNodes).to.deep.equal(['hub-rpc']);
  });
});
