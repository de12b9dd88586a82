// Failed sign-ins per address in one-minute windows, on a clock the test moves.

import { expect } from 'chai';
import { SigninThrottle } from '../../../src/accounts/signin-throttle.js';

describe('sign-in throttle', () => {
  it('refuses an address after N failures until its minute is over, and no other address', () => {
    let clock = 1_000_000;
    const t = new SigninThrottle(3, () => clock);
    for (let i = 0; i < 3; i++) {
      expect(t.retryAfter('10.0.0.1')).to.equal(0);
      t.failed('10.0.0.1');
    }
    expect(t.retryAfter('10.0.0.1')).to.equal(60);
    expect(t.retryAfter('10.0.0.2')).to.equal(0);
    clock += 45_500;
    expect(t.retryAfter('10.0.0.1')).to.equal(15);
    clock += 14_500;
    expect(t.retryAfter('10.0.0.1')).to.equal(0);
    t.failed('10.0.0.1');
    expect(t.retryAfter('10.0.0.1')).to.equal(0);
  });

  it('starts afresh when the clock steps back, and follows a reloaded limit', () => {
    let clock = 5_000_000;
    const t = new SigninThrottle(1, () => clock);
    t.failed('a');
    expect(t.retryAfter('a')).to.be.greaterThan(0);
    clock -= 3_600_000;
    expect(t.retryAfter('a')).to.equal(0);
    t.failed('a');
    t.configure(2);
    expect(t.retryAfter('a')).to.equal(0);
  });
});
