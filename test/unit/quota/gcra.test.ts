import { expect } from 'chai';
import { gcra } from '../../../src/quota/gcra.js';

describe('GCRA', () => {
  it('honours a burst from idle, then the sustained rate', () => {
    let tat = 0;
    const now = 1_000_000;
    let allowed = 0;
    for (let i = 0; i < 10; i++) {
      const r = gcra(tat, now, 10, 5, 1);
      if (r.decision.allowed) allowed++;
      tat = r.tat;
    }
    expect(allowed).to.equal(5);
    // 100 ms later exactly one more call fits (10/s).
    expect(gcra(tat, now + 100, 10, 5, 1).decision.allowed).to.equal(true);
    expect(gcra(tat, now + 50, 10, 5, 1).decision).to.include({ allowed: false });
  });

  it('charges a batch its cost at once and reports when to retry', () => {
    const r = gcra(0, 0, 10, 5, 6);
    expect(r.decision.allowed).to.equal(false);
    const ok = gcra(0, 0, 10, 5, 5);
    expect(ok.decision).to.include({ allowed: true, remaining: 0 });
    const next = gcra(ok.tat, 0, 10, 5, 1);
    expect(next.decision.retryAfterMs).to.equal(100);
  });
});

describe('GCRA and the clock', () => {
  it('starts afresh when the clock stepped back past the tolerance and a minute, not for a small skew', () => {
    const now = 10_000_000;
    let tat = 0;
    for (let i = 0; i < 5; i++) tat = gcra(tat, now, 10, 5, 1).tat;
    expect(gcra(tat, now, 10, 5, 1).decision.allowed).to.equal(false);
    // Another instance's clock 30 s behind: still drained.
    expect(gcra(tat, now - 30_000, 10, 5, 1).decision.allowed).to.equal(false);
    // The clock stepped back an hour: a fresh bucket, not an hour shut.
    expect(gcra(tat, now - 3_600_000, 10, 5, 1).decision).to.include({ allowed: true, remaining: 4 });
  });
});
