// Admitting a call of some cost for a key: the per-second rate (GCRA) first, then
// the daily and monthly quotas (UTC periods). Admitted calls are counted in usage
// once, here, however many nodes later try them; refusals are counted as limited.

import type { TierConfig } from '../config/types.js';
import { gcra } from './gcra.js';
import { nextUtcMidnight, nextUtcMonth, type UsageBook } from './usage.js';

export type RefusalReason = 'rate' | 'daily' | 'monthly';

export interface RateHeaders {
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the limit is whole again. */
  readonly reset: number;
}

export type Admission =
  | { readonly allowed: true; readonly headers: RateHeaders | undefined }
  | { readonly allowed: false; readonly reason: RefusalReason; readonly retryAfter: number; readonly headers: RateHeaders };

const SWEEP_MS = 60_000;

export class Admitter {
  private readonly tats = new Map<string, number>();
  private lastSweep = 0;

  constructor(
    private readonly usage: UsageBook,
    private readonly now: () => number = Date.now,
  ) {}

  admit(keyId: string, tier: TierConfig, cost: number, chain: string): Admission {
    const now = this.now();
    this.sweep(now);
    let headers: RateHeaders | undefined;
    if (tier.rate !== Infinity) {
      const { decision, tat } = gcra(this.tats.get(keyId) ?? 0, now, tier.rate, tier.burst, cost);
      headers = { limit: tier.burst, remaining: decision.remaining, reset: Math.ceil(decision.resetMs / 1000) };
      if (!decision.allowed) {
        this.usage.add(keyId, chain, now, 0, 0, cost);
        return { allowed: false, reason: 'rate', retryAfter: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)), headers };
      }
      this.tats.set(keyId, tat);
    }
    const quota = this.periodQuota(keyId, tier, cost, now);
    if (quota !== undefined) {
      this.usage.add(keyId, chain, now, 0, 0, cost);
      return quota;
    }
    if (headers === undefined && tier.daily !== Infinity) {
      const used = this.usage.dayCalls(keyId, now) + cost;
      headers = { limit: tier.daily, remaining: Math.max(0, tier.daily - used), reset: Math.ceil((nextUtcMidnight(now) - now) / 1000) };
    }
    this.usage.add(keyId, chain, now, cost, 0, 0);
    return { allowed: true, headers };
  }

  private periodQuota(keyId: string, tier: TierConfig, cost: number, now: number): Admission | undefined {
    if (tier.daily !== Infinity && this.usage.dayCalls(keyId, now) + cost > tier.daily) {
      const reset = Math.ceil((nextUtcMidnight(now) - now) / 1000);
      return { allowed: false, reason: 'daily', retryAfter: reset, headers: { limit: tier.daily, remaining: 0, reset } };
    }
    if (tier.monthly !== Infinity && this.usage.monthCalls(keyId, now) + cost > tier.monthly) {
      const reset = Math.ceil((nextUtcMonth(now) - now) / 1000);
      return { allowed: false, reason: 'monthly', retryAfter: reset, headers: { limit: tier.monthly, remaining: 0, reset } };
    }
    return undefined;
  }

  /** Drop buckets that are full again: their state equals a new key's. */
  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_MS) return;
    this.lastSweep = now;
    for (const [k, tat] of this.tats) if (tat <= now) this.tats.delete(k);
  }
}
