// Permission patterns: `*` matches any run, the rest is literal; matching is linear,
// so a pattern that would make a backtracking regex take forever is answered at once.

import { expect } from 'chai';
import fc from 'fast-check';
import { matchesAny, matchesPattern } from '../../../src/auth/patterns.js';

/** The obvious definition, for small inputs only: a regex (backtracking) reference. */
function reference(pattern: string, value: string): boolean {
  const body = pattern
    .split('*')
    .map((p) => p.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${body}$`).test(value);
}

describe('permission patterns', () => {
  it('matches literals, prefixes, suffixes and middles', () => {
    expect(matchesPattern('*', '')).to.equal(true);
    expect(matchesPattern('eth_call', 'eth_call')).to.equal(true);
    expect(matchesPattern('eth_call', 'eth_calls')).to.equal(false);
    expect(matchesPattern('eth_get*', 'eth_getLogs')).to.equal(true);
    expect(matchesPattern('eth_get*', 'eth_call')).to.equal(false);
    expect(matchesPattern('*Logs', 'eth_getLogs')).to.equal(true);
    expect(matchesPattern('hub-*-rest', 'hub-a-rest')).to.equal(true);
    expect(matchesPattern('hub-*-rest', 'hub-rest')).to.equal(false);
    expect(matchesPattern('a*a', 'a')).to.equal(false);
    expect(matchesPattern('a*a', 'aa')).to.equal(true);
    expect(matchesPattern('a**b', 'ab')).to.equal(true);
    expect(matchesPattern('*.*', 'a.b')).to.equal(true);
    expect(matchesPattern('a.c', 'abc')).to.equal(false);
    expect(matchesAny(['x', 'l*'], 'l1')).to.equal(true);
    expect(matchesAny([], 'l1')).to.equal(false);
  });

  it('answers a pathological pattern at once: the answer, from linear matching', () => {
    // `^.*a.*a….*a.*b$` against a long run of "a" backtracks for ages in a regex engine.
    const pattern = `${'*a'.repeat(30)}*b`;
    const value = 'a'.repeat(50_000);
    expect(matchesPattern(pattern, value)).to.equal(false);
    expect(matchesPattern(pattern, `${value}b`)).to.equal(true);
    expect(matchesPattern(`${'*a'.repeat(30)}*`, value)).to.equal(true);
  });

  it('agrees with the regex definition on random patterns and values, as does the dashboard page’s copy', async () => {
    // The page's module has no types; it is plain browser JavaScript with no side effects on import.
    const pagePath: string = '../../../src/admin/dashboard/assets/common.js';
    const page = (await import(pagePath)) as { matchesPattern(p: string, v: string): boolean };
    expect(page.matchesPattern(`${'*a'.repeat(30)}*b`, 'a'.repeat(50_000))).to.equal(false);
    const alphabet = fc.constantFrom('a', 'b', '*', '.');
    fc.assert(
      fc.property(
        fc.string({ unit: alphabet, maxLength: 8 }),
        fc.string({ unit: fc.constantFrom('a', 'b', '.'), maxLength: 12 }),
        (p, v) => {
          const expected = reference(p, v);
          expect(matchesPattern(p, v)).to.equal(expected);
          expect(page.matchesPattern(p, v)).to.equal(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
