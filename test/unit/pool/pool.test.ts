// Which node may take a call now (src/pool/pool.ts), on a clock the test moves:
// ordinary calls to full nodes with archive nodes as the last resort, archive calls to
// nodes holding the state, archive-only endpoints, nodes already tried, out of
// rotation, backed off after a 429 or behind an open breaker; and the view of the chain
// plugins classify against.

import { expect } from 'chai';
import type { Routing } from '../../../src/plugin/contract.js';
import { NodeFailure } from '../../../src/pool/failures.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { DEFAULT_UPSTREAM_OPTIONS } from '../../../src/pool/upstream.js';
import { chainConfig } from '../../support/chain.js';

const PLAIN: Routing = { archive: false, cost: 1, label: 'm' };
const ARCHIVE: Routing = { archive: true, cost: 1, label: 'm' };
const URL = 'http://127.0.0.1:9';

describe('node pool (src/pool/pool.ts)', () => {
  let now: number;
  let pool: NodePool;
  let full1: PoolNode;
  let full2: PoolNode;
  let arch: PoolNode;

  async function make(extra = ''): Promise<NodePool> {
    const config = await chainConfig(
      [
        { name: 'full-1', url: URL, role: 'full' },
        { name: 'full-2', url: URL, role: 'full' },
        { name: 'arch', url: URL, role: 'archive' },
      ],
      `    breaker: { volumeThreshold: 1, errorThresholdPercentage: 1, resetTimeoutMs: 60000 }${extra}`,
    );
    return new NodePool(config, {}, DEFAULT_UPSTREAM_OPTIONS, undefined, () => now);
  }

  beforeEach(async () => {
    now = 1_000_000;
    pool = await make();
    [full1, full2, arch] = pool.nodes as [PoolNode, PoolNode, PoolNode];
  });

  afterEach(() => pool.close());

  const picks = (routing: Routing, n: number, tried?: ReadonlySet<PoolNode>): string[] =>
    Array.from({ length: n }, () => pool.select(routing, tried)?.name ?? '-');

  it('sends ordinary calls to full nodes, and to archive nodes only when no full node can take them', () => {
    expect(picks(PLAIN, 4)).to.deep.equal(['full-1', 'full-2', 'full-1', 'full-2']);
    expect(pool.select(PLAIN, new Set([full1, full2]))).to.equal(arch);
    expect(pool.select(PLAIN, new Set([full1, full2, arch]))).to.equal(undefined);
  });

  it('sends archive calls to archive nodes, or to full nodes known to retain the height asked for', () => {
    expect(picks(ARCHIVE, 2)).to.deep.equal(['arch', 'arch']);
    full1.earliest = 100;
    full2.earliest = 500;
    expect(picks({ ...ARCHIVE, minHeight: 200 }, 2)).to.deep.equal(['full-1', 'arch']);
    // A full node that reports no retention is not taken for holding old state.
    full1.earliest = undefined;
    expect(pool.select({ ...ARCHIVE, minHeight: 200 })).to.equal(arch);
    // Ordinary calls with a height go only where that height is kept.
    expect(pool.select({ ...PLAIN, minHeight: 200 }, new Set([arch]))).to.equal(undefined);
  });

  it('serves an archive-only endpoint from archive nodes alone', async () => {
    const only = await make('\n    archiveOnly: true');
    expect(only.select(PLAIN)?.name).to.equal('arch');
    (only.nodes[2] as PoolNode).inRotation = false;
    expect(only.select(PLAIN)).to.equal(undefined);
    expect(only.hasUsableNode()).to.equal(false);
    await only.close();
  });

  it('skips nodes out of rotation, backed off after a 429 until the back-off passes, or behind an open breaker', async () => {
    full1.inRotation = false;
    full2.throttle(now);
    expect(pool.select(PLAIN)).to.equal(arch);
    now += 999;
    expect(pool.select(PLAIN)).to.equal(arch);
    now += 1;
    expect(pool.select(PLAIN)).to.equal(full2);

    full2.settle(new NodeFailure('status', 'down'));
    await new Promise((r) => setImmediate(r));
    expect(full2.breakerState).to.equal('open');
    expect(pool.select(PLAIN)).to.equal(arch);
    expect(pool.hasUsableNode()).to.equal(true);
    arch.inRotation = false;
    expect(pool.hasUsableNode()).to.equal(false);
  });

  it('gives cordoned and draining nodes no new calls; calls bound to a cordoned node’s state still reach it; readiness ignores holds', () => {
    full1.hold = 'cordoned';
    expect(picks(PLAIN, 3)).to.deep.equal(['full-2', 'full-2', 'full-2']);
    expect(full1.available(now)).to.equal(false);
    expect(full1.availableForState(now)).to.equal(true);
    full1.hold = 'draining';
    expect(full1.availableForState(now)).to.equal(false);
    full2.hold = 'cordoned';
    arch.hold = 'draining';
    expect(pool.select(PLAIN)).to.equal(undefined);
    expect(pool.hasUsableNode()).to.equal(false);
    // Holds are the operator's: the chain still has healthy nodes, so the instance stays ready.
    expect(pool.hasHealthyNode()).to.equal(true);
    full1.inRotation = false;
    full1.hold = undefined;
    expect(full1.availableForState(now)).to.equal(false);
    expect(pool.select(PLAIN)).to.equal(undefined);
  });

  it('views the chain as the best head of healthy nodes and the lowest height full nodes retain', () => {
    expect(pool.view).to.deep.equal({ head: undefined, fullEarliest: undefined });
    full1.head = 120;
    full1.earliest = 10;
    full2.head = 130;
    full2.earliest = 20;
    arch.head = 125;
    arch.earliest = 1;
    // A node whose last probe failed does not lead the view.
    full2.consecutiveProbeFailures = 1;
    pool.refreshView();
    expect(pool.view).to.deep.equal({ head: 125, fullEarliest: 10 });
  });
});
