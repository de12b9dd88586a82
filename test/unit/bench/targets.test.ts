// The bench's verdicts on issue #30's targets from fixed rows: each met, or missed by how
// much in the target's own measure, or not measured; and the feature rows read against
// the plain row, which BENCH_ONLY keeps whenever a feature row is kept.

import { expect } from 'chai';
import { FEATURE_CONTROL, featureFigures, featureKept, featureSetup, FEATURE_PLAIN } from '../../../bench/features.js';
import { issue30Targets, issue31Targets, judge, RECORD_ROWS, type BenchRow } from '../../../bench/targets.js';

const row = (scenario: string, target: string, rps: number, ratio: number, cpuUs?: number, cpuRatio?: number): BenchRow => ({
  scenario,
  target,
  rps,
  ratio,
  cpuUs,
  cpuRatio,
});

describe('bench: targets', () => {
  it('says met, or missed by the distance in the measure of the target', () => {
    const times = { label: 'x', limit: 1.3, at: 'most', measure: 'times' } as const;
    expect(judge(times, 1.12)).to.deep.equal({ target: 'x', result: 'met: 1.12×', met: true });
    expect(judge(times, 1.3).met).to.equal(true);
    expect(judge(times, 1.82, '496 against 175 µs').result).to.equal('missed by 0.52×: 1.82× (496 against 175 µs)');
    const share = { label: 'y', limit: 0.8, at: 'least', measure: 'share' } as const;
    expect(judge(share, 0.42).result).to.equal('missed by 38 points: 42%');
    expect(judge(share, 1.25).result).to.equal('met: 125%');
    const added = { label: 'z', limit: 0.03, at: 'most', measure: 'added' } as const;
    expect(judge(added, 0.012).result).to.equal('met: +1.2%');
    expect(judge(added, -0.004).result).to.equal('met: −0.4%');
    expect(judge(added, 0.051).result).to.equal('missed by 2.1 points: +5.1%');
    const mb = { label: 'w', limit: 200 * 2 ** 20, at: 'below', measure: 'MB' } as const;
    expect(judge(mb, 178 * 2 ** 20).result).to.equal('met: 178 MB');
    expect(judge(mb, 200 * 2 ** 20).met).to.equal(false);
    expect(judge(mb, 212.4 * 2 ** 20).result).to.equal('missed by 13 MB: 212 MB');
  });

  it('says "not measured" when the figure is missing, never met or missed', () => {
    const t = judge({ label: 'x', limit: 1.3, at: 'most', measure: 'times' }, undefined);
    expect(t).to.deep.equal({ target: 'x', result: 'not measured in this run', met: undefined });
    expect(judge({ label: 'x', limit: 1.3, at: 'most', measure: 'times' }, Number.NaN).met).to.equal(undefined);
  });

  it('judges every target of issue #30 from a run’s rows', () => {
    const rows = [
      row('single', 'upstream direct', 11281, 2.98, 83, 0.47),
      row('single', 'bare proxy', 3780, 1, 175, 1),
      row('single', 'noderouter, 1 key', 3100, 0.82, 210, 1.2),
      row('batch of 10', 'noderouter, 1 key', 1432, 0.47, 526, 2.63),
      row('batch of 100', 'noderouter, 1 key', 1900, 0.9, 300, 1.27),
      row('getBalance', 'noderouter, 1 key', 2172, 0.57, 354, 2.02),
      row('agreement 2 of 3', 'noderouter, 1 key', 870, 0.23, 806, 4.61),
      row('cache hit', 'noderouter, 1 key', 9500, 2.5, 80, 0.46),
      row('WebSocket message', 'noderouter, 1 key', 2434, 0.64, 331, 2.22),
      row(FEATURE_PLAIN, 'noderouter, feature endpoints', 3000, 0.8, 200, 1.14),
      row('feature: hedging on', 'noderouter, feature endpoints', 2950, 0.78, 208, 1.19),
      row('feature: verify observe', 'noderouter, feature endpoints', 3010, 0.8, 201, 1.15),
      row(FEATURE_CONTROL, 'noderouter, feature endpoints, another process', 2900, 0.78, 196, 1.12),
    ];
    const byTarget = new Map(issue30Targets(rows, 178 * 2 ** 20).map((t) => [t.target, t.result]));
    expect(byTarget.get('single call: CPU per request ≤ 1.3× the bare proxy’s')).to.equal('met: 1.20× (210 against 175 µs)');
    expect(byTarget.get('single call (stretch): CPU per request ≤ 1.15× the bare proxy’s')).to.equal('missed by 0.05×: 1.20×');
    expect(byTarget.get('single call: req/s ≥ 80% of the bare proxy’s')).to.equal('met: 82% (3100 against 3780 req/s)');
    expect(byTarget.get('cache hit: req/s ≥ 80% of upstream direct’s')).to.equal('met: 84% (9500 against 11281 req/s)');
    expect(byTarget.get('batch of 10: CPU per request ≤ 1.5× the bare proxy relaying it')).to.equal('missed by 1.13×: 2.63×');
    expect(byTarget.get('batch of 100: CPU per request ≤ 1.5× the bare proxy relaying it')).to.equal('met: 1.27×');
    expect(byTarget.get('WebSocket message: CPU per message ≤ 1.3× the bare WebSocket relay’s')).to.equal('missed by 0.92×: 2.22×');
    expect(byTarget.get('agreement 2 of 3: CPU per call ≤ 2× a single eth_getBalance’s')).to.equal(
      'missed by 0.28×: 2.28× (806 against 354 µs)',
    );
    expect(byTarget.get('hedging on: adds ≤ 3% to the single call’s CPU per request (against every feature off)')).to.equal(
      'missed by 1.0 points: +4.0% (208 µs)',
    );
    expect(byTarget.get('verify observe: adds ≤ 3% to the single call’s CPU per request (against every feature off)')).to.equal(
      'met: +0.5% (201 µs)',
    );
    expect(byTarget.get('RSS under load with 1 000 000 keys in Redis < 200 MB')).to.equal('met: 178 MB');
    expect([...byTarget.keys()].some((k) => k.startsWith('plain') || k.startsWith('none'))).to.equal(false);
    expect(byTarget.get('(for reference, not a target) the plain endpoint on a second process, no feature on')).to.equal(
      '−2.0%: the noise of a row on another process in this run',
    );
  });

  it('says which targets a partial run did not measure', () => {
    const targets = issue30Targets([row('single', 'bare proxy', 3780, 1, 175, 1)], 0);
    expect(targets.every((t) => t.met === undefined)).to.equal(true);
    expect(targets.map((t) => t.target)).to.include('each optional feature adds ≤ 3% to the single call (the feature rows)');
  });
});

describe('bench: feature rows', () => {
  it('reads each feature row against the plain row of the same run, plain first', () => {
    const figures = featureFigures([
      row('single', 'noderouter, 1 key', 3100, 0.82, 210, 1.2),
      row('feature: tracing, sampling 0', 'noderouter, feature endpoints + tracing', 2900, 0.77, 206, 1.18),
      row(FEATURE_PLAIN, 'noderouter, feature endpoints', 3000, 0.8, 200, 1.14),
      row('feature: hedging on', 'noderouter, feature endpoints', 2950, 0.78, undefined, undefined),
    ]);
    expect(figures.map((f) => f.feature)).to.deep.equal(['plain', 'tracing, sampling 0', 'hedging on']);
    expect(figures[0]?.vsPlain).to.equal(1);
    expect(figures[1]?.vsPlain).to.be.closeTo(1.03, 1e-9);
    expect(figures[1]?.target).to.equal('noderouter, feature endpoints + tracing');
    expect(figures[2]?.vsPlain).to.equal(undefined);
  });

  it('pairs the feature and plain rows round by round (median of the ratios) when their rounds line up', () => {
    const plain = { ...row(FEATURE_PLAIN, 'noderouter, feature endpoints', 3000, 0.8, 200), cpuUsByRound: [100, 300] };
    const paired = { ...row('feature: hedging on', 'noderouter, feature endpoints', 3000, 0.8, 205), cpuUsByRound: [110, 300] };
    const unpaired = { ...row('feature: verify observe', 'noderouter, feature endpoints', 3000, 0.8, 205), cpuUsByRound: [205] };
    const [, a, b] = featureFigures([plain, paired, unpaired]);
    expect(a?.vsPlain).to.be.closeTo(1.05, 1e-9);
    expect(b?.vsPlain).to.be.closeTo(1.025, 1e-9);
  });

  it('BENCH_ONLY: a feature row by its name or by `features`, and the plain row with any of them', () => {
    const hedging = 'feature: hedging on';
    expect(featureKept(hedging, undefined)).to.equal(true);
    expect(featureKept(hedging, ['single', hedging])).to.equal(true);
    expect(featureKept(FEATURE_PLAIN, ['single', hedging])).to.equal(true);
    expect(featureKept(FEATURE_CONTROL, ['single', hedging])).to.equal(true);
    expect(featureKept('feature: verify observe', ['single', hedging])).to.equal(false);
    expect(featureKept('feature: verify observe', ['features'])).to.equal(true);
    expect(featureKept(FEATURE_PLAIN, ['single', 'cache hit'])).to.equal(false);
  });

  it('every row is on a gateway of the setup, and gateways differ from the plain one only in their feature', () => {
    const { gateways, rows } = featureSetup([4001, 4002, 4003], 4999);
    const labels = new Set(gateways.map((g) => g.label));
    expect(rows.every((r) => labels.has(r.gateway))).to.equal(true);
    expect(new Set(rows.map((r) => r.scenario)).size).to.equal(rows.length);
    const on = (scenario: string) => gateways.find((g) => g.label === rows.find((r) => r.scenario === scenario)?.gateway);
    const plain = on(FEATURE_PLAIN);
    const tracing = on('feature: tracing, sampling 0');
    const consensus = on('feature: consensus on another chain');
    const restricted = on('feature: restrictions on another key');
    const control = on(FEATURE_CONTROL);
    expect(control?.label).to.not.equal(plain?.label);
    expect({ ...control, label: '' }).to.deep.equal({ ...plain, label: '' });
    expect(on('feature: hedging on')).to.equal(plain);
    expect(tracing?.chains).to.equal(plain?.chains);
    expect(tracing?.top).to.include('sampleRatio: 0').and.include('127.0.0.1:4999');
    expect(consensus?.chains.startsWith(plain?.chains ?? '?')).to.equal(true);
    expect(consensus?.chains).to.include('consensus: { ask: 3, agree: 2 }');
    expect(restricted?.chains).to.equal(plain?.chains);
    expect(Object.keys(restricted?.keys ?? {})).to.deep.equal(['other', 'allowlisted']);
    expect(rows.find((r) => r.key === 'allowlisted')?.gateway).to.equal(restricted?.label);
  });

  it('judges issue #31’s record rows against the file store’s single call, round by round too', () => {
    const rounds = (scenario: string, target: string, cpuUsByRound: number[]): BenchRow => ({
      scenario,
      target,
      rps: 2000,
      ratio: 0.7,
      cpuUs: cpuUsByRound.reduce((a, b) => a + b, 0) / cpuUsByRound.length,
      cpuRatio: undefined,
      cpuUsByRound,
    });
    const file = 'noderouter, 1 key, before (92dd51c)';
    const rows = [
      rounds('single', file, [300, 340]),
      rounds('single', 'noderouter, 1 key', [310, 340]),
      rounds('single', 'noderouter, 1 key (PostgreSQL record)', [360, 374]),
      // Another scenario of the same target is not the single call.
      rounds('batch of 10', 'noderouter, 1 000 000 keys (PostgreSQL record)', [100, 100]),
    ];
    const lines = issue31Targets(rows, file);
    expect(lines.map((l) => l.target)).to.deep.equal(
      RECORD_ROWS.map((r) => `${r.label}: single call’s CPU per request ≤ 1.05× the file store’s`),
    );
    expect(lines.map((l) => [l.result, l.met])).to.deep.equal([
      ['met: 1.02× (325 against 320 µs; by round 1.03×, 1.00× (median 1.02×))', true],
      ['missed by 0.10×: 1.15× (367 against 320 µs; by round 1.20×, 1.10× (median 1.15×))', false],
      ['not measured in this run', undefined],
    ]);
    const without = issue31Targets(rows, undefined, 'set BENCH_BEFORE=92dd51c');
    expect(without.every((l) => l.met === undefined && l.result === 'not measured in this run (set BENCH_BEFORE=92dd51c)')).to.equal(true);
  });
});
