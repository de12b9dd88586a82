// Usage history gathered in memory and written every few seconds (usage.flushInterval):
// each call adds to one cell per UTC hour, key, chain, method and outcome, found
// through nested maps keyed by strings the gateway already holds (the key's id, the
// chain's name, the plugin's label, the outcome word), so recording a call makes no
// string and no Date, and allocates only a cell's first call of the hour. A flush hands
// the cells touched since the last one to the history as deltas, in one write, and
// zeroes them: the record sees writes per second independent of the request rate, and
// instances on one record add up. A write that fails keeps its deltas for the next;
// a process killed loses at most one interval. The last failed calls of each key ride
// along in the same write. Rollups past `retention` are pruned at most once an hour.

import { hourOf, HOUR_MS, LATENCY_BUCKETS, type FailedCall, type RollupRow, type UsageHistory } from './usage-history.js';

export interface UsageRollupOptions {
  readonly flushIntervalMs: number;
  /** Rollups older than this are pruned. */
  readonly retentionMs: number;
  /** Failed calls kept per key; 0 keeps none. */
  readonly failedPerKey: number;
  /** Failed calls older than this are pruned. */
  readonly failedMaxAgeMs: number;
  readonly now?: () => number;
  /** A write or prune that failed (a write's deltas are kept and go with the next). */
  readonly onError?: (err: unknown) => void;
}

interface Cell {
  readonly hour: number;
  readonly keyId: string;
  readonly account: string;
  readonly chain: string;
  readonly method: string;
  readonly outcome: string;
  calls: number;
  cost: number;
  nodeCalls: number;
  bytesIn: number;
  bytesOut: number;
  readonly latency: number[];
  /** In `touched` since the last flush. */
  touched: boolean;
}

/** key id → chain → method → outcome → cell, for one hour. */
type Tree = Map<string, Map<string, Map<string, Map<string, Cell>>>>;

/** Keys whose failed calls one interval keeps, at most: a storm of failures from many keys is bounded too. */
const FAILED_KEYS_PER_FLUSH = 10_000;

/** The last `cap` failed calls of one key since the last flush. */
class FailedRing {
  readonly items: FailedCall[] = [];
  private next = 0;

  push(call: FailedCall, cap: number): void {
    if (this.items.length < cap) this.items.push(call);
    else {
      this.items[this.next] = call;
      this.next = (this.next + 1) % cap;
    }
  }

  /** Oldest first. */
  ordered(): FailedCall[] {
    return this.next === 0 ? this.items : [...this.items.slice(this.next), ...this.items.slice(0, this.next)];
  }
}

function child<V>(m: Map<string, V>, k: string, make: () => V): V {
  let v = m.get(k);
  if (v === undefined) {
    v = make();
    m.set(k, v);
  }
  return v;
}

export class UsageRollup {
  readonly now: () => number;
  private readonly trees = new Map<number, Tree>();
  /** The tree of the hour last added to: most calls find it without a lookup. */
  private hour = -1;
  private tree: Tree | undefined;
  private touched: Cell[] = [];
  private failed = new Map<string, FailedRing>();
  private lastPrune = -Infinity;
  private writing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly history: UsageHistory,
    private readonly options: UsageRollupOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Adds one call to its hour's cell. `bucket`: latencyBucket of what the client waited. */
  add(
    hour: number,
    keyId: string,
    account: string,
    chain: string,
    method: string,
    outcome: string,
    cost: number,
    nodeCalls: number,
    bytesIn: number,
    bytesOut: number,
    bucket: number,
  ): void {
    const c = this.cell(hour, keyId, account, chain, method, outcome);
    c.calls++;
    c.cost += cost;
    c.nodeCalls += nodeCalls;
    c.bytesIn += bytesIn;
    c.bytesOut += bytesOut;
    (c.latency[bucket] as number)++;
  }

  /** Keeps a failed call for the next write (the key's last `failedPerKey` of the interval). */
  addFailed(call: FailedCall): void {
    const cap = this.options.failedPerKey;
    if (cap <= 0) return;
    let ring = this.failed.get(call.keyId);
    if (ring === undefined) {
      if (this.failed.size >= FAILED_KEYS_PER_FLUSH) return;
      ring = new FailedRing();
      this.failed.set(call.keyId, ring);
    }
    ring.push(call, cap);
  }

  /** Whether a failed call would be kept (the caller then builds it). */
  get keepsFailed(): boolean {
    return this.options.failedPerKey > 0;
  }

  private cell(hour: number, keyId: string, account: string, chain: string, method: string, outcome: string): Cell {
    let tree = this.tree;
    if (hour !== this.hour || tree === undefined) {
      tree = this.treeOf(hour);
      this.hour = hour;
      this.tree = tree;
    }
    const chains = child(tree, keyId, () => new Map());
    const methods = child(chains, chain, () => new Map());
    const outcomes = child(methods, method, () => new Map());
    let c = outcomes.get(outcome);
    if (c === undefined) {
      c = {
        hour,
        keyId,
        account,
        chain,
        method,
        outcome,
        calls: 0,
        cost: 0,
        nodeCalls: 0,
        bytesIn: 0,
        bytesOut: 0,
        latency: new Array<number>(LATENCY_BUCKETS).fill(0),
        touched: false,
      };
      outcomes.set(outcome, c);
    }
    if (!c.touched) {
      c.touched = true;
      this.touched.push(c);
    }
    return c;
  }

  private treeOf(hour: number): Tree {
    let tree = this.trees.get(hour);
    if (tree === undefined) {
      tree = new Map();
      this.trees.set(hour, tree);
    }
    return tree;
  }

  /** Writes every flushInterval (the timer does not hold the process open). */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.flush(), this.options.flushIntervalMs);
    this.timer.unref();
  }

  /** Writes what was added since the last write (one write at a time, in order); prunes when an hour has passed since the last prune. */
  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  /** The last write: stops the timer and flushes. */
  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async write(): Promise<void> {
    const now = this.now();
    const rows = this.takeRows(hourOf(now));
    const failed = this.takeFailed();
    if (rows.length > 0 || failed.length > 0) {
      try {
        await this.history.write({ rows, failed, failedPerKey: this.options.failedPerKey });
      } catch (err) {
        this.putBack(rows, failed);
        this.options.onError?.(err);
        return;
      }
    }
    if (now - this.lastPrune < HOUR_MS) return;
    this.lastPrune = now;
    try {
      await this.history.prune(hourOf(now - this.options.retentionMs), now - this.options.failedMaxAgeMs);
    } catch (err) {
      this.options.onError?.(err);
    }
  }

  /** The touched cells as deltas, zeroed; the trees of hours before `current` let go. */
  private takeRows(current: number): RollupRow[] {
    const touched = this.touched;
    this.touched = [];
    const rows: RollupRow[] = [];
    for (const c of touched) {
      rows.push({
        hour: c.hour,
        keyId: c.keyId,
        account: c.account,
        chain: c.chain,
        method: c.method,
        outcome: c.outcome,
        calls: c.calls,
        cost: c.cost,
        nodeCalls: c.nodeCalls,
        bytesIn: c.bytesIn,
        bytesOut: c.bytesOut,
        latency: c.latency.slice(),
      });
      c.calls = 0;
      c.cost = 0;
      c.nodeCalls = 0;
      c.bytesIn = 0;
      c.bytesOut = 0;
      c.latency.fill(0);
      c.touched = false;
    }
    for (const hour of this.trees.keys()) if (hour < current) this.trees.delete(hour);
    if (this.hour < current) {
      this.hour = -1;
      this.tree = undefined;
    }
    return rows;
  }

  private takeFailed(): FailedCall[] {
    if (this.failed.size === 0) return [];
    const out: FailedCall[] = [];
    for (const ring of this.failed.values()) for (const f of ring.ordered()) out.push(f);
    this.failed = new Map();
    return out;
  }

  /** A write that failed: its deltas added back, to go with the next. */
  private putBack(rows: readonly RollupRow[], failed: readonly FailedCall[]): void {
    for (const r of rows) {
      const c = this.cell(r.hour, r.keyId, r.account, r.chain, r.method, r.outcome);
      c.calls += r.calls;
      c.cost += r.cost;
      c.nodeCalls += r.nodeCalls;
      c.bytesIn += r.bytesIn;
      c.bytesOut += r.bytesOut;
      for (let i = 0; i < LATENCY_BUCKETS; i++) (c.latency[i] as number) += r.latency[i] as number;
    }
    // Older first, so each key's ring keeps its newest.
    const since = this.failed;
    this.failed = new Map();
    for (const f of failed) this.addFailed(f);
    for (const ring of since.values()) for (const f of ring.ordered()) this.addFailed(f);
  }
}
