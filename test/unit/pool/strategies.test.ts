// Node choice among eligible candidates (src/pool/strategies.ts): round-robin cycles,
// weighted keeps exact proportions without bursts, least-latency takes the fastest
// (unmeasured first, with some exploration), priority keeps backups for when the
// primaries are out.

import { expect } from 'chai';
import type { StrategyName } from '../../../src/config/types.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { createStrategy, EXPLORATION } from '../../../src/pool/strategies.js';
import { chainConfig, type NodeSpec } from '../../support/chain.js';

const PLAIN = { archive: false, cost: 1, label: 'm' } as const;

describe('strategies (src/pool/strategies.ts)', () => {
  const pools: NodePool[] = [];

  async function nodes(
    specs: ReadonlyArray<Partial<NodeSpec> & { name: string }>,
    strategy: StrategyName = 'round-robin',
  ): Promise<PoolNode[]> {
    // Nothing is sent: the nodes' URLs are never dialled.
    const config = await chainConfig(
      specs.map((s) => ({ url: 'http://127.0.0.1:9', role: 'full' as const, ...s })),
      `    strategy: ${strategy}`,
    );
    const pool = new NodePool(config);
    pools.push(pool);
    return [...pool.nodes];
  }

  const names = (picks: readonly PoolNode[]): string => picks.map((n) => n.name).join('');

  after(async () => {
    for (const p of pools) await p.close();
  });

  it('round-robin takes each candidate in turn', async () => {
    const list = await nodes([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    const s = createStrategy('round-robin');
    expect(names(Array.from({ length: 7 }, () => s.pick(list, 3)))).to.equal('abcabca');
    // Only the first `count` entries of the list are candidates.
    const t = createStrategy('round-robin');
    expect(names(Array.from({ length: 4 }, () => t.pick(list, 2)))).to.equal('abab');
  });

  it('weighted keeps exact proportions, spread out rather than in bursts (smooth weighted round-robin)', async () => {
    const list = await nodes([
      { name: 'a', weight: 5 },
      { name: 'b', weight: 1 },
      { name: 'c', weight: 1 },
    ]);
    const s = createStrategy('weighted');
    expect(names(Array.from({ length: 7 }, () => s.pick(list, 3)))).to.equal('aabacaa');
    const counts = new Map<string, number>();
    for (let i = 0; i < 700; i++) {
      const n = s.pick(list, 3).name;
      counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).to.deep.equal({ a: 500, b: 100, c: 100 });
  });

  it('least-latency takes the fastest measured node, an unmeasured one first, and explores now and then', async () => {
    const list = await nodes([{ name: 'slow' }, { name: 'fast' }, { name: 'new' }]);
    const [slow, fast] = list as [PoolNode, PoolNode, PoolNode];
    slow.observeLatency(80);
    fast.observeLatency(5);
    const steady = createStrategy('least-latency', () => EXPLORATION);
    expect(steady.pick(list, 3).name).to.equal('new');
    expect(steady.pick(list, 2).name).to.equal('fast');
    // Below the exploration rate, the second draw picks any candidate.
    const draws = [EXPLORATION / 2, 0.1];
    const exploring = createStrategy('least-latency', () => draws.shift() ?? 0.99);
    expect(exploring.pick(list, 2).name).to.equal('slow');
    // A lone candidate is never explored away from.
    expect(createStrategy('least-latency', () => 0).pick(list, 1).name).to.equal('slow');
  });

  it('priority shares traffic among the top priority only, and backups take it when the primaries are out', async () => {
    const list = await nodes(
      [
        { name: 'p', priority: 0 },
        { name: 'b', priority: 1 },
        { name: 'q', priority: 0 },
      ],
      'priority',
    );
    const s = createStrategy('priority');
    expect(names(Array.from({ length: 4 }, () => s.pick([...list], 3)))).to.equal('pqpq');
    // Through the pool: with both primaries out of rotation the backup answers.
    const pool = pools[pools.length - 1] as NodePool;
    expect(pool.select(PLAIN)?.priority).to.equal(0);
    for (const n of list) if (n.priority === 0) n.inRotation = false;
    expect(pool.select(PLAIN)?.name).to.equal('b');
  });
});
