// Nodes that describe themselves (src/pool/describe.ts through health.ts): a scripted
// plugin says what each node answers, and probe rounds are run one at a time on a clock
// the test moves. The pool learns its chain from a majority (or config), a node saying
// another chain is out of rotation from the first round on and comes back once it says
// the chain, mismatches are reported once, roles are detected where config leaves them.

import { expect } from 'chai';
import { parseConfig } from '../../../src/config/load.js';
import type { ChainConfig } from '../../../src/config/types.js';
import type { ChainHandler, NodeDescription } from '../../../src/plugin/contract.js';
import { HealthProber } from '../../../src/pool/health.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';

const INTERVAL = 60_000;

async function config(nodes: string, extra = ''): Promise<ChainConfig> {
  const text = `tiers: { t: {} }
chains:
  c:
    plugin: evm
    route: { path: /c }
${extra}
    health: { describeIntervalMs: ${INTERVAL}, intervalMs: 1000, failAfter: 2 }
    nodes:
${nodes}
`;
  return (await parseConfig(text, '/test.yaml', {})).chains.c as ChainConfig;
}

const THREE = ['a', 'b', 'c'].map((n, i) => `      - { name: ${n}, url: "http://127.0.0.1:${9 + i}", role: full }`).join('\n');

describe('nodes that describe themselves (src/pool/describe.ts)', () => {
  let clock: number;
  /** What each node says when asked; an Error: it answers nothing. */
  let says: Record<string, NodeDescription | Error>;
  let asked: string[];
  let events: string[];

  const handler: ChainHandler = {
    classify: () => ({ archive: false, cost: 1, label: 'm' }),
    probe: () => Promise.resolve({ height: 100 }),
    describe: (node) => {
      asked.push(node.name);
      const d = says[node.name];
      return d instanceof Error || d === undefined ? Promise.reject(d ?? new Error('no answer')) : Promise.resolve(d);
    },
  };

  function prober(cfg: ChainConfig): { pool: NodePool; prober: HealthProber; node: (n: string) => PoolNode } {
    const pool = new NodePool(
      cfg,
      { rotation: (_p, n, inRotation, reason) => events.push(`${n.name} ${inRotation ? 'in' : 'out'}: ${reason}`) },
      undefined,
      undefined,
      () => clock,
    );
    const p = new HealthProber(pool, handler, {
      mismatch: (_p, n, m) => events.push(`${n.name} mismatch ${m.kind}: ${m.text}`),
      detected: (_p, n) => events.push(`${n.name} detected ${n.role}`),
    });
    return { pool, prober: p, node: (name) => pool.nodes.find((n) => n.name === name) as PoolNode };
  }

  beforeEach(() => {
    clock = 1_000_000;
    asked = [];
    events = [];
  });

  it('learns the chain from a majority, keeps a node saying another one out from the first round, and lets it in once it says the chain', async () => {
    says = { a: { chainId: '1' }, b: { chainId: '1' }, c: { chainId: '5', client: 'Geth/x' } };
    const { pool, prober: p, node } = prober(await config(THREE));
    await p.probeAll();
    expect(pool.chainId).to.equal('1');
    const c = node('c');
    expect([c.inRotation, c.outReason, c.head]).to.deep.equal([false, 'wrong chain: the node says 5, the chain is 1', undefined]);
    expect(events).to.deep.equal([
      'c mismatch chain: the node says chain 5, not 1 (what most nodes say): kept out of rotation',
      'c out: wrong chain: the node says 5, the chain is 1',
    ]);
    expect(pool.view.head).to.equal(100);
    expect(pool.select({ archive: false, cost: 1, label: 'm' }, new Set([node('a'), node('b')]))).to.equal(undefined);
    // Said again at the next description: nothing new to report.
    clock += INTERVAL;
    await p.probeAll();
    expect(events).to.have.length(2);
    expect(c.mismatches.map((m) => m.kind)).to.deep.equal(['chain']);
    // The operator repoints the node: it says the chain, and joins.
    says.c = { chainId: '1' };
    clock += INTERVAL;
    await p.probeAll();
    expect([c.inRotation, c.mismatches, c.head]).to.deep.equal([true, [], 100]);
    expect(events.at(-1)).to.equal('c in: recovered');
  });

  it('takes the chain from config over what the nodes say, and keeps the first majority it learnt', async () => {
    says = { a: { chainId: '1' }, b: { chainId: '7' }, c: { chainId: '7' } };
    const { pool, prober: p, node } = prober(await config(THREE, '    chainId: 1'));
    await p.probeAll();
    expect(pool.chainId).to.equal('1');
    expect(['a', 'b', 'c'].map((n) => node(n).inRotation)).to.deep.equal([true, false, false]);
    expect(events[0]).to.equal('b mismatch chain: the node says chain 7, not 1 (chainId in config): kept out of rotation');

    const learnt = prober(await config(THREE));
    says = { a: { chainId: '1' }, b: { chainId: '1' }, c: { chainId: '2' } };
    await learnt.prober.probeAll();
    // Later the majority turns: the chain learnt first stands.
    says = { a: { chainId: '2' }, b: { chainId: '2' }, c: { chainId: '2' } };
    clock += INTERVAL;
    await learnt.prober.probeAll();
    expect(learnt.pool.chainId).to.equal('1');
    expect(['a', 'b', 'c'].map((n) => learnt.node(n).inRotation)).to.deep.equal([false, false, false]);
  });

  it('refuses nobody while the nodes disagree with no majority, and shows the disagreement', async () => {
    says = { a: { chainId: '1' }, b: { chainId: '2' } };
    const two = ['a', 'b'].map((n, i) => `      - { name: ${n}, url: "http://127.0.0.1:${9 + i}", role: full }`).join('\n');
    const { pool, prober: p, node } = prober(await config(two));
    await p.probeAll();
    expect(pool.chainId).to.equal(undefined);
    expect([node('a').inRotation, node('b').inRotation]).to.deep.equal([true, true]);
    expect(node('b').mismatches.map((m) => m.text)).to.deep.equal([
      'the node says chain 2, and the nodes disagree with no majority: set chains.c.chainId',
    ]);
  });

  it('asks each node once per describeIntervalMs, and again next round when it answered nothing', async () => {
    says = { a: { chainId: '1' }, b: new Error('down'), c: { chainId: '1' } };
    const { prober: p, node } = prober(await config(THREE));
    await p.probeAll();
    expect(asked.sort()).to.deep.equal(['a', 'b', 'c']);
    expect([node('b').described, node('b').inRotation]).to.deep.equal([undefined, true]);
    asked = [];
    clock += 1_000;
    await p.probeAll();
    expect(asked).to.deep.equal(['b']);
    asked = [];
    clock += INTERVAL;
    await p.probeAll();
    expect(asked.sort()).to.deep.equal(['a', 'b', 'c']);
  });

  it('takes the role a node shows when config leaves it out, and keeps config’s when they disagree', async () => {
    says = { a: { role: 'archive', earliest: 1 }, b: { role: 'full', earliest: 873 }, c: { role: 'full', earliest: 900 } };
    const nodes = [
      '      - { name: a, url: "http://127.0.0.1:9" }',
      '      - { name: b, url: "http://127.0.0.1:10" }',
      '      - { name: c, url: "http://127.0.0.1:11", role: archive }',
    ].join('\n');
    const { prober: p, node } = prober(await config(nodes));
    expect(node('a').role).to.equal('full');
    await p.probeAll();
    expect(['a', 'b', 'c'].map((n) => node(n).role)).to.deep.equal(['archive', 'full', 'archive']);
    expect(events).to.deep.equal([
      'a detected archive',
      "c mismatch role: config says archive, the node answers as full (its oldest state is at 900); config's role is kept",
    ]);
    // A role mismatch keeps the node in rotation.
    expect(node('c').inRotation).to.equal(true);
  });
});
