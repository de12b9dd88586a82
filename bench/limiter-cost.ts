// npx tsx bench/limiter-cost.ts — the CPU one limit decision costs this process, per
// limiter: the memory limiter (the memory hot state), the Redis limiter with leases (the
// Redis hot state's default) and in its exact mode (a script call per decision). Real Redis at
// 127.0.0.1:6379 (db 7, a prefix of its own, deleted after). Calls go 64 at a time, as
// a loaded gateway has them; rounds alternate the limiters. LIMITER_CALLS (default 50 000)
// and LIMITER_ROUNDS (default 5) set the work.

import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import type { TierConfig } from '../src/config/types.js';
import { LeasedLimiter } from '../src/quota/lease.js';
import { MemoryLimiter, type Limiter } from '../src/quota/limiter.js';
import { RedisLimiter } from '../src/quota/redis-limiter.js';

const CALLS = Number(process.env.LIMITER_CALLS ?? 50_000);
const ROUNDS = Number(process.env.LIMITER_ROUNDS ?? 5);
const CONCURRENCY = 64;
const tier: TierConfig = {
  name: 'bench',
  rate: 1_000_000,
  burst: 1_000_000,
  daily: Infinity,
  monthly: Infinity,
  maxBatch: 100,
  archive: false,
  wsConnections: 10,
  wsSubscriptions: 10,
  cacheHitsFree: false,
  nodeCalls: 16,
  chargeFanout: false,
  account: { rate: Infinity, burst: Infinity, daily: Infinity, monthly: Infinity },
};
const payer = { id: 'bench-key', account: 'bench' };

async function run(limiter: Limiter): Promise<number> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < CALLS) {
      next++;
      const a = await limiter.admit(payer, tier, 1, 'l1');
      if (!a.allowed) throw new Error('refused');
    }
  };
  const t0 = process.cpuUsage();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / CALLS;
}

const prefix = `nrlc:${randomBytes(4).toString('hex')}:`;
const redis = new Redis('redis://127.0.0.1:6379/7');
const base = { prefix, onFailure: 'fail-open' as const, instances: 1 };
const limiters: Array<[string, Limiter]> = [
  ['memory (memory hot state)', await MemoryLimiter.open(undefined)],
  ['Redis, leases (leaseMs 200, auto)', new LeasedLimiter(new RedisLimiter(redis, base), { leaseMs: 200, leaseTokens: 'auto' })],
  ['Redis, exact per call', new RedisLimiter(redis, base)],
];
const results = new Map<string, number[]>();
for (const [, l] of limiters) await run(l); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? limiters : [...limiters].reverse();
  for (const [name, l] of order) results.set(name, [...(results.get(name) ?? []), await run(l)]);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;
console.log(`${CALLS} decisions × ${ROUNDS} rounds, ${CONCURRENCY} at a time; CPU µs per decision in this process (median, min–max):`);
for (const [name, xs] of results) {
  console.log(`  ${name.padEnd(36)} ${median(xs).toFixed(2).padStart(8)}  (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`);
}
for (const [, l] of limiters) await l.close();
const keys = await redis.keys(`${prefix}*`);
if (keys.length > 0) await redis.del(...keys);
redis.disconnect();
