// Limits and usage shared by every instance through Redis. One server-side script
// per request decides rate (GCRA), daily and monthly quotas and counts usage
// atomically, so N instances hold one global limit in one round trip. When Redis
// fails, the configured policy applies: fail-open admits with this instance's own
// memory limiter (each limit divided by the instance count), fail-closed refuses
// with 503. Either way nothing queues: every call is bounded by the client timeout.

import type { Redis } from 'ioredis';
import type { TierConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import type { Admission } from './admission.js';
import { Admitter } from './admission.js';
import type { Limiter } from './limiter.js';
import { nextUtcMidnight, nextUtcMonth, UsageBook, UtcDay, type UsageRow } from './usage.js';
import { script, type ScriptCall } from '../store/redis-scripts.js';

/**
 * KEYS: tat, day counter, month counter, usage hash (day), usage day set.
 * ARGV: now, rate (-1 unlimited), burst, cost, daily (-1), monthly (-1), chain, day, dayTtlMs, monthTtlMs.
 * Returns {allowed (0|1), reason, remaining, retryAfterMs, resetMs, used}.
 */
const ADMIT = `
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local daily = tonumber(ARGV[5])
local monthly = tonumber(ARGV[6])
local chain = ARGV[7]
local usageTtl = 400 * 86400000
local function refuse(reason, remaining, retry, reset)
  redis.call('HINCRBY', KEYS[4], chain .. ':limited', cost)
  redis.call('PEXPIRE', KEYS[4], usageTtl)
  redis.call('SADD', KEYS[5], ARGV[8])
  return {0, reason, remaining, retry, reset, 0}
end
local newTat = nil
local remaining = -1
local resetMs = 0
if rate > 0 then
  local interval = 1000 / rate
  local tolerance = interval * burst
  local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
  local base = math.max(tat, now)
  local nxt = base + interval * cost
  if now < nxt - tolerance then
    return refuse('rate', math.max(0, math.floor((tolerance - (base - now)) / interval)), math.ceil(nxt - tolerance - now), math.ceil(base - now))
  end
  newTat = nxt
  remaining = math.max(0, math.floor((tolerance - (nxt - now)) / interval))
  resetMs = math.ceil(nxt - now)
end
local d = tonumber(redis.call('GET', KEYS[2]) or '0')
if daily >= 0 and d + cost > daily then return refuse('daily', 0, 0, 0) end
local m = tonumber(redis.call('GET', KEYS[3]) or '0')
if monthly >= 0 and m + cost > monthly then return refuse('monthly', 0, 0, 0) end
if newTat then redis.call('SET', KEYS[1], string.format('%.3f', newTat), 'PX', resetMs + 1000) end
redis.call('INCRBY', KEYS[2], cost)
redis.call('PEXPIRE', KEYS[2], ARGV[9])
redis.call('INCRBY', KEYS[3], cost)
redis.call('PEXPIRE', KEYS[3], ARGV[10])
redis.call('HINCRBY', KEYS[4], chain .. ':calls', cost)
redis.call('PEXPIRE', KEYS[4], usageTtl)
redis.call('SADD', KEYS[5], ARGV[8])
return {1, '', remaining, 0, resetMs, d + cost}
`;

export interface RedisLimiterOptions {
  readonly prefix: string;
  readonly onFailure: 'fail-open' | 'fail-closed';
  readonly instances: number;
  readonly now?: () => number;
  /** Told when a Redis call failed and the policy applied (metrics, logs). */
  readonly onFallback?: (err: unknown) => void;
}

const limit = (n: number): string => (n === Infinity ? '-1' : String(n));

export class RedisLimiter implements Limiter {
  private readonly day = new UtcDay();
  private readonly local: Admitter;
  private readonly scaled = new Map<TierConfig, TierConfig>();
  private readonly now: () => number;
  private readonly admitScript: ScriptCall;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisLimiterOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.admitScript = script(redis, 'noderouterAdmit', 5, ADMIT);
    this.local = new Admitter(new UsageBook(), this.now);
  }

  private k(...parts: string[]): string {
    return this.options.prefix + parts.join(':');
  }

  /** The tier as one instance of N enforces it alone while Redis is away. */
  private localTier(tier: TierConfig): TierConfig {
    let t = this.scaled.get(tier);
    if (t === undefined) {
      const n = this.options.instances;
      t = { ...tier, rate: tier.rate / n, burst: Math.max(1, tier.burst / n), daily: tier.daily / n, monthly: tier.monthly / n };
      this.scaled.set(tier, t);
    }
    return t;
  }

  async admit(keyId: string, tier: TierConfig, cost: number, chain: string): Promise<Admission> {
    const now = this.now();
    const day = this.day.of(now);
    const month = day.slice(0, 7);
    let r: [number, string, number, number, number, number];
    try {
      r = (await this.admitScript(
        this.k('rl', keyId),
        this.k('qd', keyId, day),
        this.k('qm', keyId, month),
        this.k('u', keyId, day),
        this.k('ud', keyId),
        now,
        tier.rate === Infinity ? -1 : tier.rate,
        tier.burst === Infinity ? 1e9 : tier.burst,
        cost,
        limit(tier.daily),
        limit(tier.monthly),
        chain,
        day,
        nextUtcMidnight(now) - now + 3_600_000,
        nextUtcMonth(now) - now + 3_600_000,
      )) as [number, string, number, number, number, number];
    } catch (err) {
      this.options.onFallback?.(err);
      if (this.options.onFailure === 'fail-closed') {
        throw new GatewayError('UNAVAILABLE', { message: 'Limits store unavailable', cause: err, headers: { 'retry-after': '1' } });
      }
      return this.local.admit(keyId, this.localTier(tier), cost, chain);
    }
    const [allowed, reason, remaining, retryMs, resetMs, used] = r;
    if (allowed === 1) {
      if (remaining >= 0) return { allowed: true, headers: { limit: tier.burst, remaining, reset: Math.ceil(resetMs / 1000) } };
      if (tier.daily !== Infinity) {
        return {
          allowed: true,
          headers: { limit: tier.daily, remaining: Math.max(0, tier.daily - used), reset: Math.ceil((nextUtcMidnight(now) - now) / 1000) },
        };
      }
      return { allowed: true, headers: undefined };
    }
    if (reason === 'rate') {
      return {
        allowed: false,
        reason: 'rate',
        retryAfter: Math.max(1, Math.ceil(retryMs / 1000)),
        headers: { limit: tier.burst, remaining, reset: Math.ceil(resetMs / 1000) },
      };
    }
    const periodEnd = reason === 'daily' ? nextUtcMidnight(now) : nextUtcMonth(now);
    const reset = Math.ceil((periodEnd - now) / 1000);
    return {
      allowed: false,
      reason: reason === 'daily' ? 'daily' : 'monthly',
      retryAfter: reset,
      headers: { limit: reason === 'daily' ? tier.daily : tier.monthly, remaining: 0, reset },
    };
  }

  countErrors(keyId: string, chain: string, errors: number): void {
    const day = this.day.of(this.now());
    // Best effort: an error count lost while Redis is away is not worth a queue.
    this.redis.hincrby(this.k('u', keyId, day), `${chain}:errors`, errors).catch(() => undefined);
  }

  async usage(keyId: string, since = ''): Promise<UsageRow[]> {
    const days = (await this.redis.smembers(this.k('ud', keyId))).filter((d) => d >= since).sort();
    const hashes = await Promise.all(days.map((d) => this.redis.hgetall(this.k('u', keyId, d))));
    const rows: UsageRow[] = [];
    days.forEach((day, i) => {
      const byChain = new Map<string, UsageRow>();
      for (const [field, value] of Object.entries(hashes[i] ?? {})) {
        const cut = field.lastIndexOf(':');
        const chain = field.slice(0, cut);
        const what = field.slice(cut + 1) as 'calls' | 'errors' | 'limited';
        let row = byChain.get(chain);
        if (row === undefined) {
          row = { day, chain, calls: 0, errors: 0, limited: 0 };
          byChain.set(chain, row);
        }
        row[what] = Number(value);
      }
      rows.push(...[...byChain.values()].sort((a, b) => a.chain.localeCompare(b.chain)));
    });
    return rows;
  }

  async close(): Promise<void> {
    // The connection belongs to the store bundle that opened it.
  }
}
