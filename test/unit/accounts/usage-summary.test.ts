// Usage rows summed for the dashboard: the UTC window (30 days, and a month that may
// start before it), totals for today / this month / 30 days, and the chart series.

import { expect } from 'chai';
import { series, totals, usageWindow } from '../../../src/accounts/usage-summary.js';
import type { DayUsage } from '../../../src/quota/usage-report.js';

/** A day's row whose calls cost 2 units each. */
const row = (day: string, chain: string, calls: number, limited = 0, errors = 0, invalid = 0): DayUsage => ({
  day,
  chain,
  calls,
  units: 2 * calls,
  errors,
  limited,
  invalid,
});

describe('usage summary', () => {
  it('spans the last 30 UTC days, reading from the 1st when the month started earlier', () => {
    const w = usageWindow(Date.UTC(2026, 2, 31, 23, 59));
    expect(w.today).to.equal('2026-03-31');
    expect(w.month).to.equal('2026-03');
    expect(w.days).to.have.length(30);
    expect([w.days[0], w.days.at(-1)]).to.deep.equal(['2026-03-02', '2026-03-31']);
    expect(w.since).to.equal('2026-03-01');
    const early = usageWindow(Date.UTC(2026, 2, 5, 0, 0, 1));
    expect([early.first, early.since]).to.deep.equal(['2026-02-04', '2026-02-04']);
  });

  it('adds up today, this month and the 30 days, refusals and errors included', () => {
    const w = usageWindow(Date.UTC(2026, 2, 31, 12));
    const rows = [
      row('2026-03-01', 'l1', 5), // this month, before the 30 days
      row('2026-03-02', 'l1', 7, 1),
      row('2026-03-31', 'l1', 3, 2, 1, 1),
      row('2026-03-31', 'hub-rest', 4),
      row('2026-02-28', 'l1', 100), // neither
    ];
    expect(totals(rows, w)).to.deep.equal({
      today: { calls: 7, units: 14, errors: 1, limited: 2, invalid: 1 },
      month: { calls: 19, units: 38, errors: 1, limited: 3, invalid: 1 },
      last30: { calls: 14, units: 28, errors: 1, limited: 3, invalid: 1 },
    });
  });

  it('gives one number per day per chain (chains by name), and refusals per day', () => {
    const w = usageWindow(Date.UTC(2026, 2, 31, 12));
    const s = series(
      [
        row('2026-03-31', 'l1', 3, 2),
        row('2026-03-31', 'hub-rest', 4),
        row('2026-03-30', 'l1', 1),
        row('2026-03-01', 'l1', 9),
        row('2026-03-30', 'zone', 0, 5),
      ],
      w,
    );
    expect(s.days).to.equal(w.days);
    expect(s.chains.map((c) => c.chain)).to.deep.equal(['hub-rest', 'l1']);
    expect(s.chains[1]?.calls.slice(-2)).to.deep.equal([1, 3]);
    expect(s.chains[1]?.calls.reduce((a, b) => a + b, 0)).to.equal(4);
    expect(s.limited.slice(-2)).to.deep.equal([5, 2]);
  });
});
