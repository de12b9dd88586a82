// Leases over a shared limiter, with the clock injected: tokens spent here without
// asking, the shared side asked once per lease, unused tokens and usage handed back
// at the lease's end and at close, refusals repeated here, and two instances held to
// one limit.

import { expect } from 'chai';
import type { TierConfig } from '../../../src/config/types.js';
import type { Admission, Payer } from '../../../src/quota/admission.js';
import { LeasedLimiter, leaseSize, type LeaseAnswer, type LeaseReturn, type LeaseSource } from '../../../src/quota/lease.js';
import type { Limiter } from '../../../src/quota/limiter.js';
import type { UsageRow } from '../../../src/quota/usage.js';
import { tierConfig } from '../../support/tiers.js';
import { until } from '../../support/until.js';

// Accounts unlimited unless a test says otherwise: these tests are about one key.
const tier = (over: Partial<TierConfig>): TierConfig => tierConfig({ name: 't', rate: 100, burst: 50, ...over });

const K: Payer = { id: 'k', account: 'acme' };

/** The shared side for one key: a GCRA bucket and a day counter, as the Redis script keeps them. */
class Shared implements Limiter, LeaseSource {
  tat = 0;
  day = 0;
  calls = 0;
  limited = 0;
  readonly asked: { cost: number; want: number; unused: number }[] = [];
  away = false;

  constructor(private readonly now: () => number) {}

  lease(
    _p: Payer,
    t: TierConfig,
    _day: string,
    _chain: string,
    cost: number,
    want: number,
    back: LeaseReturn | undefined,
  ): Promise<LeaseAnswer> {
    if (this.away) return Promise.resolve({ kind: 'fallback', admission: { allowed: true, headers: undefined } });
    const now = this.now();
    const interval = 1000 / t.rate;
    this.asked.push({ cost, want, unused: back?.unused ?? 0 });
    if (back !== undefined) {
      if (this.tat > now) this.tat -= back.unused * interval;
      this.day -= back.unused;
      for (const u of back.usage.values()) {
        this.calls += u.calls;
        this.limited += u.limited;
      }
    }
    const answer = (tokens: number, remaining: number): LeaseAnswer => ({
      kind: 'granted',
      tokens,
      rate: { remaining, resetMs: Math.max(0, this.tat - now), limit: t.burst },
      interval,
      keyDay: this.day,
      accountDay: 0,
    });
    if (cost === 0) return Promise.resolve(answer(0, 0));
    const base = Math.max(this.tat, now);
    const room = t.rate === Infinity ? Infinity : Math.floor((now + interval * t.burst - base) / interval);
    const refuse = (a: Admission, retryMs?: number): Promise<LeaseAnswer> => {
      this.limited += cost;
      return Promise.resolve({ kind: 'refused', admission: a, retryMs });
    };
    if (room < cost) {
      const retryMs = base + interval * (cost - t.burst) - now;
      return refuse({ allowed: false, reason: 'rate', retryAfter: 1, headers: { limit: t.burst, remaining: room, reset: 1 } }, retryMs);
    }
    let grant = Math.min(want, Math.max(cost, Math.floor(room / 2)));
    if (t.daily !== Infinity) {
      const left = t.daily - this.day;
      if (left < cost)
        return refuse({ allowed: false, reason: 'daily', retryAfter: 3600, headers: { limit: t.daily, remaining: 0, reset: 3600 } });
      grant = Math.min(grant, Math.max(cost, Math.floor(left / 8)));
    }
    if (t.rate !== Infinity) this.tat = base + grant * interval;
    this.day += grant;
    return Promise.resolve(answer(grant, room - grant));
  }

  /** What a closing limiter hands calls to: one exact decision. */
  admit(): Admission {
    return { allowed: true, headers: undefined };
  }
  charge(): void {}
  /** Not leased: the leased limiter passes a charge through untouched. */
  chargeRefused(): Admission {
    return { allowed: true, headers: undefined };
  }
  countErrors(): void {}
  usage(): Promise<UsageRow[]> {
    return Promise.resolve([]);
  }
  throttle(): Promise<number> {
    return Promise.resolve(0);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

async function allowed(a: Admission | Promise<Admission>): Promise<boolean> {
  return (await a).allowed;
}

describe('leases', () => {
  let now: number;
  const clock = () => now;
  const open: LeasedLimiter[] = [];
  const leased = (shared: Shared, leaseTokens: number | 'auto' = 'auto') => {
    const l = new LeasedLimiter(shared, { leaseMs: 200, leaseTokens, now: clock });
    open.push(l);
    return l;
  };
  beforeEach(() => {
    now = Date.UTC(2026, 5, 1, 12);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
  });

  it('sizes a lease from the tier rate over leaseMs, or by leaseTokens', () => {
    expect(leaseSize(tier({ rate: 100 }), 200, 'auto')).to.equal(20);
    expect(leaseSize(tier({ rate: 1 }), 200, 'auto')).to.equal(1);
    expect(leaseSize(tier({ rate: 1000, account: { rate: 50, burst: 10, daily: Infinity, monthly: Infinity } }), 200, 'auto')).to.equal(10);
    expect(leaseSize(tier({ rate: 100 }), 200, 7)).to.equal(7);
  });

  it('asks the shared limits once per lease and spends the rest here, at once', async () => {
    const shared = new Shared(clock);
    const t = tier({});
    const l = leased(shared);
    expect(await allowed(l.admit(K, t, 1, 'c'))).to.equal(true);
    expect(shared.asked).to.deep.equal([{ cost: 1, want: 20, unused: 0 }]);
    for (let i = 0; i < 19; i++) {
      const a = l.admit(K, t, 1, 'c');
      expect(a).to.not.be.instanceOf(Promise);
      expect((a as Admission).allowed).to.equal(true);
    }
    expect(shared.asked).to.have.length(1);
    // The 21st call needs a new lease.
    expect(l.admit(K, t, 1, 'c')).to.be.instanceOf(Promise);
  });

  it('gives back what a lease did not spend when it ends, with its usage', async () => {
    const shared = new Shared(clock);
    const t = tier({});
    const l = leased(shared);
    for (let i = 0; i < 5; i++) await l.admit(K, t, 1, 'c');
    expect(shared.day).to.equal(20);
    now += 200;
    await l.admit(K, t, 1, 'c');
    expect(shared.asked[1]).to.deep.equal({ cost: 1, want: 20, unused: 15 });
    expect(shared.calls).to.equal(5);
    // Closing gives back the second lease's 19 unused tokens and counts its call.
    await l.close();
    expect(shared.day).to.equal(6);
    expect(shared.calls).to.equal(6);
    // The bucket owes only the 6 calls made: 5 long refilled, 1 just now.
    expect(shared.tat).to.equal(now + 10);
  });

  it('gives back an idle lease without waiting for another call', async () => {
    const shared = new Shared(clock);
    const l = leased(shared);
    await l.admit(K, tier({}), 1, 'c');
    now += 250;
    // The sweep runs every leaseMs in real time and ends leases past their time by the injected clock.
    await until(() => shared.calls > 0, { what: 'the sweep gives the lease back' });
    expect(shared.calls).to.equal(1);
    expect(shared.day).to.equal(1);
  });

  it('asks once for many calls arriving together with no lease', async () => {
    const shared = new Shared(clock);
    const l = leased(shared);
    const t = tier({});
    const results = await Promise.all(Array.from({ length: 30 }, () => l.admit(K, t, 1, 'c')));
    expect(results.filter((a) => a.allowed)).to.have.length(30);
    expect(shared.asked.map((a) => a.want)).to.deep.equal([20, 20]);
  });

  it('repeats a rate refusal here until a token is due, counting it as limited', async () => {
    const shared = new Shared(clock);
    const t = tier({ rate: 10, burst: 2 });
    const l = leased(shared);
    expect(await allowed(l.admit(K, t, 1, 'c'))).to.equal(true);
    expect(await allowed(l.admit(K, t, 1, 'c'))).to.equal(true);
    expect(await allowed(l.admit(K, t, 1, 'c'))).to.equal(false);
    const asked = shared.asked.length;
    const again = l.admit(K, t, 1, 'c');
    expect(again).to.not.be.instanceOf(Promise);
    expect((again as Admission).allowed).to.equal(false);
    expect(shared.asked).to.have.length(asked);
    // 100 ms later (10/s) a token is due: the shared limits are asked again.
    now += 100;
    expect(await allowed(l.admit(K, t, 1, 'c'))).to.equal(true);
    expect(shared.asked).to.have.length(asked + 1);
    await l.close();
    expect(shared.limited).to.equal(2);
    expect(shared.calls).to.equal(3);
  });

  it('keeps a daily quota exact: leases shrink near the end and nothing is admitted twice', async () => {
    const shared = new Shared(clock);
    const t = tier({ rate: Infinity, burst: Infinity, daily: 100 });
    const a = leased(shared);
    const b = leased(shared);
    let admitted = 0;
    for (let i = 0; i < 300; i++) {
      now += 10;
      if (await allowed((i % 2 === 0 ? a : b).admit(K, t, 1, 'c'))) admitted++;
    }
    await a.close();
    await b.close();
    expect(admitted).to.equal(shared.calls);
    expect(shared.day).to.equal(shared.calls);
    // Every quota token is spent; the last few may be late (held by the other instance), never lost.
    expect(admitted).to.be.within(95, 100);
  });

  it('holds one rate across two instances within 5%', async () => {
    const shared = new Shared(clock);
    const t = tier({ rate: 100, burst: 20 });
    const a = leased(shared);
    const b = leased(shared);
    let admitted = 0;
    // 300 calls/s for 10 s against 100/s with a burst of 20, alternating instances.
    for (let i = 0; i < 3000; i++) {
      now += i % 3 === 0 ? 4 : 3;
      if (await allowed((i % 2 === 0 ? a : b).admit(K, t, 1, 'c'))) admitted++;
    }
    const ideal = 100 * 10 + 20;
    expect(admitted).to.be.within(ideal * 0.95, ideal * 1.05);
  });

  it('shows headers of the shared bucket plus what is held here', async () => {
    const shared = new Shared(clock);
    const t = tier({ rate: 100, burst: 50 });
    const l = leased(shared);
    const first = await l.admit(K, t, 1, 'c');
    // 20 taken of 50: 30 left there, 19 still held here.
    expect(first.headers?.limit).to.equal(50);
    expect(first.headers?.remaining).to.equal(49);
    const next = await l.admit(K, t, 1, 'c');
    expect(next.headers?.remaining).to.equal(48);
  });

  it('keeps a return the shared limits could not take and hands it back later', async () => {
    const shared = new Shared(clock);
    const t = tier({});
    const l = leased(shared);
    await l.admit(K, t, 1, 'c');
    now += 200;
    shared.away = true;
    expect(await allowed(l.admit(K, t, 1, 'c'))).to.equal(true);
    shared.away = false;
    await l.close();
    expect(shared.calls).to.equal(1);
    expect(shared.day).to.equal(1);
  });
});
