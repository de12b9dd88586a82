// Counters and histograms for the request path. prom-client builds a label object
// and a hash string on every inc/observe; these keep each series in a plain object
// found through nested maps of label values, so a request costs a few map lookups
// and additions. They register in prom-client's registry and answer its get() with
// the shape its own metrics give, so the exposition is written by prom-client.

import type { Registry } from 'prom-client';

type Labels = Record<string, string>;
type Value = { value: number; labels: Labels; metricName?: string; sharedLabels?: Labels };

/** Series found by up to four label values, made on first use. */
class SeriesTree<T> {
  private readonly root = new Map<string, unknown>();
  readonly all: T[] = [];

  constructor(
    private readonly names: readonly string[],
    private readonly make: (labels: Labels) => T,
  ) {}

  get(a: string, b = '', c = '', d = ''): T {
    const n = this.names.length;
    let m = this.root;
    if (n > 1) m = this.child(m, a);
    if (n > 2) m = this.child(m, b);
    if (n > 3) m = this.child(m, c);
    const last = n === 1 ? a : n === 2 ? b : n === 3 ? c : d;
    const leaf = m.get(last) as T | undefined;
    return leaf ?? this.create(m, last, [a, b, c, d]);
  }

  private child(m: Map<string, unknown>, v: string): Map<string, unknown> {
    let next = m.get(v) as Map<string, unknown> | undefined;
    if (next === undefined) {
      next = new Map();
      m.set(v, next);
    }
    return next;
  }

  private create(m: Map<string, unknown>, last: string, values: readonly string[]): T {
    const labels: Labels = {};
    this.names.forEach((name, i) => (labels[name] = values[i] as string));
    const leaf = this.make(labels);
    m.set(last, leaf);
    this.all.push(leaf);
    return leaf;
  }

  /** By label object (off the hot path: tests, rare events). */
  byLabels(labels: Readonly<Partial<Labels>>): T {
    const [a = '', b, c, d] = this.names.map((n) => labels[n] ?? '');
    return this.get(a, b, c, d);
  }

  clear(): void {
    this.root.clear();
    this.all.length = 0;
  }
}

interface CounterSeries {
  readonly labels: Labels;
  value: number;
}

export class FastCounter {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly tree: SeriesTree<CounterSeries>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    this.tree = new SeriesTree(labelNames, (labels) => ({ labels, value: 0 }));
    registry.registerMetric(this as never);
  }

  /** Add to the series of these label values, given in `labelNames` order. */
  add(n: number, a: string, b?: string, c?: string, d?: string): void {
    this.tree.get(a, b, c, d).value += n;
  }

  /** prom-client's form, for callers off the hot path. */
  inc(labels: Readonly<Partial<Labels>>, n = 1): void {
    this.tree.byLabels(labels).value += n;
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values = this.tree.all.map((s) => ({ labels: { ...s.labels }, value: s.value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.tree.clear();
  }
}

interface HistogramSeries {
  readonly labels: Labels;
  /** Observations per bucket (not cumulative); the last slot is +Inf. */
  readonly counts: number[];
  sum: number;
  count: number;
}

export class FastHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly tree: SeriesTree<HistogramSeries>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    this.tree = new SeriesTree(labelNames, (labels) => ({
      labels,
      counts: new Array<number>(buckets.length + 1).fill(0),
      sum: 0,
      count: 0,
    }));
    registry.registerMetric(this as never);
  }

  /** Observe `v` in the series of these label values, given in `labelNames` order. */
  record(v: number, a: string, b?: string, c?: string, d?: string): void {
    const s = this.tree.get(a, b, c, d);
    const { buckets } = this;
    let i = 0;
    while (i < buckets.length && v > (buckets[i] as number)) i++;
    (s.counts[i] as number)++;
    s.sum += v;
    s.count++;
  }

  /** prom-client's form, for callers off the hot path. */
  observe(labels: Readonly<Partial<Labels>>, v: number): void {
    const names = this.labelNames.map((n) => labels[n] ?? '');
    this.record(v, names[0] ?? '', names[1], names[2], names[3]);
  }

  /** What the registry writes: `le` first, the series' labels after it, as prom-client's own histograms. */
  async getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values: Value[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const s of this.tree.all) {
      let acc = 0;
      this.buckets.forEach((le, i) => {
        acc += s.counts[i] as number;
        values.push({ labels: { le: String(le) }, sharedLabels: s.labels, value: acc, metricName: bucketName });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucketName });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, ...v }) => ({ ...v, labels: { ...v.labels, ...sharedLabels } }));
    return data;
  }

  reset(): void {
    this.tree.clear();
  }
}
