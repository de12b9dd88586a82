// What the request path needs from limits and usage, whatever keeps them: admit a
// call of some cost (rate, then quotas), count errors, read usage back. The memory
// limiter keeps state in this process (the embedded default, persisted to a file);
// the Redis limiter shares it between instances.

import type { TierConfig } from '../config/types.js';
import { Admitter, type Admission } from './admission.js';
import { UsageBook, type UsageRow } from './usage.js';
import { UsageFile } from './usage-file.js';

export interface Limiter {
  admit(keyId: string, tier: TierConfig, cost: number, chain: string): Admission | Promise<Admission>;
  countErrors(keyId: string, chain: string, errors: number): void;
  usage(keyId: string, since?: string): Promise<UsageRow[]>;
  close(): Promise<void>;
}

export class MemoryLimiter implements Limiter {
  private readonly admitter: Admitter;

  private constructor(
    private readonly book: UsageBook,
    private readonly file: UsageFile | undefined,
    private readonly now: () => number,
  ) {
    this.admitter = new Admitter(book, now);
  }

  /** With a file, usage survives restarts (read now, written on an interval and at close). */
  static async open(usagePath: string | undefined, now: () => number = Date.now): Promise<MemoryLimiter> {
    const book = new UsageBook();
    const file = usagePath === undefined ? undefined : new UsageFile(book, usagePath);
    if (file !== undefined) {
      await file.load();
      file.start();
    }
    return new MemoryLimiter(book, file, now);
  }

  admit(keyId: string, tier: TierConfig, cost: number, chain: string): Admission {
    return this.admitter.admit(keyId, tier, cost, chain);
  }

  countErrors(keyId: string, chain: string, errors: number): void {
    this.book.add(keyId, chain, this.now(), 0, errors, 0);
  }

  usage(keyId: string, since = ''): Promise<UsageRow[]> {
    return Promise.resolve(this.book.rows(keyId, since));
  }

  async close(): Promise<void> {
    await this.file?.close();
  }
}
