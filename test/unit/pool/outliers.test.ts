// Outlier ejection (src/pool/outliers.ts) as the attempt loop's blame (src/exec/attempts/blame.ts)
// feeds it, on a pool with a clock the test moves: timeouts in a row that other nodes
// answered eject a node at once, timeouts no node answered never count, an answer ends
// the run, a run is within its window; ejections grow and are forgotten; at most
// maxPercent of the pool is out at once and a node of each role stays; the prober keeps
// an ejected node out until its time is over, then brings it back.

import { expect } from 'chai';
import { Blame } from '../../../src/exec/attempts/blame.js';
import { NodeFailure } from '../../../src/pool/failures.js';
import { HealthProber } from '../../../src/pool/health.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import { chainConfig, scriptedPlugin } from '../../support/chain.js';

const timeout = (): NodeFailure => new NodeFailure('timeout', 'no answer within 10000 ms');

interface Setup {
  readonly pool: NodePool;
  readonly nodes: readonly PoolNode[];
  readonly clock: { t: number };
  readonly rotations: string[];
  readonly ejected: string[];
}

async function setup(count: number, ejection = '', roles: ReadonlyArray<'full' | 'archive'> = []): Promise<Setup> {
  const specs = Array.from({ length: count }, (_, i) => ({ name: `n${i}`, url: `http://127.0.0.1:${i + 1}`, role: roles[i] ?? 'full' }));
  const config = await chainConfig(
    specs,
    `    ejection: { windowMs: 1000, baseMs: 100, maxMs: 1000${ejection} }\n    breaker: { volumeThreshold: 1000 }`,
  );
  const clock = { t: 1_000_000 };
  const rotations: string[] = [];
  const ejected: string[] = [];
  const pool = new NodePool(
    config,
    {
      rotation: (_p, n, inRotation, reason) => rotations.push(`${n.name} ${inRotation ? 'in' : 'out'}: ${reason}`),
      ejected: (_p, n, until) => ejected.push(`${n.name} until +${until - clock.t}`),
    },
    undefined,
    undefined,
    () => clock.t,
  );
  return { pool, nodes: pool.nodes, clock, rotations, ejected };
}

/** One forward's worth of blame: `slow` timed out on the job, then `by` answered it (or nobody did). */
function timedOutThenAnswered(pool: NodePool, slow: PoolNode, by: PoolNode | undefined): void {
  const blame = new Blame(pool);
  const job = {};
  blame.failed(slow, job, timeout());
  if (by !== undefined) blame.answered(by, job);
  blame.release();
}

describe('outlier ejection (src/pool/outliers.ts)', () => {
  let s: Setup;
  afterEach(() => s.pool.close());

  it('ejects a node at its third timeout in a row on calls another node answered, and not before', async () => {
    s = await setup(3);
    const [a, b] = s.nodes as [PoolNode, PoolNode];
    timedOutThenAnswered(s.pool, a, b);
    timedOutThenAnswered(s.pool, a, b);
    expect(a.inRotation).to.equal(true);
    timedOutThenAnswered(s.pool, a, b);
    expect(a.inRotation).to.equal(false);
    expect(a.outReason).to.equal('ejected: 3 consecutive timeouts (ejection 1, for 100 ms)');
    expect(s.rotations).to.deep.equal(['n0 out: ejected: 3 consecutive timeouts (ejection 1, for 100 ms)']);
    expect(s.ejected).to.deep.equal(['n0 until +100']);
    expect(s.pool.select({ archive: false, cost: 1, label: '' })).to.not.equal(a);
  });

  it('counts being outrun by a hedge as a timeout of its own', async () => {
    s = await setup(3);
    const a = s.nodes[0] as PoolNode;
    const blame = new Blame(s.pool);
    for (let i = 0; i < 3; i++) blame.outran(a);
    expect(s.ejected).to.deep.equal(['n0 until +100']);
  });

  it('never counts a timeout no node answered: the request, not the node, was slow', async () => {
    s = await setup(3);
    const [a, b] = s.nodes as [PoolNode, PoolNode];
    for (let i = 0; i < 10; i++) timedOutThenAnswered(s.pool, a, undefined);
    expect(a.inRotation).to.equal(true);
    expect(a.slowInRow).to.equal(0);
    // Held failures other than timeouts (a reset, an unusable answer) are the breaker's, not ejection's.
    for (let i = 0; i < 5; i++) {
      const blame = new Blame(s.pool);
      const job = {};
      blame.failed(a, job, new NodeFailure('io', 'socket hang up'));
      blame.answered(b, job);
    }
    expect(a.inRotation).to.equal(true);
    expect(s.ejected).to.deep.equal([]);
  });

  it('starts the run over after an answer, or when the last timeout is older than windowMs', async () => {
    s = await setup(3);
    const [a, b] = s.nodes as [PoolNode, PoolNode];
    timedOutThenAnswered(s.pool, a, b);
    timedOutThenAnswered(s.pool, a, b);
    new Blame(s.pool).answered(a, {});
    timedOutThenAnswered(s.pool, a, b);
    timedOutThenAnswered(s.pool, a, b);
    expect(a.inRotation).to.equal(true);
    s.clock.t += 1001;
    timedOutThenAnswered(s.pool, a, b);
    expect(a.inRotation, 'the third came after the window').to.equal(true);
    s.clock.t += 1000;
    timedOutThenAnswered(s.pool, a, b);
    timedOutThenAnswered(s.pool, a, b);
    expect(a.inRotation).to.equal(false);
  });

  it('ejects for longer each time (baseMs × n, at most maxMs), and forgets one ejection per maxMs back in rotation', async () => {
    s = await setup(3);
    const [a, b] = s.nodes as [PoolNode, PoolNode];
    const ejectAgain = (): void => {
      a.inRotation = true;
      a.outReason = '';
      for (let i = 0; i < 3; i++) timedOutThenAnswered(s.pool, a, b);
    };
    ejectAgain();
    for (let i = 0; i < 12; i++) {
      s.clock.t += 200;
      ejectAgain();
    }
    expect(s.ejected.slice(0, 4)).to.deep.equal(['n0 until +100', 'n0 until +200', 'n0 until +300', 'n0 until +400']);
    expect(s.ejected.slice(-2)).to.deep.equal(['n0 until +1000', 'n0 until +1000']);
    expect(a.outReason).to.equal('ejected: 3 consecutive timeouts (ejection 13, for 1000 ms)');
    // Back for 2.5 maxMs after its last ejection ended: two of thirteen forgotten.
    s.clock.t += 1000 + 2500;
    ejectAgain();
    expect(s.ejected.at(-1)).to.equal('n0 until +1000');
    expect(a.ejections).to.equal(12);
    s.clock.t += 1000 + 20_000;
    ejectAgain();
    expect(a.outReason).to.equal('ejected: 3 consecutive timeouts (ejection 1, for 100 ms)');
  });

  it('keeps one of two slow nodes in rotation, whatever maxPercent says', async () => {
    s = await setup(3, ', maxPercent: 100', ['full', 'full', 'archive']);
    const [a, b, archive] = s.nodes as [PoolNode, PoolNode, PoolNode];
    // Both full nodes time out on calls the archive node answers.
    for (let i = 0; i < 6; i++) {
      timedOutThenAnswered(s.pool, a, archive);
      timedOutThenAnswered(s.pool, b, archive);
    }
    expect([a.inRotation, b.inRotation]).to.deep.equal([false, true]);
    expect(s.ejected).to.deep.equal(['n0 until +100']);
  });

  it('ejects at most maxPercent of the pool at once; another may go once one is back', async () => {
    s = await setup(5);
    const [a, b, c, d, e] = s.nodes as [PoolNode, PoolNode, PoolNode, PoolNode, PoolNode];
    for (const slow of [a, b, c, d]) for (let i = 0; i < 3; i++) timedOutThenAnswered(s.pool, slow, e);
    // floor(5 × 50%) = 2.
    expect(s.nodes.map((n) => n.inRotation)).to.deep.equal([false, false, true, true, true]);
    // Ejections over, probes bring them back (the prober's part, below); c's next timeout ejects it.
    s.clock.t += 101;
    for (const n of [a, b]) n.inRotation = true;
    timedOutThenAnswered(s.pool, c, e);
    expect(c.inRotation).to.equal(false);
  });

  it('is off with consecutive: 0', async () => {
    s = await setup(3, ', consecutive: 0');
    const [a, b] = s.nodes as [PoolNode, PoolNode];
    for (let i = 0; i < 20; i++) timedOutThenAnswered(s.pool, a, b);
    expect(a.inRotation).to.equal(true);
  });

  it('the prober keeps an ejected node out while its ejection lasts, though it probes fine, then brings it back', async () => {
    s = await setup(3);
    const [a, b] = s.nodes as [PoolNode, PoolNode];
    const handler = scriptedPlugin().create({ chain: 'c', options: {}, limits: DEFAULT_JSONRPC_LIMITS });
    const prober = new HealthProber(s.pool, handler);
    await prober.probeAll();
    for (let i = 0; i < 3; i++) timedOutThenAnswered(s.pool, a, b);
    await prober.probeAll();
    expect([a.inRotation, a.outReason]).to.deep.equal([false, 'ejected: 3 consecutive timeouts (ejection 1, for 100 ms)']);
    s.clock.t += 100;
    await prober.probeAll();
    expect([a.inRotation, a.outReason]).to.deep.equal([true, '']);
    expect(s.rotations).to.deep.equal(['n0 out: ejected: 3 consecutive timeouts (ejection 1, for 100 ms)', 'n0 in: recovered']);
  });

  it('says why a node stays out once its ejection is over and probes fail', async () => {
    s = await setup(3);
    const [a, b] = s.nodes as [PoolNode, PoolNode];
    let failing = false;
    const ok = scriptedPlugin().create({ chain: 'c', options: {}, limits: DEFAULT_JSONRPC_LIMITS });
    const prober = new HealthProber(s.pool, {
      ...ok,
      probe: (node, ms) => (failing && node === a ? Promise.reject(new Error('hung')) : ok.probe(node, ms)),
    });
    await prober.probeAll();
    for (let i = 0; i < 3; i++) timedOutThenAnswered(s.pool, a, b);
    failing = true;
    await prober.probeAll();
    expect(a.outReason).to.match(/^ejected: /);
    s.clock.t += 100;
    await prober.probeAll();
    expect([a.inRotation, a.outReason]).to.deep.equal([false, 'probe failed']);
    failing = false;
    await prober.probeAll();
    expect(a.inRotation).to.equal(true);
    expect(s.rotations).to.have.length(2);
  });
});
