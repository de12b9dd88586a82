// The pool's head is not one node's word (issue 18, point 8): probe rounds over real
// pools with a probe that reports what each node is made to say, and a clock the test
// moves. A node claiming an implausible head leaves rotation once, raises nothing,
// and honest nodes stay.

import { expect } from 'chai';
import { parseConfig } from '../../../src/config/load.js';
import type { ChainConfig } from '../../../src/config/types.js';
import type { ChainHandler, NodeHead } from '../../../src/plugin/contract.js';
import { HealthProber } from '../../../src/pool/health.js';
import { NodePool } from '../../../src/pool/pool.js';

interface Rig {
  pool: NodePool;
  heads: Map<string, number | 'fail'>;
  clock: { now: number };
  moves: string[];
  round(advanceMs?: number): Promise<void>;
  inRotation(): Record<string, boolean>;
}

async function rig(names: readonly string[], health = 'maxLag: 5, minBlockTimeMs: 1000'): Promise<Rig> {
  const nodes = names.map((n, i) => `      - { name: ${n}, url: "http://127.0.0.1:${10 + i}", role: full }`).join('\n');
  const config = await parseConfig(
    `tiers:\n  free: { rate: 5 }\nchains:\n  c:\n    plugin: evm\n    route: { path: /c }\n    health: { ${health} }\n    nodes:\n${nodes}\n`,
    '/etc/nr.yaml',
    {},
  );
  const clock = { now: 1_000_000 };
  const moves: string[] = [];
  const heads = new Map<string, number | 'fail'>();
  const pool = new NodePool(
    config.chains.c as ChainConfig,
    { rotation: (_p, node, inRotation, reason) => moves.push(`${node.name} ${inRotation ? 'in' : 'out'}: ${reason}`) },
    undefined,
    undefined,
    () => clock.now,
  );
  const handler = {
    probe: async (node: { name: string }): Promise<NodeHead> => {
      const h = heads.get(node.name);
      if (h === undefined || h === 'fail') throw new Error('down');
      return { height: h };
    },
  } as unknown as ChainHandler;
  const prober = new HealthProber(pool, handler);
  return {
    pool,
    heads,
    clock,
    moves,
    async round(advanceMs = 2_000) {
      clock.now += advanceMs;
      await prober.probeAll();
    },
    inRotation: () => Object.fromEntries(pool.nodes.map((n) => [n.name, n.inRotation])),
  };
}

function set(r: Rig, heads: Record<string, number | 'fail'>): void {
  for (const [k, v] of Object.entries(heads)) r.heads.set(k, v);
}

describe('implausible heads', () => {
  const rigs: Rig[] = [];
  const make = async (names: readonly string[], health?: string): Promise<Rig> => {
    const r = await rig(names, health);
    rigs.push(r);
    return r;
  };
  after(async () => {
    for (const r of rigs) await r.pool.close();
  });

  it('a node far above the median of the others is out, raises nothing, and is logged once', async () => {
    const r = await make(['a', 'b', 'c', 'liar']);
    set(r, { a: 100, b: 100, c: 101, liar: 100 });
    await r.round();
    expect(r.pool.view.head).to.equal(101);
    set(r, { a: 101, b: 102, c: 102, liar: 5_000 });
    await r.round();
    await r.round();
    expect(r.pool.view.head).to.equal(102);
    expect(r.inRotation()).to.deep.equal({ a: true, b: true, c: true, liar: false });
    expect(r.moves).to.have.length(1);
    expect(r.moves[0]).to.match(/^liar out: implausible head 5000: 4898 blocks above the median/);
    // Back with the others: believed again, back in rotation.
    set(r, { liar: 102 });
    await r.round();
    expect(r.inRotation().liar).to.equal(true);
    expect(r.moves[1]).to.equal('liar in: recovered');
  });

  it('catches the liar on the very first round, before any head is known', async () => {
    const r = await make(['a', 'b', 'liar']);
    set(r, { a: 50, b: 52, liar: 1_000_000 });
    await r.round();
    expect(r.pool.view.head).to.equal(52);
    expect(r.inRotation()).to.deep.equal({ a: true, b: true, liar: false });
  });

  it('a jump no block time allows is implausible when no other node confirms it (a pool of two)', async () => {
    const r = await make(['honest', 'liar']);
    set(r, { honest: 100, liar: 100 });
    await r.round();
    // 2 s at one block a second at most: 100 + 5 + 2 is the most either may say.
    set(r, { honest: 102, liar: 108 });
    await r.round(2_000);
    expect(r.inRotation()).to.deep.equal({ honest: true, liar: false });
    expect(r.pool.view.head).to.equal(102);
    expect(r.pool.nodes[1]?.outReason).to.match(/^implausible head 108: 8 blocks above 100 in 2s/);
    // The honest node never lags behind a head it cannot reach.
    expect(r.pool.nodes[0]?.lag).to.equal(0);
    // Staying ahead does not launder the jump: each round is judged from the believed head.
    for (let i = 1; i <= 5; i++) {
      set(r, { honest: 102 + 2 * i, liar: 108 + 2 * i });
      await r.round(2_000);
    }
    expect(r.inRotation()).to.deep.equal({ honest: true, liar: false });
    expect(r.pool.view.head).to.equal(112);
    expect(r.moves).to.deep.equal([r.moves[0]]);
  });

  it('within what block times allow, a node ahead alone is believed', async () => {
    const r = await make(['a', 'b']);
    set(r, { a: 100, b: 100 });
    await r.round();
    set(r, { a: 100, b: 110 });
    await r.round(10_000); // 10 s: up to 10 blocks, plus maxLag
    expect(r.inRotation()).to.deep.equal({ a: false, b: true });
    expect(r.pool.view.head).to.equal(110);
    expect(r.moves).to.deep.equal(['a out: lagging 10 blocks']);
  });

  it('a head every node agrees on is believed however far it jumped', async () => {
    const r = await make(['a', 'b', 'c']);
    set(r, { a: 100, b: 100, c: 100 });
    await r.round();
    set(r, { a: 10_100, b: 10_100, c: 10_099 });
    await r.round(1);
    expect(r.pool.view.head).to.equal(10_100);
    expect(r.inRotation()).to.deep.equal({ a: true, b: true, c: true });
    expect(r.moves).to.deep.equal([]);
  });

  it('a node that was down comes back at the head time allows; a single node too', async () => {
    const r = await make(['only'], 'maxLag: 5, minBlockTimeMs: 1000, failAfter: 1');
    set(r, { only: 100 });
    await r.round();
    set(r, { only: 'fail' });
    await r.round();
    expect(r.pool.view.head).to.equal(undefined);
    // Ten minutes later: 600 blocks is what the chain could have made.
    set(r, { only: 700 });
    await r.round(600_000);
    expect(r.inRotation().only).to.equal(true);
    expect(r.pool.view.head).to.equal(700);
    // A thousand blocks in two seconds is not.
    set(r, { only: 1_700 });
    await r.round(2_000);
    expect(r.inRotation().only).to.equal(false);
    expect(r.pool.view.head).to.equal(undefined);
    // It is believed again once that much time has passed.
    await r.round(1_000_000);
    expect(r.inRotation().only).to.equal(true);
    expect(r.pool.view.head).to.equal(1_700);
    expect(r.moves).to.deep.equal([
      'only out: probe failed',
      'only in: recovered',
      'only out: implausible head 1700: 1000 blocks above 700 in 2s',
      'only in: recovered',
    ]);
  });

  it('a lagging node catching up is not a jump: the pool head confirms it', async () => {
    const r = await make(['a', 'b', 'c']);
    set(r, { a: 1_000, b: 1_000, c: 10 });
    await r.round();
    expect(r.inRotation().c).to.equal(false);
    set(r, { a: 1_001, b: 1_001, c: 1_001 });
    await r.round(1);
    expect(r.inRotation()).to.deep.equal({ a: true, b: true, c: true });
  });
});
