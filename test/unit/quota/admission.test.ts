import { expect } from 'chai';
import type { TierConfig } from '../../../src/config/types.js';
import { Admitter } from '../../../src/quota/admission.js';
import { UsageBook } from '../../../src/quota/usage.js';
import { tierConfig } from '../../support/tiers.js';

// Accounts unlimited unless a test says otherwise: these tests are about one key.
const tier = (over: Partial<TierConfig>): TierConfig => tierConfig({ name: 't', rate: 10, burst: 5, ...over });

/** One key of one account. */
const K = { id: 'k', account: 'acme' };

describe('admission', () => {
  it('lets through the rate over time, not a fixed window', () => {
    let now = 0;
    const a = new Admitter(new UsageBook(), () => now);
    let allowed = 0;
    // 20 calls/s offered for 10 s against 10/s with burst 5.
    for (let i = 0; i < 200; i++) {
      now = i * 50;
      if (a.admit(K, tier({}), 1, 'c').allowed) allowed++;
    }
    expect(allowed).to.be.within(100, 106);
  });

  it('resets the daily quota at the UTC day boundary and counts usage once', () => {
    let now = Date.UTC(2026, 0, 1, 23, 59, 0);
    const usage = new UsageBook();
    const a = new Admitter(usage, () => now);
    const t = tier({ rate: Infinity, burst: Infinity, daily: 3 });
    expect([1, 2, 3, 4].map(() => a.admit(K, t, 1, 'c').allowed)).to.deep.equal([true, true, true, false]);
    const refused = a.admit(K, t, 1, 'c');
    expect(refused.allowed).to.equal(false);
    if (!refused.allowed) {
      expect(refused.reason).to.equal('daily');
      expect(refused.retryAfter).to.equal(60);
    }
    now = Date.UTC(2026, 0, 2, 0, 0, 1);
    expect(a.admit(K, t, 1, 'c').allowed).to.equal(true);
    expect(usage.rows('k')).to.deep.equal([
      { day: '2026-01-01', chain: 'c', calls: 3, errors: 0, limited: 2 },
      { day: '2026-01-02', chain: 'c', calls: 1, errors: 0, limited: 0 },
    ]);
  });

  it('applies the monthly quota across days', () => {
    let now = Date.UTC(2026, 1, 27);
    const a = new Admitter(new UsageBook(), () => now);
    const t = tier({ rate: Infinity, burst: Infinity, monthly: 2 });
    expect(a.admit(K, t, 2, 'c').allowed).to.equal(true);
    now = Date.UTC(2026, 1, 28);
    const r = a.admit(K, t, 1, 'c');
    expect(r.allowed).to.equal(false);
    now = Date.UTC(2026, 2, 1);
    expect(a.admit(K, t, 1, 'c').allowed).to.equal(true);
  });
});
