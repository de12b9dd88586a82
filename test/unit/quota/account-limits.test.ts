// Limits per account as well as per key, in the memory limiter and in the Redis
// limiter (a real Redis): many keys of one account together get the account's rate
// and quotas, a refusal charges neither, and under fail-open the local counters start
// from the last state Redis reported; with leases over Redis, an account's quota stays
// exact and its rate within 5% across two instances. Time is a clock the tests move.

import { expect } from 'chai';
import type { TierConfig } from '../../../src/config/types.js';
import type { Admission, Payer } from '../../../src/quota/admission.js';
import { LeasedLimiter } from '../../../src/quota/lease.js';
import { MemoryLimiter, type Limiter } from '../../../src/quota/limiter.js';
import { RedisLimiter } from '../../../src/quota/redis-limiter.js';
import { RedisConnection } from '../../../src/store/redis-connection.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../../support/redis.js';
import { tierConfig } from '../../support/tiers.js';

const key = (account: string, i = 0): Payer => ({ id: `key_${account}${i}`, account });
const keysOf = (account: string, n: number): Payer[] => Array.from({ length: n }, (_, i) => key(account, i));

async function admitted(limiter: Limiter, payers: readonly Payer[], t: TierConfig, rounds: number) {
  let n = 0;
  const refusals: Admission[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const p of payers) {
      const a = await limiter.admit(p, t, 1, 'l1');
      if (a.allowed) n++;
      else refusals.push(a);
    }
  }
  return { n, refusals };
}

interface Subject {
  readonly limiter: Limiter;
  close(): Promise<void>;
}

const START = Date.UTC(2026, 2, 10, 12, 0, 0);

const subjects: Array<[string, (now: () => number) => Promise<Subject>]> = [
  ['memory', async (now) => ({ limiter: await MemoryLimiter.open(undefined, now), close: async () => undefined })],
  [
    'redis',
    async (now) => {
      const prefix = testPrefix();
      const c = new RedisConnection({ servers: { kind: 'url', url: REDIS_URL }, timeoutMs: 1_000 });
      await c.ready(2_000);
      const limiter = new RedisLimiter(c.client, { prefix, onFailure: 'fail-closed', instances: 1, now });
      return {
        limiter,
        close: async () => {
          await c.close();
          await deleteUnderPrefix(prefix);
        },
      };
    },
  ],
];

for (const [name, open] of subjects) {
  describe(`account limits: ${name} limiter`, () => {
    let clock = START;
    let s: Subject;
    beforeEach(async () => {
      clock = START;
      s = await open(() => clock);
    });
    afterEach(() => s.close());

    it('holds every key of an account together to the account’s daily quota, and each key to its own', async () => {
      const t = tierConfig({ daily: 3 }, { daily: 5 });
      const { n, refusals } = await admitted(s.limiter, keysOf('acme', 4), t, 3);
      expect(n).to.equal(5);
      expect(refusals[0]).to.deep.include({ allowed: false, reason: 'daily' });
      expect(refusals[0]?.headers).to.deep.include({ limit: 5, remaining: 0 });
      // Another account is untouched; the next UTC day starts afresh.
      expect((await admitted(s.limiter, keysOf('globex', 1), t, 3)).n).to.equal(3);
      clock = Date.UTC(2026, 2, 11, 0, 0, 1);
      expect((await admitted(s.limiter, keysOf('acme', 4), t, 3)).n).to.equal(5);
    });

    it('holds the account to its monthly quota across days', async () => {
      const t = tierConfig({}, { monthly: 4 });
      expect((await admitted(s.limiter, keysOf('acme', 2), t, 1)).n).to.equal(2);
      clock = Date.UTC(2026, 2, 20);
      const later = await admitted(s.limiter, keysOf('acme', 3), t, 1);
      expect(later.n).to.equal(2);
      expect(later.refusals[0]).to.deep.include({ reason: 'monthly' });
      clock = Date.UTC(2026, 3, 1);
      expect((await admitted(s.limiter, keysOf('acme', 1), t, 1)).n).to.equal(1);
    });

    it('holds many keys to the account’s rate: their burst together, then the account’s pace', async () => {
      const t = tierConfig({ rate: 10, burst: 5 }, { rate: 10, burst: 5 });
      const keys = keysOf('acme', 10);
      const first = await admitted(s.limiter, keys, t, 1);
      expect(first.n).to.equal(5);
      expect(first.refusals[0]).to.deep.include({ allowed: false, reason: 'rate', retryAfter: 1 });
      // 100 ms later the account has room for exactly one more call (10/s), whichever key makes it.
      clock += 100;
      expect((await admitted(s.limiter, keys, t, 1)).n).to.equal(1);
    });

    it('charges neither when either refuses: a key refused by its own rate leaves the account’s room to the others', async () => {
      const t = tierConfig({ rate: 1, burst: 1 }, { rate: 10, burst: 3 });
      const [a, b, c] = [key('acme', 0), key('acme', 1), key('acme', 2)];
      expect((await s.limiter.admit(a, t, 1, 'l1')).allowed).to.equal(true);
      // Refused by the key's own rate: the account is not charged for it.
      for (let i = 0; i < 5; i++) expect((await s.limiter.admit(a, t, 1, 'l1')).allowed).to.equal(false);
      expect((await s.limiter.admit(b, t, 1, 'l1')).allowed).to.equal(true);
      expect((await s.limiter.admit(c, t, 1, 'l1')).allowed).to.equal(true);
      expect((await s.limiter.admit(key('acme', 3), t, 1, 'l1')).allowed).to.equal(false);
      // Usage: calls and refusals counted on the key that made them.
      const rows = await s.limiter.usage(a.id);
      expect(rows).to.deep.equal([{ day: '2026-03-10', chain: 'l1', calls: 1, errors: 0, limited: 5 }]);
    });

    it('reports the tighter of the key’s and the account’s limits in the headers', async () => {
      const t = tierConfig({ daily: 100 }, { daily: 10 });
      const a = key('acme');
      const r = await s.limiter.admit(a, t, 4, 'l1');
      expect(r).to.deep.include({ allowed: true });
      expect(r.headers).to.deep.include({ limit: 10, remaining: 6 });
    });

    it('paces other events per bucket: a burst, then one per interval', async () => {
      const waits: number[] = [];
      for (let i = 0; i < 4; i++) waits.push(await s.limiter.throttle('keys/acme', 3600, 3));
      expect(waits).to.deep.equal([0, 0, 0, 1]);
      expect(await s.limiter.throttle('keys/globex', 3600, 3)).to.equal(0);
      clock += 1_000;
      expect(await s.limiter.throttle('keys/acme', 3600, 3)).to.equal(0);
      expect(await s.limiter.throttle('keys/acme', 3600, 3)).to.equal(1);
    });
  });
}

describe('account limits: redis limiter falling back (fail-open)', () => {
  let clock = START;
  const prefix = testPrefix();
  let c: RedisConnection;
  after(() => deleteUnderPrefix(prefix));

  async function limiterWith(instances: number): Promise<RedisLimiter> {
    c = new RedisConnection({ servers: { kind: 'url', url: REDIS_URL }, timeoutMs: 1_000 });
    await c.ready(2_000);
    return new RedisLimiter(c.client, { prefix: `${prefix}${instances}:`, onFailure: 'fail-open', instances, now: () => clock });
  }

  it('goes on from the last shared counts, not from zero, when Redis stops answering', async () => {
    const limiter = await limiterWith(1);
    const t = tierConfig({ daily: 10 }, { daily: 12 });
    const [a, b] = [key('acme', 0), key('acme', 1)];
    expect((await admitted(limiter, [a], t, 8)).n).to.equal(8);
    expect((await admitted(limiter, [b], t, 2)).n).to.equal(2);
    await c.close();
    // Key a has 2 left of 10, the account 2 left of 12: two more in all, then refused.
    const after = await admitted(limiter, [a, b], t, 3);
    expect(after.n).to.equal(2);
    expect(after.refusals.every((r) => !r.allowed && r.reason === 'daily')).to.equal(true);
  });

  it('keeps the rate state too: a drained burst stays drained', async () => {
    const limiter = await limiterWith(1);
    const t = tierConfig({ rate: 1, burst: 3 });
    const a = key('acme');
    expect((await admitted(limiter, [a], t, 3)).n).to.equal(3);
    await c.close();
    expect((await limiter.admit(a, t, 1, 'l1')).allowed).to.equal(false);
    clock += 1_000;
    expect((await limiter.admit(a, t, 1, 'l1')).allowed).to.equal(true);
  });

  it('takes this instance’s share of what was left when several share the limits', async () => {
    const limiter = await limiterWith(2);
    const t = tierConfig({ daily: 10 });
    const a = key('acme');
    expect((await admitted(limiter, [a], t, 6)).n).to.equal(6);
    await c.close();
    // 4 left across 2 instances: this one may use 2 of them.
    expect((await admitted(limiter, [a], t, 5)).n).to.equal(2);
  });
});

describe('account limits: leases over the redis limiter, two instances', function () {
  // Hundreds of calls, near the limit most of them asking a real Redis: slow on a loaded machine.
  this.timeout(90_000);
  let clock = START;
  const prefix = testPrefix();
  let run = 0;
  const conns: RedisConnection[] = [];
  const open: LeasedLimiter[] = [];
  beforeEach(() => {
    clock = START;
    run++;
  });
  afterEach(async () => {
    for (const l of open.splice(0)) await l.close();
    for (const c of conns.splice(0)) await c.close();
  });
  after(() => deleteUnderPrefix(prefix));

  async function instance(): Promise<{ leased: LeasedLimiter; shared: RedisLimiter }> {
    const c = new RedisConnection({ servers: { kind: 'url', url: REDIS_URL }, timeoutMs: 1_000 });
    await c.ready(2_000);
    conns.push(c);
    const shared = new RedisLimiter(c.client, { prefix: `${prefix}${run}:`, onFailure: 'fail-closed', instances: 2, now: () => clock });
    const leased = new LeasedLimiter(shared, { leaseMs: 200, leaseTokens: 'auto', now: () => clock });
    open.push(leased);
    return { leased, shared };
  }

  it('holds an account’s keys to its daily quota exactly, whichever instance they come through', async () => {
    const t = tierConfig({ daily: 30 }, { daily: 50 });
    const [x, y] = [await instance(), await instance()];
    const keys = keysOf('acme', 4);
    let n = 0;
    for (let r = 0; r < 40; r++) {
      for (const [i, k] of keys.entries()) {
        clock += 1;
        if ((await ((i + r) % 2 === 0 ? x : y).leased.admit(k, t, 1, 'l1')).allowed) n++;
      }
    }
    expect(n).to.be.within(45, 50);
    // Closing gives back what either still held and writes its usage: every admitted call is counted once.
    await x.leased.close();
    await y.leased.close();
    const calls = async (): Promise<number> => {
      const rows = await Promise.all(keys.map((k) => x.shared.usage(k.id)));
      return rows.flat().reduce((sum, r) => sum + r.calls, 0);
    };
    expect(await calls()).to.equal(n);
    // What was held is there to take again, and not one call more.
    const z = await instance();
    n += (await admitted(z.leased, keys, t, 5)).n;
    expect(n).to.equal(50);
    await z.leased.close();
    expect(await calls()).to.equal(50);
  });

  it('holds an account’s rate within 5% across two instances and many keys', async () => {
    const t = tierConfig({}, { rate: 100, burst: 20 });
    const [x, y] = [await instance(), await instance()];
    const keys = keysOf('acme', 4);
    let n = 0;
    // 300 calls per second for 2 simulated seconds, spread over 4 keys and 2 instances.
    for (let i = 0; i < 600; i++) {
      clock = START + Math.floor((i * 10) / 3);
      const k = keys[i % 4] as Payer;
      if ((await (i % 3 === 0 ? x : y).leased.admit(k, t, 1, 'l1')).allowed) n++;
    }
    const ideal = 100 * 2 + 20;
    expect(n).to.be.within(ideal * 0.95, ideal * 1.05);
  });
});
