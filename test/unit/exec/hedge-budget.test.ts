// The hedge budget (src/exec/attempts/hedge.ts) on a clock the test moves: a share of the
// chain's hedgeable calls on top of a floor in time, saved up to a bound, with no cap
// per second; and how config reads it (src/config/schema.ts), `perSecond` included.

import { expect } from 'chai';
import { parseConfig } from '../../../src/config/load.js';
import type { HedgeConfig } from '../../../src/config/types.js';
import { Hedger, SAVED_MIN } from '../../../src/exec/attempts/hedge.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { configProblems } from '../../support/config-problems.js';

const NO_EVENTS = { sent: () => undefined, won: () => undefined };

function budget(over: Partial<HedgeConfig>, clock: { t: number }): Hedger {
  return new Hedger({ minDelayMs: 100, maxDelayMs: 1000, budgetPercent: 10, minPerSecond: 50, ...over }, NO_EVENTS, () => clock.t);
}

/** Hedges the budget gives now, taken until it refuses. */
function drain(h: Hedger): number {
  let n = 0;
  while (h.take()) n++;
  return n;
}

describe('the hedge budget (src/exec/attempts/hedge.ts)', () => {
  it('starts with its savings: a second of the floor, at least SAVED_MIN', () => {
    const clock = { t: 0 };
    expect(drain(budget({ budgetPercent: 10, minPerSecond: 0 }, clock))).to.equal(SAVED_MIN);
    expect(drain(budget({ budgetPercent: 10, minPerSecond: 3 }, clock))).to.equal(SAVED_MIN);
    expect(drain(budget({ budgetPercent: 10, minPerSecond: 80 }, clock))).to.equal(80);
  });

  it('gives budgetPercent of the calls, exactly, however fast they come', () => {
    const clock = { t: 0 };
    const h = budget({ budgetPercent: 10, minPerSecond: 0 }, clock);
    drain(h);
    for (let i = 0; i < 95; i++) h.called();
    expect(drain(h)).to.equal(9);
    for (let i = 0; i < 5; i++) h.called();
    expect(drain(h)).to.equal(1);
    // Ten thousand calls in the same millisecond, a hedge taken whenever one is due:
    // a thousand hedges, twenty times the old cap of 50 a second.
    let hedges = 0;
    for (let i = 0; i < 10_000; i++) {
      h.called();
      if (h.take()) hedges++;
    }
    expect(hedges).to.equal(1_000);
  });

  it('keeps a burst’s share for its hedges, and saves about a second’s worth, no more', () => {
    const clock = { t: 0 };
    const h = budget({ budgetPercent: 25, minPerSecond: 0 }, clock);
    drain(h);
    // Four hundred calls at once, their hedges due after the delay: all hundred are there.
    for (let i = 0; i < 400; i++) h.called();
    clock.t += 100;
    expect(drain(h)).to.equal(100);
    for (let i = 0; i < 400; i++) h.called();
    // The next second still knows of the burst; the one after does not.
    clock.t += 1_000;
    expect(drain(h)).to.equal(100);
    for (let i = 0; i < 400; i++) h.called();
    clock.t += 2_500;
    expect(drain(h)).to.equal(SAVED_MIN);
  });

  it('refills the floor with time, up to a second of it, whatever the calls', () => {
    const clock = { t: 1_000_000 };
    const h = budget({ budgetPercent: 0, minPerSecond: 20 }, clock);
    expect(drain(h)).to.equal(20);
    for (let i = 0; i < 1_000; i++) h.called();
    expect(drain(h)).to.equal(0);
    clock.t += 250;
    expect(drain(h)).to.equal(5);
    clock.t += 60_000;
    expect(drain(h)).to.equal(20);
  });

  it('adds the share of calls to the floor', () => {
    const clock = { t: 0 };
    const h = budget({ budgetPercent: 20, minPerSecond: 10 }, clock);
    drain(h);
    for (let i = 0; i < 20; i++) h.called();
    clock.t += 300;
    expect(drain(h)).to.equal(4 + 3);
  });

  it('is off, with no delay at all, when both are 0', () => {
    const clock = { t: 0 };
    const node = { slowMs: 30 } as unknown as PoolNode;
    expect(budget({ budgetPercent: 0, minPerSecond: 0 }, clock).delayFor(node)).to.equal(undefined);
    expect(budget({ budgetPercent: 0, minPerSecond: 1 }, clock).delayFor(node)).to.equal(100);
    expect(budget({ budgetPercent: 1, minPerSecond: 0 }, clock).delayFor(node)).to.equal(100);
  });
});

describe('hedge and ejection settings (src/config/schema.ts)', () => {
  const file = (hedge: string): string =>
    `tiers: { t: {} }\nchains:\n  c:\n    plugin: evm\n    route: { path: /c }\n${hedge}\n    nodes:\n      - { name: a, url: "http://127.0.0.1:1", role: full }\n`;
  const read = async (hedge: string): Promise<unknown> => (await parseConfig(file(hedge), '/t.yaml', {})).chains.c;
  const problems = (hedge: string): Promise<string[]> => configProblems(file(hedge));

  it('defaults: 10% of the calls on top of 50 a second; three timeouts in a row eject for 5 s × n, up to 60 s, half the pool at most', async () => {
    expect(await read('')).to.deep.include({
      hedge: { minDelayMs: 100, maxDelayMs: 1000, budgetPercent: 10, minPerSecond: 50 },
      ejection: { consecutive: 3, windowMs: 10_000, baseMs: 5_000, maxMs: 60_000, maxPercent: 50 },
    });
    expect(await read('    hedge: { budgetPercent: 25, minPerSecond: 0 }')).to.have.deep.property('hedge', {
      minDelayMs: 100,
      maxDelayMs: 1000,
      budgetPercent: 25,
      minPerSecond: 0,
    });
  });

  it('reads perSecond, the old cap, as the floor it now is; perSecond: 0 still turns hedging off', async () => {
    expect(await read('    hedge: { perSecond: 200 }')).to.have.deep.property('hedge', {
      minDelayMs: 100,
      maxDelayMs: 1000,
      budgetPercent: 10,
      minPerSecond: 200,
    });
    expect(await read('    hedge: { perSecond: 0 }')).to.have.deep.property('hedge', {
      minDelayMs: 100,
      maxDelayMs: 1000,
      budgetPercent: 0,
      minPerSecond: 0,
    });
    expect(await read('    hedge: { perSecond: 0, budgetPercent: 5 }')).to.have.nested.property('hedge.budgetPercent', 5);
  });

  it('refuses perSecond beside minPerSecond, and bounds that cannot hold, naming the fix', async () => {
    expect(await problems('    hedge: { perSecond: 10, minPerSecond: 20 }')).to.deep.equal([
      'chains.c.hedge.perSecond is the old name of hedge.minPerSecond (now a floor, with hedge.budgetPercent of the calls on top): remove perSecond',
    ]);
    expect(await problems('    hedge: { budgetPercent: 150 }')).to.deep.equal([
      'chains.c.hedge.budgetPercent must be an integer from 0 to 100',
    ]);
    expect(await problems('    ejection: { baseMs: 10000, maxMs: 5000 }')).to.deep.equal([
      'chains.c.ejection.maxMs must be at least ejection.baseMs (10000)',
    ]);
    expect(await problems('    ejection: { maxPercent: 101 }')).to.deep.equal([
      'chains.c.ejection.maxPercent must be an integer from 0 to 100',
    ]);
  });
});
