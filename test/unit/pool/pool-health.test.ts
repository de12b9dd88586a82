// A cluster's worker takes the health the primary's prober decided (NodePool.health and
// adoptHealth, HealthProber.adopt): rotation, heads, lag and the view cross whole; the
// served head never goes back, and a head the worker heard since is kept.

import { expect } from 'chai';
import { HealthProber } from '../../../src/pool/health.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool, type PoolHealth } from '../../../src/pool/pool.js';
import type { ChainHandler } from '../../../src/plugin/contract.js';
import { chainConfig } from '../../support/chain.js';

describe('pool health shared by a cluster (src/pool/pool.ts)', () => {
  async function pools(): Promise<[NodePool, NodePool]> {
    const config = await chainConfig([
      { name: 'a', url: 'http://127.0.0.1:1', role: 'full' },
      { name: 'b', url: 'http://127.0.0.1:2', role: 'full' },
    ]);
    return [new NodePool(config), new NodePool(config)];
  }

  it("gives a worker's pool the primary's verdict, with rotation, heads, lag and view", async () => {
    const [primary, worker] = await pools();
    const [a, b] = primary.nodes as [PoolNode, PoolNode];
    a.head = 100;
    b.head = 90;
    b.lag = 10;
    b.inRotation = false;
    b.outReason = 'lagging 10 blocks';
    primary.refreshView();
    primary.updateServedHead();
    let judged = 0;
    const prober = new HealthProber(worker, {} as ChainHandler, { judged: () => judged++ });
    prober.adopt(structuredClone(primary.health()));
    const [wa, wb] = worker.nodes as [PoolNode, PoolNode];
    expect([wa.head, wa.inRotation, wb.head, wb.lag, wb.inRotation, wb.outReason]).to.deep.equal([
      100,
      true,
      90,
      10,
      false,
      'lagging 10 blocks',
    ]);
    expect(worker.view).to.deep.equal(primary.view);
    expect(worker.servedHead).to.equal(100);
    expect(worker.select({ archive: false, cost: 1, label: 'x' })?.name).to.equal('a');
    expect(judged).to.equal(1);
  });

  it('keeps the served head from going back, and a higher head the worker heard itself', async () => {
    const [primary, worker] = await pools();
    const [a] = primary.nodes as [PoolNode, PoolNode];
    a.head = 100;
    primary.refreshView();
    primary.updateServedHead();
    worker.adoptHealth(primary.health());
    expect(worker.heardHead(worker.nodes[0] as PoolNode, 101)).to.equal(true);
    const stale: PoolHealth = { ...primary.health(), servedHead: 99 };
    worker.adoptHealth(stale);
    expect(worker.servedHead).to.equal(101);
    expect(worker.nodes[0]?.head).to.equal(101);
  });
});
