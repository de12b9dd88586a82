// What the request path needs from limits and usage, whatever keeps them: admit a
// call of some cost (rate, then quotas, for the key and its account), count errors,
// read usage back, and pace other events per account (key changes). The memory
// limiter keeps state in this process (the memory hot state, its usage kept in the record);
// the Redis limiter shares it between instances.

import type { TierConfig } from '../config/types.js';
import { Admitter, type Admission, type Payer, type RefusedAs } from './admission.js';
import { gcra } from './gcra.js';
import { UsageBook, type UsageArchive, type UsageRow } from './usage.js';
import { UsageFile } from './usage-file.js';

export interface Limiter {
  admit(payer: Payer, tier: TierConfig, cost: number, chain: string): Admission | Promise<Admission>;
  /**
   * Charge work already done beyond what admission took (a getLogs cut into parts,
   * fan-out the tier charges): never refused, counted in usage and quotas, owed in the
   * rate buckets. Best effort: a charge the store cannot take now is not queued.
   */
  charge(payer: Payer, tier: TierConfig, cost: number, chain: string): void;
  countErrors(keyId: string, chain: string, errors: number): void;
  /**
   * A request that became no call, charged `cost` against the key's and the account's
   * rate (no quota) and counted once as `as`; a rate refusal is counted as limited.
   */
  chargeRefused(payer: Payer, tier: TierConfig, cost: number, chain: string, as: RefusedAs): Admission | Promise<Admission>;
  usage(keyId: string, since?: string): Promise<UsageRow[]>;
  /**
   * One more event in `bucket` (e.g. an account's key changes), paced at `perHour`
   * with `burst` at once: 0 when it fits now, else the seconds until it would.
   */
  throttle(bucket: string, perHour: number, burst: number): Promise<number>;
  close(): Promise<void>;
}

/** Events paced in this process: one GCRA state per bucket. */
export class LocalThrottle {
  private readonly tats = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  take(bucket: string, perHour: number, burst: number): number {
    const now = this.now();
    const { decision, tat } = gcra(this.tats.get(bucket) ?? 0, now, perHour / 3600, burst, 1);
    if (!decision.allowed) return Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    this.tats.set(bucket, tat);
    // Full buckets are a new bucket's state: drop them now and then so the map stays small.
    if (this.tats.size > 10_000) for (const [b, t] of this.tats) if (t <= now) this.tats.delete(b);
    return 0;
  }
}

export class MemoryLimiter implements Limiter {
  private readonly admitter: Admitter;
  private readonly paced: LocalThrottle;

  private constructor(
    private readonly book: UsageBook,
    private readonly archive: UsageArchive | undefined,
    private readonly now: () => number,
  ) {
    this.admitter = new Admitter(book, now);
    this.paced = new LocalThrottle(now);
  }

  /** With a file, usage survives restarts (read now, written on an interval and at close). */
  static open(usagePath: string | undefined, now: () => number = Date.now): Promise<MemoryLimiter> {
    return MemoryLimiter.openWith(usagePath === undefined ? undefined : (book) => new UsageFile(book, usagePath), now);
  }

  /** Usage kept where `archive` keeps the book (a file, the record); none: this run only. */
  static async openWith(archive: ((book: UsageBook) => UsageArchive) | undefined, now: () => number = Date.now): Promise<MemoryLimiter> {
    const book = new UsageBook();
    const kept = archive?.(book);
    if (kept !== undefined) {
      await kept.load();
      kept.start();
    }
    return new MemoryLimiter(book, kept, now);
  }

  admit(payer: Payer, tier: TierConfig, cost: number, chain: string): Admission {
    return this.admitter.admit(payer, tier, cost, chain);
  }

  charge(payer: Payer, tier: TierConfig, cost: number, chain: string): void {
    this.admitter.charge(payer, tier, cost, chain);
  }

  chargeRefused(payer: Payer, tier: TierConfig, cost: number, chain: string, as: RefusedAs): Admission {
    return this.admitter.chargeRefused(payer, tier, cost, chain, as);
  }

  countErrors(keyId: string, chain: string, errors: number): void {
    this.book.add(keyId, chain, this.now(), 0, errors, 0);
  }

  usage(keyId: string, since = ''): Promise<UsageRow[]> {
    return Promise.resolve(this.book.rows(keyId, since));
  }

  throttle(bucket: string, perHour: number, burst: number): Promise<number> {
    return Promise.resolve(this.paced.take(bucket, perHour, burst));
  }

  async close(): Promise<void> {
    await this.archive?.close();
  }
}
