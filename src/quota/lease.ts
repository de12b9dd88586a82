// Limits without a round trip per call: a leased limiter takes a lease of tokens for a
// key (and its account) from shared limits in one call and spends it here, giving back
// what it did not spend when the lease ends (the technique behind Kong's sync_rate and
// Envoy's quota buckets). Tokens are only ever taken from the shared state, so no
// instance can admit more than the limits give out; a token held here and unspent is
// late, not lost. A lease lasts `leaseMs` (never past UTC midnight), takes at most
// `leaseTokens` (auto: what the tier's rate gives in `leaseMs`), and near a quota's end
// the shared side gives smaller ones. Any shared limiter that can lease sits under it
// (`LeaseSource`: Redis today; a limiter kept by a cluster's primary process would answer
// the same `lease` over IPC); what is not a limit decision passes straight through.
// Usage is counted here and written with the lease's end, so nothing is counted twice
// or lost, and close() gives everything back.

import type { TierConfig } from '../config/types.js';
import { admittedHeaders, type Admission, type Payer, type RateState, type RefusedAs } from './admission.js';
import type { Limiter } from './limiter.js';
import { nextUtcMidnight, UtcDay, type UsageRow } from './usage.js';

/** What a lease's end hands back: the tokens it did not spend and the usage it counted, for the day it was taken. */
export interface LeaseReturn {
  readonly payer: Payer;
  readonly tier: TierConfig;
  readonly day: string;
  readonly unused: number;
  /** Per chain: calls admitted, calls refused here. */
  readonly usage: ReadonlyMap<string, { calls: number; limited: number }>;
}

/** What the shared limits said to a lease request. */
export type LeaseAnswer =
  | {
      readonly kind: 'granted';
      readonly tokens: number;
      /** The tighter rate bucket after the grant (undefined: no rate limit). */
      readonly rate: RateState | undefined;
      /** Ms per token of that bucket. */
      readonly interval: number;
      /** The key's and the account's calls of the day, as counted after the grant (leased tokens included). */
      readonly keyDay: number;
      readonly accountDay: number;
    }
  /** Nothing granted: the refusal to give (the return was applied), and for a rate the ms until a call of this cost fits. */
  | { readonly kind: 'refused'; readonly admission: Admission; readonly retryMs: number | undefined }
  /** The shared limits are away and the call was decided locally (the return was not applied). */
  | { readonly kind: 'fallback'; readonly admission: Admission };

export interface LeaseSource {
  /**
   * Apply `back` (when given, for `day` and `tier`), then take up to `want` tokens and
   * at least `cost` for the key and its account (cost 0: only apply `back`). Throws when
   * the shared limits are away and nothing may be decided locally (fail-closed).
   */
  lease(
    payer: Payer,
    tier: TierConfig,
    day: string,
    chain: string,
    cost: number,
    want: number,
    back: LeaseReturn | undefined,
  ): Promise<LeaseAnswer>;
}

export interface LeaseOptions {
  readonly leaseMs: number;
  readonly leaseTokens: number | 'auto';
  readonly now?: () => number;
}

/** Tokens a lease asks for when nothing limits the rate (quotas still cut it down). */
const UNRATED_LEASE = 10_000;

/** The tokens one lease asks for on a tier: `leaseTokens`, or (auto) what its tightest rate gives in `leaseMs`. */
export function leaseSize(tier: TierConfig, leaseMs: number, leaseTokens: number | 'auto'): number {
  if (leaseTokens !== 'auto') return Math.max(1, leaseTokens);
  const rate = Math.min(tier.rate, tier.account.rate);
  if (rate === Infinity) return UNRATED_LEASE;
  return Math.max(1, Math.ceil((rate * leaseMs) / 1000));
}

interface Held {
  payer: Payer;
  tier: TierConfig;
  day: string;
  /** Tokens in hand. */
  tokens: number;
  endsAt: number;
  grantedAt: number;
  rate: RateState | undefined;
  interval: number;
  keyDay: number;
  accountDay: number;
  usage: Map<string, { calls: number; limited: number }>;
  /** A refusal the shared limits gave, repeated here until `refusedUntil` for calls of `refusedCost` or more. */
  refusal: Admission | undefined;
  refusedUntil: number;
  refusedCost: number;
  /** A call to the shared limits under way for this key. */
  busy: Promise<unknown> | undefined;
}

export class LeasedLimiter implements Limiter {
  private readonly held = new Map<string, Held>();
  /** Returns not yet applied (lease ended while idle, or the shared limits were away). */
  private owing: LeaseReturn[] = [];
  private readonly utc = new UtcDay();
  private readonly now: () => number;
  private readonly timer: NodeJS.Timeout;
  private sweeping: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly shared: Limiter & LeaseSource,
    private readonly options: LeaseOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.timer = setInterval(() => void this.sweep(), Math.max(10, options.leaseMs));
    this.timer.unref();
  }

  admit(payer: Payer, tier: TierConfig, cost: number, chain: string): Admission | Promise<Admission> {
    // A call still arriving while closing is decided by the shared limits alone: no lease is left behind.
    if (this.closed) return this.shared.admit(payer, tier, cost, chain);
    return this.spend(payer, tier, cost, chain, this.now()) ?? this.renew(payer, tier, cost, chain);
  }

  /** The call decided from what is held here, or undefined when the shared limits must be asked. */
  private spend(payer: Payer, tier: TierConfig, cost: number, chain: string, now: number): Admission | undefined {
    const h = this.held.get(payer.id);
    if (h === undefined || h.busy !== undefined || h.tier !== tier || now >= h.endsAt) return undefined;
    if (h.tokens >= cost) {
      h.tokens -= cost;
      count(h, chain).calls += cost;
      return { allowed: true, headers: this.headers(h, now) };
    }
    if (h.refusal !== undefined && now < h.refusedUntil && cost >= h.refusedCost) {
      count(h, chain).limited += cost;
      return h.refusal;
    }
    return undefined;
  }

  /**
   * Headers from what this instance knows: the shared bucket as the last grant left it,
   * plus the tokens still held here (they go back unless spent), minus nothing spent
   * elsewhere since; the day's count as the shared limits had it, less what is held.
   */
  private headers(h: Held, now: number): Admission['headers'] {
    const r = h.rate;
    const rate =
      r === undefined
        ? undefined
        : {
            limit: r.limit,
            remaining: Math.min(r.limit, r.remaining + h.tokens),
            resetMs: Math.max(0, r.resetMs - h.tokens * h.interval - (now - h.grantedAt)),
          };
    return admittedHeaders(h.tier, now, rate, h.keyDay - h.tokens, h.accountDay - h.tokens);
  }

  private async renew(payer: Payer, tier: TierConfig, cost: number, chain: string): Promise<Admission> {
    for (;;) {
      const h = this.held.get(payer.id);
      if (h?.busy === undefined) return this.ask(payer, tier, cost, chain, h);
      await h.busy;
      const decided = this.spend(payer, tier, cost, chain, this.now());
      if (decided !== undefined) return decided;
    }
  }

  /** One call to the shared limits: give back the ended lease, take a new one. */
  private async ask(payer: Payer, tier: TierConfig, cost: number, chain: string, prior: Held | undefined): Promise<Admission> {
    const now = this.now();
    const day = this.utc.of(now);
    let back = prior === undefined ? undefined : this.end(prior);
    // A return for another day's counters or another tier's rates goes on its own.
    if (back !== undefined && (back.day !== day || back.tier !== tier)) {
      this.owing.push(back);
      back = undefined;
    }
    const h = prior ?? this.fresh(payer, tier, day);
    const pending = this.shared.lease(
      payer,
      tier,
      day,
      chain,
      cost,
      Math.max(cost, leaseSize(tier, this.options.leaseMs, this.options.leaseTokens)),
      back,
    );
    h.busy = pending.then(noop, noop);
    let answer: LeaseAnswer;
    try {
      answer = await pending;
    } catch (err) {
      if (back !== undefined) this.owing.push(back);
      throw err;
    } finally {
      h.busy = undefined;
    }
    h.payer = payer;
    h.tier = tier;
    h.day = day;
    if (answer.kind === 'fallback') {
      if (back !== undefined) this.owing.push(back);
      return answer.admission;
    }
    if (answer.kind === 'refused') {
      const a = answer.admission;
      // Repeated here until a token is due (a rate), or for a lease's time (a quota: other instances' leases may come back).
      h.refusal = a;
      h.refusedUntil = now + Math.min(answer.retryMs ?? this.options.leaseMs, this.options.leaseMs);
      h.refusedCost = cost;
      h.endsAt = h.refusedUntil;
      return a;
    }
    h.refusal = undefined;
    h.tokens = answer.tokens - cost;
    h.grantedAt = now;
    h.endsAt = Math.min(now + this.options.leaseMs, nextUtcMidnight(now));
    h.rate = answer.rate;
    h.interval = answer.interval;
    h.keyDay = answer.keyDay;
    h.accountDay = answer.accountDay;
    count(h, chain).calls += cost;
    return { allowed: true, headers: this.headers(h, now) };
  }

  private fresh(payer: Payer, tier: TierConfig, day: string): Held {
    const h: Held = {
      payer,
      tier,
      day,
      tokens: 0,
      endsAt: 0,
      grantedAt: 0,
      rate: undefined,
      interval: 0,
      keyDay: 0,
      accountDay: 0,
      usage: new Map(),
      refusal: undefined,
      refusedUntil: 0,
      refusedCost: 0,
      busy: undefined,
    };
    this.held.set(payer.id, h);
    return h;
  }

  /** End a lease: what it hands back (undefined when nothing), its tokens no longer spendable. */
  private end(h: Held): LeaseReturn | undefined {
    if (h.tokens === 0 && h.usage.size === 0) return undefined;
    const back = { payer: h.payer, tier: h.tier, day: h.day, unused: h.tokens, usage: h.usage };
    h.tokens = 0;
    h.usage = new Map();
    return back;
  }

  /** End the leases past their time, forget idle keys, apply what is owed. */
  private sweep(all = false): Promise<void> {
    if (this.sweeping !== undefined) return this.sweeping;
    const now = this.now();
    for (const [id, h] of this.held) {
      if (h.busy !== undefined || (!all && now < h.endsAt)) continue;
      const back = this.end(h);
      if (back !== undefined) this.owing.push(back);
      if (now >= h.endsAt + this.options.leaseMs || all) this.held.delete(id);
    }
    if (this.owing.length === 0) return Promise.resolve();
    const due = this.owing;
    this.owing = [];
    this.sweeping = Promise.all(
      due.map((b) =>
        this.shared.lease(b.payer, b.tier, b.day, '', 0, 0, b).then(
          (answer) => {
            if (answer.kind === 'fallback') this.owing.push(b);
          },
          // The shared limits report their own failures; the return is tried again next sweep.
          () => {
            this.owing.push(b);
          },
        ),
      ),
    ).then(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  /**
   * Work already done: paid from the tokens held for the key when they cover it (counted
   * with the lease's usage, as a spent token is), the rest charged to the shared limits now.
   */
  charge(payer: Payer, tier: TierConfig, cost: number, chain: string): void {
    if (cost <= 0) return;
    const h = this.closed ? undefined : this.held.get(payer.id);
    let rest = cost;
    if (h !== undefined && h.busy === undefined && h.tier === tier && this.now() < h.endsAt && h.tokens > 0) {
      const paid = Math.min(h.tokens, cost);
      h.tokens -= paid;
      count(h, chain).calls += paid;
      rest -= paid;
    }
    if (rest > 0) this.shared.charge(payer, tier, rest, chain);
  }

  /** Rare by nature (no call came of it): decided by the shared limits, whose buckets the leases draw from too. */
  chargeRefused(payer: Payer, tier: TierConfig, cost: number, chain: string, as: RefusedAs): Admission | Promise<Admission> {
    return this.shared.chargeRefused(payer, tier, cost, chain, as);
  }

  countErrors(keyId: string, chain: string, errors: number): void {
    this.shared.countErrors(keyId, chain, errors);
  }

  /** Usage as the shared store has it: calls spent from a lease arrive when the lease ends. */
  usage(keyId: string, since?: string): Promise<UsageRow[]> {
    return this.shared.usage(keyId, since);
  }

  throttle(bucket: string, perHour: number, burst: number): Promise<number> {
    return this.shared.throttle(bucket, perHour, burst);
  }

  /** Give back every lease and write its usage (once more for what the shared limits refused just now). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([...this.held.values()].map((h) => h.busy?.catch(() => undefined)));
    await this.sweeping;
    await this.sweep(true);
    if (this.owing.length > 0) await this.sweep(true);
    await this.shared.close();
  }
}

function noop(): void {}

function count(h: Held, chain: string): { calls: number; limited: number } {
  let c = h.usage.get(chain);
  if (c === undefined) {
    c = { calls: 0, limited: 0 };
    h.usage.set(chain, c);
  }
  return c;
}
