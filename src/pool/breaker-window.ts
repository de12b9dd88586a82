// A closed breaker's arithmetic as plain counters: calls and failures of a node in a
// rolling window of buckets, and whether they say the breaker must open. opossum
// stays the breaker's state machine (open, half-open after its reset timeout, closed
// again after a good trial), but feeding it every answer costs a fire: a promise, two
// events and its own bucket rotation on a timer, on every call of every node. A
// healthy node's answers only count here; the breaker hears of the one failure that
// opens it, and of every outcome while it is not closed.

const BUCKETS = 10;

export class BreakerWindow {
  private readonly calls = new Array<number>(BUCKETS).fill(0);
  private readonly failures = new Array<number>(BUCKETS).fill(0);
  /** Which bucket of time each slot holds now (slots are reused as time goes round). */
  private readonly stamps = new Array<number>(BUCKETS).fill(-1);
  private readonly bucketMs: number;

  constructor(
    windowMs: number,
    /** Calls in the window before it may open. */
    private readonly volume: number,
    /** Failures above this percentage of the window's calls open it. */
    private readonly thresholdPercent: number,
  ) {
    this.bucketMs = Math.max(1, windowMs / BUCKETS);
  }

  /** Count an outcome at `now` (ms); true when the window says the breaker must open. */
  record(failed: boolean, now: number): boolean {
    const bucket = Math.floor(now / this.bucketMs);
    const slot = bucket % BUCKETS;
    if (this.stamps[slot] !== bucket) {
      this.stamps[slot] = bucket;
      this.calls[slot] = 0;
      this.failures[slot] = 0;
    }
    (this.calls[slot] as number)++;
    if (!failed) return false;
    (this.failures[slot] as number)++;
    const { calls, failures } = this.counts(bucket);
    return calls >= this.volume && (failures / calls) * 100 > this.thresholdPercent;
  }

  /** Failures counted in the window as it stands at `now` (ms). */
  failuresAt(now: number): number {
    return this.counts(Math.floor(now / this.bucketMs)).failures;
  }

  private counts(bucket: number): { calls: number; failures: number } {
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (bucket - (this.stamps[i] as number) >= BUCKETS) continue;
      calls += this.calls[i] as number;
      failures += this.failures[i] as number;
    }
    return { calls, failures };
  }
}
