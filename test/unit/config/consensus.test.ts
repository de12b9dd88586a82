// chains.<name>.consensus: defaults, and problems named with their path.

import { expect } from 'chai';
import { parseConfig } from '../../../src/config/load.js';
import { configProblems } from '../../support/config-problems.js';

const chain = (consensus: string): string => `
tiers:
  free: { rate: 5 }
chains:
  l1:
    plugin: evm
    route: { path: /l1 }
${consensus}
    nodes:
      - { name: a, url: "http://127.0.0.1:1", role: full }
      - { name: b, url: "http://127.0.0.1:2", role: full }
      - { name: c, url: "http://127.0.0.1:3", role: archive }
`;

describe('config: consensus', () => {
  it('is off without a consensus block, and fills defaults with one', async () => {
    expect((await parseConfig(chain(''), '/etc/nr.yaml', {})).chains.l1?.consensus).to.equal(undefined);
    const c = (await parseConfig(chain('    consensus: {}'), '/etc/nr.yaml', {})).chains.l1?.consensus;
    expect(c).to.deep.equal({
      methods: undefined,
      ask: 3,
      agree: 2,
      onDisagree: 'answer-majority',
      maxDisputeRate: 0.2,
      minCompared: 5,
      windowMs: 60_000,
      coolDownMs: 60_000,
    });
    const listed = await parseConfig(
      chain('    consensus: { methods: ["eth_getBalance"], ask: 2, agree: 2, onDisagree: error }'),
      '/x.yaml',
      {},
    );
    expect(listed.chains.l1?.consensus).to.include({ ask: 2, agree: 2, onDisagree: 'error' });
    expect(listed.chains.l1?.consensus?.methods).to.deep.equal(['eth_getBalance']);
  });

  it('names the path and the fix', async () => {
    const p = await configProblems(chain('    consensus: { ask: 4, agree: 5, onDisagree: vote, maxDisputeRate: 2, nodes: 3 }'));
    expect(p.some((x) => x.includes('chains.l1.consensus.ask') && x.includes('list more nodes or ask fewer'))).to.equal(true);
    expect(p.some((x) => x.includes('chains.l1.consensus.agree') && x.includes('at most consensus.ask'))).to.equal(true);
    expect(p.some((x) => x.includes('chains.l1.consensus.onDisagree'))).to.equal(true);
    expect(p.some((x) => x.includes('chains.l1.consensus.maxDisputeRate'))).to.equal(true);
    expect(p.some((x) => x.includes('chains.l1.consensus') && x.includes('nodes'))).to.equal(true);
  });
});
