// Hedging and ejection at load, on devnet nodes through the real gateway: with one node
// hung, a burst of concurrent reads is answered by the other node through hedges, as many
// as the budget's share of the calls allows, far past the 50 a second the old cap gave; a
// node outrun (or timing out) on calls another node answered leaves rotation at its third
// in a row, shown in /health/chains and /metrics, for longer when it happens again, and
// the prober brings it back; a timeout no node answered counts against nobody; and with
// both full nodes slow one of them stays. Reads of every JSON-RPC and REST family are
// hedged, not only the EVM's: CometBFT RPC, SDK REST and the object chain.

import { expect } from 'chai';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const ADDR = '0x00000000000000000000000000000000000000aa';

interface NodeState {
  name: string;
  inRotation: boolean;
  reason: string | null;
  ejections: number;
  ejectedUntil: string | null;
}

function chain(extra: string, nodes: ChainSpec['nodes']): ChainSpec {
  return { name: 'l1', plugin: 'evm', path: '/l1', extra, nodes };
}

const TWO_FULL: ChainSpec['nodes'] = [
  { name: 'a', role: 'full' },
  { name: 'b', role: 'full' },
];
const TWO_FULL_AND_ARCHIVE: ChainSpec['nodes'] = [...TWO_FULL, { name: 'arch', role: 'archive' }];

/** A counter's value in the exposition text (0 when the series is absent). */
function counter(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('hedging and ejection at load', function () {
  this.timeout(60_000);
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  const s = (): Stack => stack as Stack;
  const count = (): Promise<{ status: number; json: unknown }> =>
    rpc(s().url('/l1'), { jsonrpc: '2.0', id: 7, method: 'eth_getTransactionCount', params: [ADDR, 'pending'] }, { apikey: s().key });
  const received = (node: string): number =>
    s()
      .devnet.node(node)
      .received.filter((r) => r.body.includes('eth_getTransactionCount')).length;
  const metrics = async (): Promise<string> => (await get(s().admin('/metrics'))).text;
  const nodeState = async (name: string): Promise<NodeState> => {
    const { chains } = (await get(s().admin('/health/chains'))).json as { chains: Array<{ chain: string; nodes: NodeState[] }> };
    return chains.find((c) => c.chain === 'l1')?.nodes.find((n) => n.name === name) as NodeState;
  };
  const pool = () => s().gateway.runtimes()[0]?.pool;
  const poolNode = (name: string) => pool()?.nodes.find((n) => n.name === name);

  /** Send `n` calls at once; every one must be answered with a count. */
  async function burst(n: number): Promise<void> {
    const answers = await Promise.all(Array.from({ length: n }, () => count()));
    for (const r of answers) {
      expect(r.status).to.equal(200);
      expect((r.json as { result?: string }).result).to.match(/^0x[0-9a-f]+$/);
    }
  }

  it('answers a burst with one node hung through hedges, as many as the budget’s share, past any fixed rate', async () => {
    // Half the calls go to the hung node; a 50% share covers each with a hedge. No ejection
    // and no breaker here: every call sent to the hung node stays on it until hedged.
    stack = await startStack({
      chains: [
        chain(
          '    attemptTimeoutMs: 30000\n    hedge: { minDelayMs: 50, maxDelayMs: 50, budgetPercent: 50, minPerSecond: 0 }\n    ejection: { consecutive: 0 }\n    breaker: { volumeThreshold: 100000 }',
          TWO_FULL,
        ),
      ],
    });
    await s().devnet.node('a').setFaults({ hang: true });
    const N = 120;
    await burst(N);
    // The outrun attempts were cancelled, not left to hold connections to the hung node.
    expect(poolNode('a')?.inFlight).to.equal(0);
    const text = await metrics();
    const at = (node: string, outcome: string): number =>
      counter(text, 'noderouter_upstream_requests_total', `chain="l1",node="${node}",outcome="${outcome}"`);
    // Round-robin sent every other call to the hung node first; each was outrun by its hedge to b.
    expect(at('a', 'timeout')).to.equal(N / 2);
    const won = counter(text, 'noderouter_hedges_total', 'chain="l1",result="won"');
    expect(won).to.equal(N / 2);
    // None waited for its attempt timeout to be tried elsewhere.
    expect(counter(text, 'noderouter_retries_total', 'chain="l1",reason="failure"')).to.equal(0);
    // Hedges besides those: calls first sent to b that b was slow on (a loaded machine), hedged to a and cancelled.
    const sent = counter(text, 'noderouter_hedges_total', 'chain="l1",result="sent"');
    expect(sent).to.equal(won + at('a', 'cancelled'));
    // Within the budget (its savings, 10, and half of the calls), well past the old 50 a second.
    expect(sent).to.be.at.most(10 + N / 2);
    expect(sent).to.be.above(50);
  });

  it('hedges no more than the budget’s share when it is smaller: the rest wait for their attempt timeout, then go elsewhere', async () => {
    stack = await startStack({
      chains: [
        chain(
          '    attemptTimeoutMs: 400\n    hedge: { minDelayMs: 50, maxDelayMs: 50, budgetPercent: 10, minPerSecond: 0 }\n    ejection: { consecutive: 0 }\n    breaker: { volumeThreshold: 100000 }',
          TWO_FULL,
        ),
      ],
    });
    await s().devnet.node('a').setFaults({ hang: true });
    const N = 200;
    await burst(N);
    const text = await metrics();
    const sent = counter(text, 'noderouter_hedges_total', 'chain="l1",result="sent"');
    const won = counter(text, 'noderouter_hedges_total', 'chain="l1",result="won"');
    const retries = counter(text, 'noderouter_retries_total', 'chain="l1",reason="failure"');
    // At least the savings; at most the savings and a tenth of the calls sent (a retry is a call sent too).
    expect(sent).to.be.within(10, 10 + (N + retries) / 10);
    // Each of the hundred calls sent to the hung node first was answered by its hedge, or
    // timed out there and was retried on b: the budget covered far fewer than all of them.
    expect(won + retries).to.be.at.least(N / 2);
    expect(won).to.be.below(N / 2);
  });

  it('ejects a node at its third timeout in a row, for longer the next time, and the prober brings it back', async () => {
    stack = await startStack({
      chains: [
        chain(
          '    attemptTimeoutMs: 30000\n    hedge: { minDelayMs: 30, maxDelayMs: 30 }\n    ejection: { consecutive: 3, baseMs: 300, maxMs: 10000 }\n    breaker: { volumeThreshold: 100000 }',
          TWO_FULL_AND_ARCHIVE,
        ),
      ],
    });
    const a = s().devnet.node('a');
    const outrun = async (): Promise<number> =>
      counter(await metrics(), 'noderouter_upstream_requests_total', 'chain="l1",node="a",outcome="timeout"');
    const ejectA = async (): Promise<void> => {
      const before = await outrun();
      await a.setFaults({ hang: true });
      // One at a time: each call sent to a first is outrun by its hedge to b.
      for (let i = 0; i < 20 && poolNode('a')?.inRotation === true; i++) await burst(1);
      expect((await outrun()) - before, 'calls a was outrun on before it left').to.equal(3);
      const got = received('a');
      for (let i = 0; i < 10; i++) await burst(1);
      expect(received('a'), 'calls a got while ejected').to.equal(got);
    };
    await ejectA();
    const first = await nodeState('a');
    expect(first).to.include({ inRotation: false, reason: 'ejected: 3 consecutive timeouts (ejection 1, for 300 ms)', ejections: 1 });
    expect(first.ejectedUntil).to.be.a('string');
    let text = await metrics();
    expect(counter(text, 'noderouter_node_ejections_total', 'chain="l1",node="a"')).to.equal(1);
    expect(counter(text, 'noderouter_node_transitions_total', 'chain="l1",node="a",to="out"')).to.equal(1);

    // The node answers again; once its ejection is over, a probe round brings it back.
    await a.clearFaults();
    const prober = s().gateway.runtimes()[0]?.prober;
    await until(
      async () => {
        await prober?.probeAll();
        return poolNode('a')?.inRotation === true;
      },
      { what: 'a probe after the ejection brings it back', everyMs: 50 },
    );
    expect(await nodeState('a')).to.include({ inRotation: true, reason: null, ejectedUntil: null });

    await ejectA();
    expect(await nodeState('a')).to.include({ reason: 'ejected: 3 consecutive timeouts (ejection 2, for 600 ms)', ejections: 2 });
    text = await metrics();
    expect(counter(text, 'noderouter_node_ejections_total', 'chain="l1",node="a"')).to.equal(2);
    expect(counter(text, 'noderouter_node_transitions_total', 'chain="l1",node="a",to="in"')).to.equal(1);
    await a.clearFaults();
  });

  it('counts no timeout that no node answered, and with both full nodes slow ejects one and keeps the other', async () => {
    stack = await startStack({
      chains: [
        chain(
          '    attemptTimeoutMs: 200\n    hedge: { minDelayMs: 30, maxDelayMs: 30 }\n    ejection: { consecutive: 3, baseMs: 60000, maxMs: 60000 }\n    breaker: { volumeThreshold: 100000 }',
          TWO_FULL_AND_ARCHIVE,
        ),
      ],
    });
    for (const n of ['a', 'b', 'arch']) await s().devnet.node(n).setFaults({ hang: true });
    // No node answers: the calls were slow, not the nodes (an expensive call looks the same).
    for (let i = 0; i < 4; i++) expect((await count()).status).to.equal(504);
    for (const n of ['a', 'b', 'arch']) expect(await nodeState(n)).to.include({ inRotation: true, ejections: 0 });
    expect(poolNode('a')?.slowInRow).to.equal(0);

    // The archive node answers what both full nodes let time out: their timeouts are their own.
    await s().devnet.node('arch').clearFaults();
    for (let i = 0; i < 8; i++) await burst(1);
    const states = await Promise.all(['a', 'b'].map((n) => nodeState(n)));
    expect(states.filter((st) => !st.inRotation).map((st) => st.reason)).to.deep.equal([
      'ejected: 3 consecutive timeouts (ejection 1, for 60000 ms)',
    ]);
    expect(states.filter((st) => st.inRotation)).to.have.length(1);
    const text = await metrics();
    expect(
      counter(text, 'noderouter_node_ejections_total', 'chain="l1",node="a"') +
        counter(text, 'noderouter_node_ejections_total', 'chain="l1",node="b"'),
    ).to.equal(1);
    // Calls are still answered: the full node kept in rotation is tried, then the archive node.
    expect(pool()?.hasUsableNode()).to.equal(true);
    for (const n of ['a', 'b']) await s().devnet.node(n).clearFaults();
  });
  it('hedges reads of the SDK and object chains too: a hung node costs them the hedge delay, not the attempt timeout', async () => {
    const tuned =
      '    attemptTimeoutMs: 30000\n    hedge: { minDelayMs: 50, maxDelayMs: 50, budgetPercent: 50, minPerSecond: 0 }\n    ejection: { consecutive: 0 }\n    breaker: { volumeThreshold: 100000 }';
    const two = (p: string): ChainSpec['nodes'] => [
      { name: `${p}-a`, role: 'full' },
      { name: `${p}-b`, role: 'full' },
    ];
    stack = await startStack({
      chains: [
        { name: 'hub-rest', plugin: 'sdk-rest', path: '/hub/rest', network: 'hub', extra: tuned, nodes: two('rest') },
        { name: 'hub-rpc', plugin: 'sdk-rpc', path: '/hub/rpc', network: 'hub', extra: tuned, nodes: two('cmt') },
        { name: 'objectx', plugin: 'objectx', path: '/objectx', extra: tuned, nodes: two('ox') },
      ],
    });
    for (const n of ['rest-a', 'cmt-a', 'ox-a']) await s().devnet.node(n).setFaults({ hang: true });
    const N = 20;
    const key = { apikey: s().key };
    const answers = await Promise.all([
      ...Array.from({ length: N }, () => get(s().url('/hub/rest/cosmos/auth/v1beta1/params'), key)),
      ...Array.from({ length: N }, () => rpc(s().url('/hub/rpc'), { jsonrpc: '2.0', id: 1, method: 'status' }, key)),
      ...Array.from({ length: N }, () =>
        rpc(s().url('/objectx'), { jsonrpc: '2.0', id: 1, method: 'objectx_getLatestCheckpointSequenceNumber' }, key),
      ),
    ]);
    expect(answers.map((a) => a.status)).to.deep.equal(Array.from({ length: 3 * N }, () => 200));
    const text = await metrics();
    for (const chainName of ['hub-rest', 'hub-rpc', 'objectx']) {
      // Round-robin sent every other call to the hung node first; each was outrun by its hedge.
      expect(counter(text, 'noderouter_hedges_total', `chain="${chainName}",result="won"`), chainName).to.equal(N / 2);
      expect(counter(text, 'noderouter_retries_total', `chain="${chainName}",reason="failure"`), chainName).to.equal(0);
    }
    for (const n of ['rest-a', 'cmt-a', 'ox-a']) await s().devnet.node(n).clearFaults();
  });
});
