// Admitting a call of some cost for a key and the account it belongs to: the
// per-second rate (GCRA), then the daily and monthly quotas (UTC periods), each held
// for the key and for all of the account's keys on that tier together, so making,
// using and revoking keys in a loop buys nothing. A call is charged to both or to
// neither. Admitted calls are counted in usage once, here; refusals as limited.

import type { AccountLimits, TierConfig } from '../config/types.js';
import { CLOCK_STEP_MS, gcra } from './gcra.js';
import { nextUtcMidnight, nextUtcMonth } from './usage.js';

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

/** Who pays for a call: the key (its id) and its account (a key record fits as it is). */
export interface Payer {
  readonly id: string;
  readonly account: string;
}

/** Calls counted per id for the current UTC day and month (the usage book, or a fallback's counts). */
export interface PeriodCounts {
  dayCalls(id: string, now: number): number;
  monthCalls(id: string, now: number): number;
  add(id: string, chain: string, now: number, calls: number, errors: number, limited: number, invalid?: number): void;
}

/**
 * How a request that became no call is counted when its charge is admitted: `invalid`
 * (malformed, over a size limit, every call refused) or `limited` (a batch over the
 * tier's cap, a refusal by a tier limit). Refused by the rate, either counts as limited.
 */
export type RefusedAs = 'invalid' | 'limited';

/** Whether the tier limits accounts at all (`unlimited` everywhere: no account bucket to keep). */
export function limitsAccounts(a: AccountLimits): boolean {
  return a.rate !== Infinity || a.daily !== Infinity || a.monthly !== Infinity;
}

/** The id under which an account's calls on a tier are counted (no key id contains "/"). */
export function accountBucket(account: string, tier: TierConfig): string {
  return `account/${tier.name}/${account}`;
}

/** A rate decision's numbers, for headers: what is left, when it is whole, whose limit it was. */
export interface RateState {
  readonly remaining: number;
  readonly resetMs: number;
  readonly limit: number;
}

/** Headers of an admitted call: the tighter of the key's and the account's rate, else of their daily quotas. */
export function admittedHeaders(
  tier: TierConfig,
  now: number,
  rate: RateState | undefined,
  keyDay: number,
  accountDay: number,
): RateHeaders | undefined {
  if (rate !== undefined) return { limit: rate.limit, remaining: rate.remaining, reset: Math.ceil(rate.resetMs / 1000) };
  const keyLeft = tier.daily - keyDay;
  const accountLeft = tier.account.daily - accountDay;
  if (keyLeft === Infinity && accountLeft === Infinity) return undefined;
  const [limit, left] = keyLeft <= accountLeft ? [tier.daily, keyLeft] : [tier.account.daily, accountLeft];
  return { limit, remaining: Math.max(0, left), reset: Math.ceil((nextUtcMidnight(now) - now) / 1000) };
}

/** A refusal for a period quota: retry when the period ends. */
export function quotaRefusal(reason: 'daily' | 'monthly', limit: number, now: number): Admission {
  const reset = Math.ceil(((reason === 'daily' ? nextUtcMidnight(now) : nextUtcMonth(now)) - now) / 1000);
  return { allowed: false, reason, retryAfter: reset, headers: { limit, remaining: 0, reset } };
}

export function rateRefusal(state: RateState, retryMs: number): Admission {
  return {
    allowed: false,
    reason: 'rate',
    retryAfter: Math.max(1, Math.ceil(retryMs / 1000)),
    headers: { limit: state.limit, remaining: state.remaining, reset: Math.ceil(state.resetMs / 1000) },
  };
}

const SWEEP_MS = 60_000;

/**
 * A GCRA state with `cost` more units owed. It runs at most as far ahead as a state may
 * before gcra() reads it as a clock step (and starts the bucket afresh): owing more
 * than that would forgive it all.
 */
export function owe(tat: number, now: number, rate: number, burst: number, cost: number): number {
  const interval = 1000 / rate;
  const tolerance = interval * burst;
  const base = tat > now && tat - now <= tolerance + CLOCK_STEP_MS ? tat : now;
  return Math.min(base + interval * cost, now + tolerance + CLOCK_STEP_MS);
}

export class Admitter {
  private readonly tats = new Map<string, number>();
  private lastSweep = 0;
  // What the last rates() admitting decided, read at once by its caller.
  private rate: RateState | undefined;
  private keyTat: number | undefined;
  private accountTat: number | undefined;

  constructor(
    private readonly counts: PeriodCounts,
    private readonly now: () => number = Date.now,
  ) {}

  admit(payer: Payer, tier: TierConfig, cost: number, chain: string): Admission {
    const now = this.now();
    this.sweep(now);
    const a = tier.account;
    const bucket = limitsAccounts(a) ? accountBucket(payer.account, tier) : undefined;
    const limited = this.rates(payer, tier, bucket, now, cost, chain, cost);
    if (limited !== undefined) return limited;
    const { rate, keyTat, accountTat } = this;
    // Quotas: the key's, then the account's.
    const keyDay = this.counts.dayCalls(payer.id, now) + cost;
    const accountDay = bucket === undefined ? 0 : this.counts.dayCalls(bucket, now) + cost;
    const refusal =
      keyDay > tier.daily
        ? quotaRefusal('daily', tier.daily, now)
        : this.counts.monthCalls(payer.id, now) + cost > tier.monthly
          ? quotaRefusal('monthly', tier.monthly, now)
          : bucket !== undefined && accountDay > a.daily
            ? quotaRefusal('daily', a.daily, now)
            : bucket !== undefined && this.counts.monthCalls(bucket, now) + cost > a.monthly
              ? quotaRefusal('monthly', a.monthly, now)
              : undefined;
    if (refusal !== undefined) return this.refused(payer, chain, now, cost, refusal);
    if (keyTat !== undefined) this.tats.set(payer.id, keyTat);
    if (accountTat !== undefined && bucket !== undefined) this.tats.set(bucket, accountTat);
    this.counts.add(payer.id, chain, now, cost, 0, 0);
    if (bucket !== undefined) this.counts.add(bucket, chain, now, cost, 0, 0);
    return { allowed: true, headers: admittedHeaders(tier, now, rate, keyDay, accountDay) };
  }

  /**
   * Charge `cost` units of work already done (node work past what admission took): never
   * refused, counted in the key's and account's quotas and usage, and owed in their rate
   * buckets, so the next calls wait for it (as far as a bucket can run ahead: see owe()).
   */
  charge(payer: Payer, tier: TierConfig, cost: number, chain: string): void {
    if (cost <= 0) return;
    const now = this.now();
    const a = tier.account;
    const bucket = limitsAccounts(a) ? accountBucket(payer.account, tier) : undefined;
    if (tier.rate !== Infinity) this.tats.set(payer.id, owe(this.tats.get(payer.id) ?? 0, now, tier.rate, tier.burst, cost));
    if (bucket !== undefined && a.rate !== Infinity) this.tats.set(bucket, owe(this.tats.get(bucket) ?? 0, now, a.rate, a.burst, cost));
    this.counts.add(payer.id, chain, now, cost, 0, 0);
    if (bucket !== undefined) this.counts.add(bucket, chain, now, cost, 0, 0);
  }

  /**
   * Charge a request that became no call: `cost` against the key's and the account's
   * rate only (never a quota: nothing was served), counted once as `as`. Refused by a
   * rate, it is counted as limited and answered like any call over it.
   */
  chargeRefused(payer: Payer, tier: TierConfig, cost: number, chain: string, as: RefusedAs): Admission {
    const now = this.now();
    this.sweep(now);
    const bucket = limitsAccounts(tier.account) ? accountBucket(payer.account, tier) : undefined;
    const limited = this.rates(payer, tier, bucket, now, cost, chain, 1);
    if (limited !== undefined) return limited;
    const { rate, keyTat, accountTat } = this;
    if (keyTat !== undefined) this.tats.set(payer.id, keyTat);
    if (accountTat !== undefined && bucket !== undefined) this.tats.set(bucket, accountTat);
    this.counts.add(payer.id, chain, now, 0, 0, as === 'limited' ? 1 : 0, as === 'invalid' ? 1 : 0);
    return { allowed: true, headers: rate === undefined ? undefined : admittedHeaders(tier, now, rate, 0, 0) };
  }

  /** Take a rate state as known elsewhere (a Redis limiter's last answer), for when this admitter stands in. */
  seedRate(id: string, tat: number): void {
    if (tat > 0) this.tats.set(id, tat);
  }

  /**
   * The key's and the account's rates, both decided before either is charged: the refusal
   * (counted as `refusedCount` limited), or undefined with the states to keep in `rate`,
   * `keyTat` and `accountTat` (fields, not a returned object: admission is on every call).
   */
  private rates(
    payer: Payer,
    tier: TierConfig,
    bucket: string | undefined,
    now: number,
    cost: number,
    chain: string,
    refusedCount: number,
  ): Admission | undefined {
    const a = tier.account;
    this.rate = undefined;
    this.keyTat = undefined;
    this.accountTat = undefined;
    if (tier.rate !== Infinity) {
      const { decision, tat } = gcra(this.tats.get(payer.id) ?? 0, now, tier.rate, tier.burst, cost);
      this.rate = { remaining: decision.remaining, resetMs: decision.resetMs, limit: tier.burst };
      if (!decision.allowed) return this.refused(payer, chain, now, refusedCount, rateRefusal(this.rate, decision.retryAfterMs));
      this.keyTat = tat;
    }
    if (bucket !== undefined && a.rate !== Infinity) {
      const { decision, tat } = gcra(this.tats.get(bucket) ?? 0, now, a.rate, a.burst, cost);
      const mine = { remaining: decision.remaining, resetMs: decision.resetMs, limit: a.burst };
      if (!decision.allowed) return this.refused(payer, chain, now, refusedCount, rateRefusal(mine, decision.retryAfterMs));
      if (this.rate === undefined || mine.remaining < this.rate.remaining) this.rate = mine;
      this.accountTat = tat;
    }
    return undefined;
  }

  private refused(payer: Payer, chain: string, now: number, cost: number, refusal: Admission): Admission {
    this.counts.add(payer.id, chain, now, 0, 0, cost);
    return refusal;
  }

  /** Drop buckets that are full again: their state equals a new key's. */
  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_MS) return;
    this.lastSweep = now;
    for (const [k, tat] of this.tats) if (tat <= now) this.tats.delete(k);
  }
}
