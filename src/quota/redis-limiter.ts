// Limits and usage shared by every instance through Redis. One server-side script
// per request decides rate (GCRA), daily and monthly quotas for the key and for its
// account together, and counts usage, atomically, so N instances hold one global
// limit in one round trip; another hands out leases of tokens in bulk (and takes
// back what a lease did not spend) for a LeasedLimiter to spend without a round trip.
// When Redis fails, the configured policy applies: fail-open admits with this
// instance's own admitter (each limit divided by the instance count), starting from
// the last state Redis reported rather than from zero; fail-closed refuses with 503.
// Either way nothing queues.
// On a Redis Cluster every key a script touches must hash to one slot, and a key's
// script touches its account's state too: there each key's state carries its
// account as a hash tag (`<prefix>{<account>}:rl:<id>`), and `<prefix>ka:{<id>}`
// names a key's account for the readers that know only the key (usage, error
// counts). A single server keeps the untagged names of earlier versions, so an
// upgrade keeps its counters.

import type { RedisClient } from '../store/redis-connection.js';
import { LRUCache } from 'lru-cache';
import type { TierConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import {
  accountBucket,
  admittedHeaders,
  limitsAccounts,
  quotaRefusal,
  rateRefusal,
  Admitter,
  type Admission,
  type Payer,
  type RefusedAs,
} from './admission.js';
import type { LeaseAnswer, LeaseReturn, LeaseSource } from './lease.js';
import { LocalThrottle, type Limiter } from './limiter.js';
import { ADMIT, CHARGE, CHARGE_REFUSED, LEASE, THROTTLE } from './redis-limiter-scripts.js';
import { RecentCounts } from './recent-counts.js';
import { nextUtcMidnight, nextUtcMonth, UtcDay, type UsageRow } from './usage.js';
import { script, type ScriptCall } from '../store/redis-scripts.js';

type AdmitReply = [number, string, number, number, number, number, number, number, number, number, string, string];
type RefusedReply = [number, number, number, number, number, string, string];

export interface RedisLimiterOptions {
  readonly prefix: string;
  readonly onFailure: 'fail-open' | 'fail-closed';
  readonly instances: number;
  readonly now?: () => number;
  /** Told when a Redis call failed and the policy applied (metrics, logs). */
  readonly onFallback?: (err: unknown) => void;
}

const limit = (n: number): number => (n === Infinity ? -1 : n);
/** Bursts are only meaningful with a rate; an unlimited burst is a very large one. */
const burstOf = (n: number): number => (n === Infinity ? 1e9 : n);

/** A lease takes at most this share of what is left of a quota, so what other instances hold stays small near its end. */
const QUOTA_SHARE = 8;

/** How long a key's account stays noted without a call (as long as its usage is kept); renewed on each process's first call. */
const ACCOUNT_NOTE_MS = 400 * 86_400_000;

/** The day's and month's key lifetimes, then the tier's limits and its account's (-1: the account sets none). */
function limitsOf(tier: TierConfig, accounts: boolean, now: number): number[] {
  const a = tier.account;
  return [
    nextUtcMidnight(now) - now + 3_600_000,
    nextUtcMonth(now) - now + 3_600_000,
    limit(tier.rate),
    burstOf(tier.burst),
    limit(tier.daily),
    limit(tier.monthly),
    accounts ? limit(a.rate) : -1,
    burstOf(a.burst),
    accounts ? limit(a.daily) : -1,
    accounts ? limit(a.monthly) : -1,
  ];
}

export class RedisLimiter implements Limiter, LeaseSource {
  private readonly day = new UtcDay();
  /** Where fail-open counts: seeded from every answer Redis gives, scaled to this instance's share. */
  private readonly fallbackCounts = new RecentCounts();
  private readonly local: Admitter;
  private readonly localPaced: LocalThrottle;
  private readonly scaled = new Map<TierConfig, TierConfig>();
  private readonly now: () => number;
  private readonly admitScript: ScriptCall;
  private readonly throttleScript: ScriptCall;
  private readonly leaseScript: ScriptCall;
  private readonly chargeScript: ScriptCall;
  private readonly refusedScript: ScriptCall;
  /** Keys carry their account as a hash tag (a cluster). */
  private readonly tagged: boolean;
  /** Key id → account, as noted in Redis by this process (a cluster only). */
  private readonly accounts = new LRUCache<string, string>({ max: 100_000 });

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RedisLimiterOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.tagged = redis.isCluster;
    this.admitScript = script(redis, 'noderouterAdmitAccount', 8, ADMIT);
    this.throttleScript = script(redis, 'noderouterThrottle', 1, THROTTLE);
    this.leaseScript = script(redis, 'noderouterLease', 8, LEASE);
    this.chargeScript = script(redis, 'noderouterCharge', 8, CHARGE);
    this.refusedScript = script(redis, 'noderouterChargeRefused', 4, CHARGE_REFUSED);
    this.local = new Admitter(this.fallbackCounts, this.now);
    this.localPaced = new LocalThrottle(this.now);
  }

  /** A Redis key of the state of `account`'s keys (tagged with it on a cluster: one slot per account). */
  private k(account: string, ...parts: string[]): string {
    return this.tagged ? `${this.options.prefix}{${account}}:${parts.join(':')}` : this.options.prefix + parts.join(':');
  }

  /** The keys the admit and lease scripts read: the key's rate, quotas and usage, then its account's. */
  private keysOf(payer: Payer, bucket: string, day: string, month: string): string[] {
    const { id, account } = this.note(payer);
    return [
      this.k(account, 'rl', id),
      this.k(account, 'qd', id, day),
      this.k(account, 'qm', id, month),
      this.k(account, 'u', id, day),
      this.k(account, 'ud', id),
      this.k(account, 'arl', bucket),
      this.k(account, 'aqd', bucket, day),
      this.k(account, 'aqm', bucket, month),
    ];
  }

  /**
   * On a cluster: remember (here, and once per process in Redis) which account a key
   * belongs to, so a reader that knows only the key finds its tagged state.
   */
  private note(payer: Payer): Payer {
    if (this.tagged && this.accounts.get(payer.id) !== payer.account) {
      this.accounts.set(payer.id, payer.account);
      this.redis.set(this.accountKey(payer.id), payer.account, 'PX', ACCOUNT_NOTE_MS).catch(() => this.accounts.delete(payer.id));
    }
    return payer;
  }

  private accountKey(id: string): string {
    return `${this.options.prefix}ka:{${id}}`;
  }

  /** The account whose tag `id`'s state carries ('' off a cluster; undefined: never admitted on this cluster). */
  private async accountOf(id: string): Promise<string | undefined> {
    if (!this.tagged) return '';
    return this.accounts.get(id) ?? (await this.redis.get(this.accountKey(id))) ?? undefined;
  }

  /** The tier as one instance of N enforces it alone while Redis is away. */
  private localTier(tier: TierConfig): TierConfig {
    let t = this.scaled.get(tier);
    if (t === undefined) {
      const n = this.options.instances;
      const a = tier.account;
      t = {
        ...tier,
        rate: tier.rate / n,
        burst: Math.max(1, tier.burst / n),
        daily: tier.daily / n,
        monthly: tier.monthly / n,
        account: { rate: a.rate / n, burst: Math.max(1, a.burst / n), daily: a.daily / n, monthly: a.monthly / n },
      };
      this.scaled.set(tier, t);
    }
    return t;
  }

  async admit(payer: Payer, tier: TierConfig, cost: number, chain: string): Promise<Admission> {
    const now = this.now();
    const day = this.day.of(now);
    const month = day.slice(0, 7);
    const a = tier.account;
    const bucket = accountBucket(payer.account, tier);
    const accounts = limitsAccounts(a);
    let r: AdmitReply;
    try {
      r = (await this.admitScript(
        ...this.keysOf(payer, bucket, day, month),
        now,
        cost,
        chain,
        day,
        ...limitsOf(tier, accounts, now),
      )) as AdmitReply;
    } catch (err) {
      this.options.onFallback?.(err);
      if (this.options.onFailure === 'fail-closed') {
        throw new GatewayError('UNAVAILABLE', { message: 'Limits store unavailable', cause: err, headers: { 'retry-after': '1' } });
      }
      return this.local.admit(payer, this.localTier(tier), cost, chain);
    }
    const [allowed, reason, who, remaining, retryMs, resetMs, keyDay, keyMonth, accountDay, accountMonth, keyTat, accountTat] = r;
    this.remember(payer.id, now, keyDay, keyMonth, Number(keyTat));
    if (accounts) this.remember(bucket, now, accountDay, accountMonth, Number(accountTat));
    const byAccount = who === 1;
    const rate = remaining >= 0 ? { remaining, resetMs, limit: byAccount ? a.burst : tier.burst } : undefined;
    if (allowed === 1) return { allowed: true, headers: admittedHeaders(tier, now, rate, keyDay, accountDay) };
    if (reason === 'rate') return rateRefusal(rate ?? { remaining, resetMs, limit: tier.burst }, retryMs);
    const period = reason === 'daily' ? 'daily' : 'monthly';
    return quotaRefusal(period, byAccount ? a[period] : tier[period], now);
  }

  async chargeRefused(payer: Payer, tier: TierConfig, cost: number, chain: string, as: RefusedAs): Promise<Admission> {
    const now = this.now();
    const day = this.day.of(now);
    const a = tier.account;
    const bucket = accountBucket(payer.account, tier);
    const accounts = limitsAccounts(a) && a.rate !== Infinity;
    let r: RefusedReply;
    try {
      r = (await this.refusedScript(
        this.k(this.note(payer).account, 'rl', payer.id),
        this.k(payer.account, 'u', payer.id, day),
        this.k(payer.account, 'ud', payer.id),
        this.k(payer.account, 'arl', bucket),
        now,
        cost,
        chain,
        day,
        as,
        limit(tier.rate),
        burstOf(tier.burst),
        accounts ? limit(a.rate) : -1,
        burstOf(a.burst),
      )) as RefusedReply;
    } catch (err) {
      this.options.onFallback?.(err);
      if (this.options.onFailure === 'fail-closed') {
        throw new GatewayError('UNAVAILABLE', { message: 'Limits store unavailable', cause: err, headers: { 'retry-after': '1' } });
      }
      return this.local.chargeRefused(payer, this.localTier(tier), cost, chain, as);
    }
    const [allowed, who, remaining, retryMs, resetMs, keyTat, accountTat] = r;
    this.local.seedRate(payer.id, Number(keyTat));
    if (accounts) this.local.seedRate(bucket, Number(accountTat));
    const rate = remaining >= 0 ? { remaining, resetMs, limit: who === 1 ? a.burst : tier.burst } : undefined;
    if (allowed === 1) return { allowed: true, headers: rate === undefined ? undefined : admittedHeaders(tier, now, rate, 0, 0) };
    return rateRefusal(rate ?? { remaining, resetMs, limit: tier.burst }, retryMs);
  }

  async lease(
    payer: Payer,
    tier: TierConfig,
    day: string,
    chain: string,
    cost: number,
    want: number,
    back: LeaseReturn | undefined,
  ): Promise<LeaseAnswer> {
    const now = this.now();
    const month = day.slice(0, 7);
    const a = tier.account;
    const bucket = accountBucket(payer.account, tier);
    const accounts = limitsAccounts(a);
    const usage: (string | number)[] = [];
    if (back !== undefined) for (const [c, n] of back.usage) usage.push(c, n.calls, n.limited);
    let r: AdmitReply;
    try {
      r = (await this.leaseScript(
        ...this.keysOf(payer, bucket, day, month),
        now,
        cost,
        want,
        chain,
        day,
        ...limitsOf(tier, accounts, now),
        back?.unused ?? 0,
        QUOTA_SHARE,
        ...usage,
      )) as AdmitReply;
    } catch (err) {
      this.options.onFallback?.(err);
      if (this.options.onFailure === 'fail-closed' || cost === 0) {
        throw new GatewayError('UNAVAILABLE', { message: 'Limits store unavailable', cause: err, headers: { 'retry-after': '1' } });
      }
      return { kind: 'fallback', admission: this.local.admit(payer, this.localTier(tier), cost, chain) };
    }
    const [granted, reason, who, remaining, retryMs, resetMs, keyDay, keyMonth, accountDay, accountMonth, keyTat, accountTat] = r;
    this.remember(payer.id, now, keyDay, keyMonth, Number(keyTat));
    if (accounts) this.remember(bucket, now, accountDay, accountMonth, Number(accountTat));
    const byAccount = who === 1;
    const rate = remaining >= 0 ? { remaining, resetMs, limit: byAccount ? a.burst : tier.burst } : undefined;
    if (granted > 0 || cost === 0) {
      return { kind: 'granted', tokens: granted, rate, interval: 1000 / (byAccount ? a.rate : tier.rate), keyDay, accountDay };
    }
    if (reason === 'rate') {
      return { kind: 'refused', admission: rateRefusal(rate ?? { remaining, resetMs, limit: tier.burst }, retryMs), retryMs };
    }
    const period = reason === 'daily' ? 'daily' : 'monthly';
    return { kind: 'refused', admission: quotaRefusal(period, byAccount ? a[period] : tier[period], now), retryMs: undefined };
  }

  /**
   * The shared state as Redis just reported it, in the fallback's terms: this
   * instance's share of what is left (counts / N against limits / N), and the same
   * tat (a rate of r/N with a burst of b/N owes the same time as r with b).
   */
  private remember(id: string, now: number, day: number, month: number, tat: number): void {
    const n = this.options.instances;
    this.fallbackCounts.seed(id, now, day / n, month / n);
    this.local.seedRate(id, tat);
  }

  charge(payer: Payer, tier: TierConfig, cost: number, chain: string): void {
    if (cost <= 0) return;
    void this.charged(payer, tier, cost, chain);
  }

  private async charged(payer: Payer, tier: TierConfig, cost: number, chain: string): Promise<void> {
    const now = this.now();
    const day = this.day.of(now);
    const bucket = accountBucket(payer.account, tier);
    const accounts = limitsAccounts(tier.account);
    let r: [number, number, number, number, string, string];
    try {
      r = (await this.chargeScript(
        ...this.keysOf(payer, bucket, day, day.slice(0, 7)),
        now,
        cost,
        chain,
        day,
        ...limitsOf(tier, accounts, now),
      )) as typeof r;
    } catch (err) {
      this.options.onFallback?.(err);
      // Fail-open keeps this instance's share in step; fail-closed has nothing to charge against.
      if (this.options.onFailure === 'fail-open') this.local.charge(payer, this.localTier(tier), cost, chain);
      return;
    }
    const [keyDay, keyMonth, accountDay, accountMonth, keyTat, accountTat] = r;
    this.remember(payer.id, now, keyDay, keyMonth, Number(keyTat));
    if (accounts) this.remember(bucket, now, accountDay, accountMonth, Number(accountTat));
  }

  countErrors(keyId: string, chain: string, errors: number): void {
    this.count(keyId, chain, 'errors', errors);
  }

  private count(keyId: string, chain: string, what: 'errors', n: number): void {
    const day = this.day.of(this.now());
    // Best effort: a count lost while Redis is away is not worth a queue.
    const add = (account: string | undefined): Promise<unknown> =>
      account === undefined ? Promise.resolve() : this.redis.hincrby(this.k(account, 'u', keyId, day), `${chain}:${what}`, n);
    const known = this.tagged ? this.accounts.get(keyId) : '';
    (known !== undefined ? add(known) : this.accountOf(keyId).then(add)).catch(() => undefined);
  }

  async throttle(bucket: string, perHour: number, burst: number): Promise<number> {
    const interval = 3_600_000 / perHour;
    try {
      const waitMs = (await this.throttleScript(this.options.prefix + `th:${bucket}`, this.now(), interval, interval * burst)) as number;
      return waitMs === 0 ? 0 : Math.max(1, Math.ceil(waitMs / 1000));
    } catch (err) {
      this.options.onFallback?.(err);
      if (this.options.onFailure === 'fail-closed') {
        throw new GatewayError('UNAVAILABLE', { message: 'Limits store unavailable', cause: err, headers: { 'retry-after': '1' } });
      }
      return this.localPaced.take(bucket, perHour / this.options.instances, Math.max(1, burst / this.options.instances));
    }
  }

  async usage(keyId: string, since = ''): Promise<UsageRow[]> {
    const account = await this.accountOf(keyId);
    if (account === undefined) return [];
    const days = (await this.redis.smembers(this.k(account, 'ud', keyId))).filter((d) => d >= since).sort();
    const hashes = await Promise.all(days.map((d) => this.redis.hgetall(this.k(account, 'u', keyId, d))));
    const rows: UsageRow[] = [];
    days.forEach((day, i) => {
      const byChain = new Map<string, UsageRow>();
      for (const [field, value] of Object.entries(hashes[i] ?? {})) {
        const cut = field.lastIndexOf(':');
        const chain = field.slice(0, cut);
        const what = field.slice(cut + 1) as 'calls' | 'errors' | 'limited' | 'invalid';
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
