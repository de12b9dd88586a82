// Hedged attempts: a read the plugin marks as safe to repeat goes to a second node
// when the first has not answered within a delay taken from the first node's recent
// latency (about its 95th percentile, within the chain's min and max). The first good
// answer wins and the other attempt is cancelled; the call is charged once whatever
// happens. At most one hedge per call, drawn from the chain's budget, so a slow pool
// cannot double its own load: a share of the chain's hedgeable calls (`budgetPercent`)
// on top of a floor in time (`minPerSecond`) so a quiet chain can still hedge. A fixed
// rate would not scale with traffic: at 1,600 calls/s a cap of 50/s leaves most calls
// on a hung node waiting for their attempt timeout. The budget is a token bucket, as
// gRPC's retry throttling and Envoy's retry budgets are: each call puts its share in,
// time puts the floor in, a hedge takes one out; unused hedges are saved up to about a
// second's worth (the floor's, at least SAVED_MIN, and the share of the last second's
// calls). A hung node then costs a client the delay,
// and, outrun by hedges, it is soon ejected (src/pool/outliers.ts) and its breaker opens.

import type { HedgeConfig } from '../../config/types.js';
import { Cancel } from '../../pool/failures.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { Sent } from '../exchanges/exchange.js';

/** One attempt as it ended: answers, or the error it failed with. */
export interface Attempted<A> {
  readonly node: PoolNode;
  /** performance.now() when it was sent. */
  readonly started: number;
  readonly sent?: Array<Sent<A>>;
  readonly err?: unknown;
}

export interface HedgeEvents {
  sent(): void;
  won(): void;
}

/** Hedges saved at most when the floor is lower (a chain hedging by share alone). */
export const SAVED_MIN = 10;
/** A hedge, in the bucket's units: hundredths, so each call's whole-percent share adds up exactly. */
const HEDGE = 100;
const SECOND = 1000;

/** A chain's hedging: the delay before a hedge, and its budget. */
export class Hedger {
  /** Hedges left, in hundredths. */
  private tokens: number;
  private refilledAt: number;
  /** Calls counted in this second and in the one before it (0 when it saw none): what the budget may save. */
  private windowStart: number;
  private inWindow = 0;
  private lastWindow = 0;
  /** The floor's second of savings, in hundredths. */
  private readonly saved: number;
  private readonly off: boolean;

  constructor(
    private readonly config: HedgeConfig,
    readonly events: HedgeEvents,
    private readonly now: () => number = Date.now,
  ) {
    this.off = config.budgetPercent === 0 && config.minPerSecond === 0;
    this.saved = Math.max(SAVED_MIN, config.minPerSecond) * HEDGE;
    // A chain starts with its savings: the first slow node after a start is hedged too.
    this.tokens = this.saved;
    this.refilledAt = this.windowStart = now();
  }

  /** How long to wait for `node` before hedging, or undefined when hedging is off. */
  delayFor(node: PoolNode): number | undefined {
    if (this.off) return undefined;
    const { minDelayMs, maxDelayMs } = this.config;
    return Math.min(maxDelayMs, Math.max(minDelayMs, node.slowMs ?? maxDelayMs));
  }

  /** A call that may be hedged was sent: its share of a hedge goes into the budget. */
  called(): void {
    this.roll(this.now());
    this.inWindow++;
    this.tokens = Math.min(this.capacity(), this.tokens + this.config.budgetPercent);
  }

  /** One hedge from the budget, if one is left. */
  take(): boolean {
    const now = this.now();
    this.roll(now);
    const t = this.tokens + (now - this.refilledAt) * this.config.minPerSecond * (HEDGE / SECOND);
    this.refilledAt = now;
    this.tokens = Math.min(this.capacity(), t);
    if (this.tokens < HEDGE) return false;
    this.tokens -= HEDGE;
    return true;
  }

  /**
   * What the budget may hold: a second of the floor and the share of the last second's
   * calls. A burst earns its hedges before their delays are up (calls arrive, then
   * wait), so savings of a fixed size would lose most of a burst's share; savings of
   * about a second of traffic keep it, and are gone a second after the traffic is.
   */
  private capacity(): number {
    return this.saved + this.config.budgetPercent * (this.inWindow > this.lastWindow ? this.inWindow : this.lastWindow);
  }

  private roll(now: number): void {
    if (now - this.windowStart < SECOND) return;
    this.lastWindow = now - this.windowStart < 2 * SECOND ? this.inWindow : 0;
    this.inWindow = 0;
    this.windowStart = now;
  }
}

/** `hedge`: this is the second attempt, sent while the first is still out. */
export type Launch<A> = (node: PoolNode, cancel: Cancel | undefined, hedge: boolean) => Promise<Attempted<A>>;

/**
 * How often due hedges are looked for. One timer serves every call waiting on its first
 * node: a timer, a promise race and an AbortController per call cost more than the
 * rest of the call's bookkeeping together, for a hedge most calls never send. A hedge
 * goes out at most this much after its delay (which is at least `minDelayMs`).
 */
export const HEDGE_TICK_MS = 5;

interface Waiting {
  readonly due: number;
  readonly wake: (a: undefined) => void;
}

const waiting = new Set<Waiting>();
let ticker: NodeJS.Timeout | undefined;

function tick(): void {
  const now = performance.now();
  for (const w of waiting) {
    if (now < w.due) continue;
    waiting.delete(w);
    w.wake(undefined);
  }
  if (waiting.size === 0 && ticker !== undefined) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

/** The attempt's ending, or undefined once `due` (performance.now()) has passed first. */
function within<A>(attempt: Promise<Attempted<A>>, due: number): Promise<Attempted<A> | undefined> {
  return new Promise((resolve) => {
    const w: Waiting = { due, wake: resolve };
    waiting.add(w);
    ticker ??= setInterval(tick, HEDGE_TICK_MS).unref();
    void attempt.then((a) => {
      if (waiting.delete(w)) resolve(a);
    });
  });
}

/** The failures of a send whose first attempt answered (most): one shared empty list. */
const NONE_FAILED: readonly never[] = Object.freeze([]);

/** How a hedged send ended. */
export interface Hedged<A> {
  /** The attempt whose answer is used, if any answered. */
  readonly won: Attempted<A> | undefined;
  /** Attempts that failed before a winner was known. */
  readonly failed: ReadonlyArray<Attempted<A>>;
  /**
   * The first node, when the hedge sent after it answered first: it was slower than a
   * node asked later, on the same calls, so the slowness is its own (a hung node).
   */
  readonly outrun?: Attempted<A>;
}

/** A first attempt still out once its hedge delay has passed. */
export interface Outstanding<A> {
  readonly node: PoolNode;
  readonly started: number;
  readonly attempt: Promise<Attempted<A>>;
  readonly cancel: Cancel;
}

/** A first attempt's ending within its hedge delay: the attempt as it ended, or the attempt still out. */
export async function firstWithin<A>(
  node: PoolNode,
  started: number,
  attempt: Promise<Attempted<A>>,
  cancel: Cancel,
  delay: number,
): Promise<Attempted<A> | Outstanding<A>> {
  return (await within(attempt, started + delay)) ?? { node, started, attempt, cancel };
}

/** How a first attempt that ended (before any hedge) ends the send. */
export function endedAlone<A>(a: Attempted<A>): Hedged<A> {
  return a.sent !== undefined ? { won: a, failed: NONE_FAILED } : { won: undefined, failed: [a] };
}

/**
 * Send to `first`; past the delay (when a hedge may be taken and `second()` names
 * another node), to that node too. Resolves with the winning attempt (if any), the
 * attempts that failed before a winner was known, and the first attempt when the hedge
 * outran it; a hedge cancelled after the first node won is handed to `late` once it
 * settles.
 */
export async function sendHedged<A>(
  first: PoolNode,
  launch: Launch<A>,
  hedger: Hedger | undefined,
  second: () => PoolNode | undefined,
  late: (a: Attempted<A>) => void,
): Promise<Hedged<A>> {
  const delay = hedger?.delayFor(first);
  if (hedger === undefined || delay === undefined) return endedAlone(await launch(first, undefined, false));
  hedger.called();
  const cancel = new Cancel();
  const started = performance.now();
  const early = await firstWithin(first, started, launch(first, cancel, false), cancel, delay);
  if (!('attempt' in early)) return endedAlone(early);
  return hedgeAfter(early, launch, hedger, second, late);
}

/** The first attempt outlived its delay: a hedge to `second()` when the budget allows one, and the first good answer of the two. */
export async function hedgeAfter<A>(
  out: Outstanding<A>,
  launch: Launch<A>,
  hedger: Hedger,
  second: () => PoolNode | undefined,
  late: (a: Attempted<A>) => void,
): Promise<Hedged<A>> {
  const { node: first, started, attempt: p1, cancel: c1 } = out;
  const other = hedger.take() ? second() : undefined;
  if (other === undefined) return endedAlone(await p1);
  hedger.events.sent();
  const c2 = new Cancel();
  const p2 = launch(other, c2, true);
  const firstDone = await Promise.race([p1.then((a) => [a, 1] as const), p2.then((a) => [a, 2] as const)]);
  const [a, which] = firstDone;
  const [rest, cancel] = which === 1 ? [p2, c2] : [p1, c1];
  if (a.sent !== undefined) {
    cancel.cancel();
    if (which === 1) {
      void rest.then(late);
      return { won: a, failed: NONE_FAILED };
    }
    hedger.events.won();
    // The outrun attempt's own ending (aborted) says nothing more: it is settled by the caller now.
    void rest.then(() => undefined);
    return { won: a, failed: NONE_FAILED, outrun: { node: first, started } };
  }
  const b = await rest;
  if (b.sent === undefined) return { won: undefined, failed: [a, b] };
  if (which === 1) hedger.events.won();
  return { won: b, failed: [a] };
}
