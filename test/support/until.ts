// Waiting in tests: on a condition the system reaches by itself (a socket closing, a
// node receiving a call, a breaker opening), never for a guessed time. `pause` is only
// for proving that something did NOT happen, and its callers say why.

export interface UntilOptions {
  /** Named in the timeout's error. */
  readonly what?: string;
  /** Default 5 s: well under mocha's 20 s, so a stuck wait fails with its own message. */
  readonly timeoutMs?: number;
  /** How often the condition is read; default 10 ms. */
  readonly everyMs?: number;
}

/** Resolves once `cond` holds; rejects when it has not within the timeout. */
export async function until(cond: () => boolean | Promise<boolean>, options: UntilOptions = {}): Promise<void> {
  const { what = 'the condition held', timeoutMs = 5_000, everyMs = 10 } = options;
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await pause(everyMs);
  }
}

/** Resolves with the first defined value `read` gives; rejects as `until` does. */
export async function untilDefined<T>(read: () => T | undefined | Promise<T | undefined>, options: UntilOptions = {}): Promise<T> {
  let value: T | undefined;
  await until(async () => (value = await read()) !== undefined, options);
  return value as T;
}

/** A fixed wait: only to give something time to happen that must not. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
