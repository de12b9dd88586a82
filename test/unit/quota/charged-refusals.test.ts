// A request that became no call is charged against the rate only: in the memory
// limiter, in the Redis limiter (a real Redis; and its fail-open fallback), through
// leases over Redis and over a cluster worker's link to the primary. The key's and the
// account's rate buckets are the ones calls spend, the day's quota is untouched, and
// usage counts the request once as invalid (or limited). Time is a clock the tests move.

import { expect } from 'chai';
import { Channel } from '../../../src/cluster/channel.js';
import { IpcLimiter, serveLimits } from '../../../src/cluster/shared-limits.js';
import type { Payer } from '../../../src/quota/admission.js';
import { LeasedLimiter } from '../../../src/quota/lease.js';
import { MemoryLimiter, type Limiter } from '../../../src/quota/limiter.js';
import { RedisLimiter } from '../../../src/quota/redis-limiter.js';
import { RedisConnection } from '../../../src/store/redis-connection.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../../support/redis.js';
import { tierConfig } from '../../support/tiers.js';
import { until } from '../../support/until.js';

const START = Date.UTC(2026, 2, 10, 12, 0, 0);
const DAY = '2026-03-10';

interface Subject {
  readonly limiter: Limiter;
  close(): Promise<void>;
}

async function redisLimiter(now: () => number, onFailure: 'fail-open' | 'fail-closed' = 'fail-closed') {
  const prefix = testPrefix();
  const c = new RedisConnection({ servers: { kind: 'url', url: REDIS_URL }, timeoutMs: 1_000 });
  await c.ready(2_000);
  const limiter = new RedisLimiter(c.client, { prefix, onFailure, instances: 1, now });
  return { limiter, connection: c, prefix };
}

/** Two channels joined back to back, as a worker's and the primary's ends of one link. */
function link(): [Channel, Channel] {
  const a: Channel = new Channel((m) => void setImmediate(() => b.receive(structuredClone(m))));
  const b: Channel = new Channel((m) => void setImmediate(() => a.receive(structuredClone(m))));
  return [a, b];
}

const subjects: Array<[string, (now: () => number) => Promise<Subject>]> = [
  ['memory', async (now) => ({ limiter: await MemoryLimiter.open(undefined, now), close: async () => undefined })],
  [
    'redis',
    async (now) => {
      const r = await redisLimiter(now);
      return { limiter: r.limiter, close: () => r.connection.close().then(() => deleteUnderPrefix(r.prefix)) };
    },
  ],
  [
    'leases over redis',
    async (now) => {
      const r = await redisLimiter(now);
      const leased = new LeasedLimiter(r.limiter, { leaseMs: 200, leaseTokens: 'auto', now });
      return {
        limiter: leased,
        close: async () => {
          await leased.close();
          await r.connection.close();
          await deleteUnderPrefix(r.prefix);
        },
      };
    },
  ],
  [
    'a worker asking the primary',
    async (now) => {
      const primary = await MemoryLimiter.open(undefined, now);
      const [worker, atPrimary] = link();
      serveLimits(atPrimary, primary, undefined);
      return { limiter: new IpcLimiter(worker), close: () => primary.close() };
    },
  ],
];

for (const [name, open] of subjects) {
  describe(`charged refusals: ${name} limiter`, () => {
    let clock = START;
    let subject: Subject;
    beforeEach(async () => {
      subject = await open(() => clock);
    });
    afterEach(() => subject.close());

    it('spends the key’s rate, counts the request as invalid, and refuses past the burst as limited', async () => {
      const { limiter } = subject;
      const t = tierConfig({ rate: 1, burst: 3 });
      const k: Payer = { id: `key_${name.length}_a`, account: 'acme' };
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await limiter.chargeRefused(k, t, 1, 'l1', 'invalid'));
      expect(answers.map((a) => a.allowed)).to.deep.equal([true, true, true, false, false]);
      const refused = answers[3];
      expect(refused).to.deep.include({ allowed: false, reason: 'rate' });
      // A call meets the same bucket: drained.
      expect((await limiter.admit(k, t, 1, 'l1')).allowed).to.equal(false);
      clock += 1_000;
      expect((await limiter.chargeRefused(k, t, 1, 'l1', 'limited')).allowed).to.equal(true);
      expect(await settled(limiter, k.id)).to.deep.equal([{ day: DAY, chain: 'l1', calls: 0, errors: 0, limited: 4, invalid: 3 }]);
    });

    it('spends the account’s rate, shared with its other keys, and never the day’s quota', async () => {
      const { limiter } = subject;
      const t = tierConfig({ rate: 100, burst: 100, daily: 2 }, { rate: 1, burst: 2, daily: 2 });
      const a: Payer = { id: `key_${name.length}_b1`, account: 'shared' };
      const b: Payer = { id: `key_${name.length}_b2`, account: 'shared' };
      expect((await limiter.chargeRefused(a, t, 1, 'l1', 'invalid')).allowed).to.equal(true);
      expect((await limiter.chargeRefused(b, t, 1, 'l1', 'invalid')).allowed).to.equal(true);
      const third = await limiter.chargeRefused(b, t, 1, 'l1', 'invalid');
      expect(third).to.deep.include({ allowed: false, reason: 'rate' });
      // The day's quota of 2 is whole: once the account's rate has room, both calls go through.
      clock += 2_000;
      expect((await limiter.admit(a, t, 1, 'l1')).allowed).to.equal(true);
      expect((await limiter.admit(b, t, 1, 'l1')).allowed).to.equal(true);
    });
  });
}

/** Usage rows once anything a lease held has been written (a leased limiter writes at its lease's end). */
async function settled(limiter: Limiter, id: string): Promise<unknown> {
  let rows: unknown[] = [];
  await until(async () => (rows = await limiter.usage(id)).length > 0, { what: 'the usage is written' });
  return rows;
}

describe('charged refusals: redis limiter falling back (fail-open)', () => {
  const clock = START;
  it('charges this instance’s rate from the state Redis last reported', async () => {
    const r = await redisLimiter(() => clock, 'fail-open');
    try {
      const t = tierConfig({ rate: 1, burst: 3 });
      const k: Payer = { id: 'key_fallback', account: 'acme' };
      for (let i = 0; i < 2; i++) expect((await r.limiter.chargeRefused(k, t, 1, 'l1', 'invalid')).allowed).to.equal(true);
      await r.connection.close();
      // One token of three left as Redis last had it: one more, then refused.
      expect((await r.limiter.chargeRefused(k, t, 1, 'l1', 'invalid')).allowed).to.equal(true);
      expect((await r.limiter.chargeRefused(k, t, 1, 'l1', 'invalid')).allowed).to.equal(false);
    } finally {
      await deleteUnderPrefix(r.prefix);
    }
  });
});
