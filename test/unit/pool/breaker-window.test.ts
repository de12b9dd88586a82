// The closed breaker's counters (src/pool/breaker-window.ts): nothing opens below the
// volume, failures must be above the threshold share of the window's calls (as opossum
// reads errorThresholdPercentage), and calls older than the window no longer count.
// Through a pool node: a healthy node's answers never reach opossum, and the failure
// that tips the window opens its breaker.

import { expect } from 'chai';
import { BreakerWindow } from '../../../src/pool/breaker-window.js';
import { PoolNode } from '../../../src/pool/pool-node.js';
import { NodeFailure } from '../../../src/pool/failures.js';
import { UpstreamNode } from '../../../src/pool/upstream.js';

describe('breaker window (src/pool/breaker-window.ts)', () => {
  it('opens only past the volume, and only above the threshold share', () => {
    const w = new BreakerWindow(10_000, 4, 50);
    expect(w.record(true, 0)).to.equal(false); // 1 call
    expect(w.record(false, 1)).to.equal(false);
    expect(w.record(false, 2)).to.equal(false);
    // 2 of 4 failed: 50% is not above 50%.
    expect(w.record(true, 3)).to.equal(false);
    // 3 of 5: above.
    expect(w.record(true, 4)).to.equal(true);
  });

  it('forgets calls older than the window', () => {
    const w = new BreakerWindow(1_000, 2, 50);
    for (let i = 0; i < 10; i++) w.record(false, i);
    // Ten good calls in the window: one failure is 1 of 11.
    expect(w.record(true, 50)).to.equal(false);
    // A window later all of them are gone: a lone failure is below the volume, a second one opens.
    expect(w.record(true, 1_150)).to.equal(false);
    expect(w.record(true, 1_200)).to.equal(true);
  });

  it("keeps a healthy node's answers out of opossum and opens the breaker on the failure that tips the window", async () => {
    const node = new PoolNode(
      { name: 'n0', url: 'http://127.0.0.1:9', role: 'full', weight: 1, priority: 0 } as never,
      new UpstreamNode('http://127.0.0.1:9'),
      { errorThresholdPercentage: 50, volumeThreshold: 3, rollingWindowMs: 10_000, resetTimeoutMs: 60_000 },
    );
    let fires = 0;
    node.breaker.on('fire', () => void fires++);
    const opened: string[] = [];
    node.breaker.on('open', () => opened.push('open'));
    for (let i = 0; i < 3; i++) node.settle('ok');
    expect(fires).to.equal(0);
    // Three of six calls failed: 50% is not above 50%.
    for (let i = 0; i < 3; i++) node.settle(new NodeFailure('io', 'reset'));
    expect(opened).to.deep.equal([]);
    expect(node.breakerFailures).to.equal(3);
    node.settle(new NodeFailure('io', 'reset'));
    expect(opened).to.deep.equal(['open']);
    expect(node.breakerState).to.equal('open');
    expect(fires).to.equal(0);
    await node.close();
  });
});
