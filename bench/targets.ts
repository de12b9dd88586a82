// The targets of issue #30 (point 5), judged from one run's rows: each printed as met,
// or missed and by how much, with the figure. Pure, so bench/run.ts gives it a run's
// rows and the unit tests fixed ones.

import { FEATURE_PLAIN, featureFigures } from './features.js';

/** What the targets read of a row of the run's table. */
export interface BenchRow {
  readonly scenario: string;
  readonly target: string;
  readonly rps: number;
  /** req/s against the bare proxy's for the same shape. */
  readonly ratio: number;
  readonly cpuUs: number | undefined;
  /** CPU per request against the bare proxy's for the same shape. */
  readonly cpuRatio: number | undefined;
  /** CPU per request in each round, in the order measured (the feature rows pair them by round). */
  readonly cpuUsByRound?: readonly number[];
}

export interface TargetLine {
  readonly target: string;
  readonly result: string;
  /** Undefined when not measured. */
  readonly met: boolean | undefined;
}

/**
 * How a figure reads: `times` 1.23×; `share` a fraction shown in percent (missed by
 * points); `added` what a feature adds, +1.2% (missed by points); `MB` bytes shown in MB.
 */
export type Measure = 'times' | 'share' | 'added' | 'MB';

export interface Goal {
  readonly label: string;
  readonly limit: number;
  /** `most`: ≤ limit; `least`: ≥ limit; `below`: < limit. */
  readonly at: 'most' | 'least' | 'below';
  readonly measure: Measure;
}

const MB = 2 ** 20;

function shown(v: number, m: Measure): string {
  switch (m) {
    case 'times':
      return `${v.toFixed(2)}×`;
    case 'share':
      return `${(v * 100).toFixed(0)}%`;
    case 'added':
      return `${v < 0 ? '−' : '+'}${Math.abs(v * 100).toFixed(1)}%`;
    case 'MB':
      return `${(v / MB).toFixed(0)} MB`;
  }
}

function distance(d: number, m: Measure): string {
  switch (m) {
    case 'times':
      return `${d.toFixed(2)}×`;
    case 'share':
      return `${(d * 100).toFixed(0)} points`;
    case 'added':
      return `${(d * 100).toFixed(1)} points`;
    case 'MB':
      return `${Math.ceil(d / MB)} MB`;
  }
}

/** What a feature adds, as printed: +1.2%, −0.4%. */
export function shownAdded(v: number): string {
  return shown(v, 'added');
}

/** A figure against its goal: `met: 1.12×` or `missed by 0.52×: 1.82×`, with `detail` after it; not measured when undefined. */
export function judge(goal: Goal, value: number | undefined, detail = ''): TargetLine {
  const tail = detail === '' ? '' : ` (${detail})`;
  if (value === undefined || !Number.isFinite(value))
    return { target: goal.label, result: `not measured in this run${tail}`, met: undefined };
  const met = goal.at === 'most' ? value <= goal.limit : goal.at === 'least' ? value >= goal.limit : value < goal.limit;
  const figure = shown(value, goal.measure);
  return {
    target: goal.label,
    result: met ? `met: ${figure}${tail}` : `missed by ${distance(Math.abs(value - goal.limit), goal.measure)}: ${figure}${tail}`,
    met,
  };
}

/** The row of the gateway the targets are about (one key on the embedded default: the SQLite record, the memory hot state). */
const NR = 'noderouter, 1 key';

/** Issue #30's targets from a run's rows and the RSS of the 1 000 000-key gateway under load (0: not measured). */
export function issue30Targets(rows: readonly BenchRow[], rss1mBytes: number): TargetLine[] {
  const row = (scenario: string, target = NR): BenchRow | undefined => rows.find((r) => r.scenario === scenario && r.target === target);
  const single = row('single');
  const bare = row('single', 'bare proxy');
  const direct = row('single', 'upstream direct');
  const hit = row('cache hit');
  const agree = row('agreement 2 of 3');
  const balance = row('getBalance');
  const out: TargetLine[] = [
    judge(
      { label: 'single call: CPU per request ≤ 1.3× the bare proxy’s', limit: 1.3, at: 'most', measure: 'times' },
      single?.cpuRatio,
      single?.cpuUs === undefined || bare?.cpuUs === undefined ? '' : `${single.cpuUs.toFixed(0)} against ${bare.cpuUs.toFixed(0)} µs`,
    ),
    judge(
      { label: 'single call (stretch): CPU per request ≤ 1.15× the bare proxy’s', limit: 1.15, at: 'most', measure: 'times' },
      single?.cpuRatio,
    ),
    judge(
      { label: 'single call: req/s ≥ 80% of the bare proxy’s', limit: 0.8, at: 'least', measure: 'share' },
      bare === undefined ? undefined : single?.ratio,
      single === undefined || bare === undefined ? '' : `${single.rps} against ${bare.rps} req/s`,
    ),
    judge(
      { label: 'cache hit: req/s ≥ 80% of upstream direct’s', limit: 0.8, at: 'least', measure: 'share' },
      hit === undefined || direct === undefined ? undefined : hit.rps / direct.rps,
      hit === undefined || direct === undefined ? '' : `${hit.rps} against ${direct.rps} req/s`,
    ),
  ];
  for (const n of [10, 100])
    out.push(
      judge(
        { label: `batch of ${n}: CPU per request ≤ 1.5× the bare proxy relaying it`, limit: 1.5, at: 'most', measure: 'times' },
        row(`batch of ${n}`)?.cpuRatio,
      ),
    );
  out.push(
    judge(
      { label: 'WebSocket message: CPU per message ≤ 1.3× the bare WebSocket relay’s', limit: 1.3, at: 'most', measure: 'times' },
      row('WebSocket message')?.cpuRatio,
    ),
    judge(
      { label: 'agreement 2 of 3: CPU per call ≤ 2× a single eth_getBalance’s', limit: 2, at: 'most', measure: 'times' },
      agree?.cpuUs === undefined || balance?.cpuUs === undefined ? undefined : agree.cpuUs / balance.cpuUs,
      agree?.cpuUs === undefined || balance?.cpuUs === undefined ? '' : `${agree.cpuUs.toFixed(0)} against ${balance.cpuUs.toFixed(0)} µs`,
    ),
  );
  const figures = featureFigures(rows).filter((f) => f.scenario !== FEATURE_PLAIN);
  const features = figures.filter((f) => !f.control);
  for (const f of features)
    out.push(
      judge(
        {
          label: `${f.feature}: adds ≤ 3% to the single call’s CPU per request (against every feature off)`,
          limit: 0.03,
          at: 'most',
          measure: 'added',
        },
        f.vsPlain === undefined ? undefined : f.vsPlain - 1,
        f.cpuUs === undefined ? '' : `${f.cpuUs.toFixed(0)} µs`,
      ),
    );
  // Not a target: what a row on another process shows with no feature on, to read those rows by.
  for (const f of figures.filter((x) => x.control))
    out.push({
      target: '(for reference, not a target) the plain endpoint on a second process, no feature on',
      result:
        f.vsPlain === undefined
          ? 'not measured in this run'
          : `${shownAdded(f.vsPlain - 1)}: the noise of a row on another process in this run`,
      met: undefined,
    });
  if (features.length === 0)
    out.push({
      target: 'each optional feature adds ≤ 3% to the single call (the feature rows)',
      result: 'not measured in this run',
      met: undefined,
    });
  out.push(
    judge(
      { label: 'RSS under load with 1 000 000 keys in Redis < 200 MB', limit: 200 * MB, at: 'below', measure: 'MB' },
      rss1mBytes > 0 ? rss1mBytes : undefined,
    ),
  );
  return out;
}

/** The rows of issue #31's point 5: the single call on each record, by target. */
export const RECORD_ROWS: ReadonlyArray<{ readonly label: string; readonly target: string }> = [
  { label: 'SQLite record (the default), 1 key', target: 'noderouter, 1 key' },
  { label: 'PostgreSQL record, 1 key', target: 'noderouter, 1 key (PostgreSQL record)' },
  { label: 'PostgreSQL record, 1 000 000 keys', target: 'noderouter, 1 000 000 keys (PostgreSQL record)' },
];

/**
 * Issue #31's point 5: each record's single call within 5% of the file store's CPU per
 * request, the file store being a build from before the record measured in the same run
 * (`fileStore`: its row's target; undefined, with `why`, when the run had none). The
 * ratio is of the rounds' means; each round's own ratio follows, to read the noise by.
 */
export function issue31Targets(rows: readonly BenchRow[], fileStore: string | undefined, why = ''): TargetLine[] {
  const single = (target: string): BenchRow | undefined => rows.find((r) => r.scenario === 'single' && r.target === target);
  const file = fileStore === undefined ? undefined : single(fileStore);
  return RECORD_ROWS.map(({ label, target }) => {
    const goal: Goal = {
      label: `${label}: single call’s CPU per request ≤ 1.05× the file store’s`,
      limit: 1.05,
      at: 'most',
      measure: 'times',
    };
    const r = single(target);
    if (file?.cpuUs === undefined)
      return { target: goal.label, result: `not measured in this run (${why === '' ? 'no file-store build in it' : why})`, met: undefined };
    if (r?.cpuUs === undefined) return judge(goal, undefined);
    const now = r.cpuUsByRound ?? [];
    const then = file.cpuUsByRound ?? [];
    const ratios = now.length === then.length ? now.map((v, i) => v / (then[i] as number)) : [];
    const sorted = [...ratios].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    const median = sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
    const rounds =
      ratios.length === 0 ? '' : `; by round ${ratios.map((x) => `${x.toFixed(2)}×`).join(', ')} (median ${median.toFixed(2)}×)`;
    return judge(goal, r.cpuUs / file.cpuUs, `${r.cpuUs.toFixed(0)} against ${file.cpuUs.toFixed(0)} µs${rounds}`);
  });
}
