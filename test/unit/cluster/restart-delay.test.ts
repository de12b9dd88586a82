// A worker that keeps dying is forked again after a growing pause, so a crash loop
// never spins (src/cluster/primary.ts).

import { expect } from 'chai';
import { restartDelay } from '../../../src/cluster/primary.js';

describe('worker restart backoff (src/cluster/primary.ts)', () => {
  it('forks again at once after one death, then waits 0.25 s, 0.5 s, 1 s … up to 30 s', () => {
    expect([0, 1, 2, 3, 4, 7, 8, 20, 1000].map(restartDelay)).to.deep.equal([0, 250, 500, 1000, 2000, 16_000, 30_000, 30_000, 30_000]);
  });
});
