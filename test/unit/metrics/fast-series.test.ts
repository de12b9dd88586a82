// The request-path counters and histograms write the same exposition prom-client's
// own would, through prom-client's registry.

import { expect } from 'chai';
import { Counter, Histogram, Registry } from 'prom-client';
import { FastCounter, FastHistogram } from '../../../src/ops/metrics/fast-series.js';

describe('fast series', () => {
  it('expose exactly what prom-client’s Counter and Histogram expose for the same observations', async () => {
    const fast = new Registry();
    const slow = new Registry();
    const fc = new FastCounter('t_total', 'help', ['chain', 'outcome'], fast);
    const sc = new Counter({ name: 't_total', help: 'help', labelNames: ['chain', 'outcome'], registers: [slow] });
    const fh = new FastHistogram('t_seconds', 'help', ['chain'], [0.01, 0.1, 1], fast);
    const sh = new Histogram({ name: 't_seconds', help: 'help', labelNames: ['chain'], buckets: [0.01, 0.1, 1], registers: [slow] });
    const seen: Array<[string, string, number]> = [
      ['l1', 'ok', 0.005],
      ['l1', 'ok', 0.01],
      ['l1', 'rate_limited', 0.5],
      ['hub "x"\\', 'ok', 7],
    ];
    for (const [chain, outcome, v] of seen) {
      fc.add(1, chain, outcome);
      sc.inc({ chain, outcome });
      fh.record(v, chain);
      sh.observe({ chain }, v);
    }
    fc.inc({ chain: 'l1', outcome: 'ok' }, 2);
    sc.inc({ chain: 'l1', outcome: 'ok' }, 2);
    expect(await fast.metrics()).to.equal(await slow.metrics());
    fc.reset();
    fh.reset();
    expect(await fast.metrics()).to.equal(
      '# HELP t_total help\n# TYPE t_total counter\n\n# HELP t_seconds help\n# TYPE t_seconds histogram\n',
    );
  });
});
