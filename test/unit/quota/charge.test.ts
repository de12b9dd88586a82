// Charging node work after the call (Limiter.charge, src/exec/policies/node-budget.ts): what a
// getLogs cut into parts, or fan-out a tier charges, costs past admission is counted in
// usage and in the key's and account's quotas, and owed in their rate buckets, but never
// refused (it is done). The same in the memory limiter, the Redis limiter (a real Redis),
// a worker's limiter that asks the primary over IPC, and a leased limiter, which pays
// from the tokens it holds first. Time is a clock the tests move.

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

const START = Date.UTC(2026, 2, 10, 12, 0, 0);
const A: Payer = { id: 'key_a', account: 'acme' };
const B: Payer = { id: 'key_b', account: 'acme' };

interface Subject {
  readonly limiter: Limiter;
  close(): Promise<void>;
}

function pair(): [Channel, Channel] {
  const a: Channel = new Channel((m) => void setImmediate(() => b.receive(structuredClone(m))));
  const b: Channel = new Channel((m) => void setImmediate(() => a.receive(structuredClone(m))));
  return [a, b];
}

async function redis(now: () => number): Promise<{ limiter: RedisLimiter; close(): Promise<void> }> {
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
}

const subjects: Array<[string, (now: () => number) => Promise<Subject>]> = [
  ['memory', async (now) => ({ limiter: await MemoryLimiter.open(undefined, now), close: async () => undefined })],
  ['redis', redis],
  [
    'worker (IPC to the primary)',
    async (now) => {
      const [primary, worker] = pair();
      const shared = await MemoryLimiter.open(undefined, now);
      serveLimits(primary, shared, undefined);
      return { limiter: new IpcLimiter(worker), close: () => shared.close() };
    },
  ],
];

const calls = async (limiter: Limiter, p: Payer): Promise<number> => (await limiter.usage(p.id)).reduce((n, r) => n + r.calls, 0);

for (const [name, open] of subjects) {
  describe(`charging node work after the call: ${name} limiter`, () => {
    let clock = START;
    let s: Subject;
    beforeEach(async () => {
      clock = START;
      s = await open(() => clock);
    });
    afterEach(() => s.close());

    it('counts a charge in usage and in the key’s and the account’s quotas, and never refuses it', async () => {
      const t = tierConfig({ daily: 10 }, { daily: 12 });
      expect(await s.limiter.admit(A, t, 3, 'l1')).to.deep.include({ allowed: true });
      // Over the quota: the work is done, so it is counted all the same.
      s.limiter.charge(A, t, 20, 'l1');
      expect(await calls(s.limiter, A)).to.equal(23);
      expect(await s.limiter.admit(A, t, 1, 'l1')).to.deep.include({ allowed: false, reason: 'daily' });
      // The account's other key pays for it too.
      expect(await s.limiter.admit(B, t, 1, 'l1')).to.deep.include({ allowed: false, reason: 'daily' });
    });

    it('owes a charge in the rate bucket: the next call waits for it; a huge one for at most a minute', async () => {
      const t = tierConfig({ rate: 1, burst: 2 });
      expect(await s.limiter.admit(A, t, 1, 'l1')).to.deep.include({ allowed: true });
      s.limiter.charge(A, t, 10, 'l1');
      // Bucket at now + 11 s; a call of 1 fits once it is within the 2 s burst of now: in 10 s.
      expect(await s.limiter.admit(A, t, 1, 'l1')).to.deep.include({ allowed: false, reason: 'rate', retryAfter: 10 });
      clock += 10_000;
      expect(await s.limiter.admit(A, t, 1, 'l1')).to.deep.include({ allowed: true });
      clock += 100_000;
      s.limiter.charge(A, t, 1_000_000, 'l1');
      // Not forgiven as a clock step, not owed for days either.
      const refused = await s.limiter.admit(A, t, 1, 'l1');
      expect(refused).to.deep.include({ allowed: false, reason: 'rate' });
      expect((refused as { retryAfter: number }).retryAfter).to.be.within(60, 61);
      clock += 61_000;
      expect(await s.limiter.admit(A, t, 1, 'l1')).to.deep.include({ allowed: true });
    });
  });
}

describe('charging node work after the call: leased limiter over Redis', () => {
  const clock = START;
  it('pays from the tokens it holds first, the rest at once from the shared limits', async () => {
    const r = await redis(() => clock);
    const leased = new LeasedLimiter(r.limiter, { leaseMs: 200, leaseTokens: 'auto', now: () => clock });
    try {
      const t = tierConfig({ daily: 1000 });
      // A lease takes 1/8 of what is left of the quota: 125 tokens, one spent.
      expect(await leased.admit(A, t, 1, 'l1')).to.deep.include({ allowed: true });
      leased.charge(A, t, 100, 'l1');
      leased.charge(A, t, 50, 'l1');
      // 24 of the 50 came from the lease; 26 went to Redis now. The lease's usage is written when it ends.
      expect(await calls(r.limiter, A)).to.equal(26);
      await leased.close();
      expect(await calls(r.limiter, A)).to.equal(151);
      // What is left of the day: 1000 - 151.
      expect(await r.limiter.admit(A, t, 849, 'l1')).to.deep.include({ allowed: true });
      expect(await r.limiter.admit(A, t, 1, 'l1')).to.deep.include({ allowed: false, reason: 'daily' });
    } finally {
      await r.close();
    }
  });
});
