// The config of browser access: server.cors (origins, preflight
// max age), chains.<name>.cors (replacing the server's list);
// defaults, canonical origins, and every mistake named by its path.

import { expect } from 'chai';
import { parseConfig } from '../../../src/config/load.js';
import { configProblems } from '../../support/config-problems.js';

const BASE = `
tiers:
  free: { rate: 5 }
chains:
  l1:
    plugin: evm
    route: { path: /l1 }
    nodes:
      - { name: a, url: "http://127.0.0.1:1", role: full }
  l2:
    plugin: evm
    route: { path: /l2 }
    CORS
    nodes:
      - { name: a, url: "http://127.0.0.1:2", role: full }
`;

const config = (server: string, chainCors = ''): string =>
  `${server === '' ? '' : `server:\n${server}\n`}${BASE.replace('    CORS\n', chainCors === '' ? '' : `    cors: ${chainCors}\n`)}`;

describe('config: browser access', () => {
  it('allows every origin, a two-hour preflight and no trusted proxy by default', async () => {
    const c = await parseConfig(config(''), '/etc/nr.yaml', {});
    expect(c.server.cors).to.deep.equal({ origins: ['*'], maxAgeSeconds: 7200 });
    expect(c.chains.l1?.cors).to.deep.equal({ origins: ['*'] });
  });

  it('gives chains the server’s origins unless they list their own, in canonical form', async () => {
    const c = await parseConfig(
      config(
        '  cors: { origins: ["HTTPS://App.Example.com/", "https://*.example.org"], maxAgeSeconds: 600 }',
        '{ origins: ["http://localhost:5173", "*"] }',
      ),
      '/etc/nr.yaml',
      {},
    );
    expect(c.server.cors).to.deep.equal({ origins: ['https://app.example.com', 'https://*.example.org'], maxAgeSeconds: 600 });
    expect(c.chains.l1?.cors.origins).to.deep.equal(['https://app.example.com', 'https://*.example.org']);
    // "*" allows any origin: nothing beside it matters.
    expect(c.chains.l2?.cors.origins).to.deep.equal(['*']);
    const none = await parseConfig(config('  cors: { origins: [] }'), '/etc/nr.yaml', {});
    expect(none.chains.l2?.cors.origins).to.deep.equal([]);
  });

  it('names every mistake by its path', async () => {
    const p = await configProblems(
      config(
        '  cors: { origins: ["null", "app.example.com", { a: 1 }], maxAgeSeconds: -1, credentials: true }',
        '{ origins: "https://a.example.com", methods: [GET] }',
      ),
    );
    expect(p).to.include.members([
      'server.cors.credentials is not a known setting (known: origins, maxAgeSeconds)',
      'server.cors.origins[0] "null" cannot be allowed: every sandboxed page and local file sends it',
      'server.cors.origins[1] "app.example.com" is not an origin (like https://app.example.com, http://localhost:5173 or https://*.example.com)',
      'server.cors.origins[2] must be a string: ["*"] (any), or origins like ["https://app.example.com", "https://*.example.com"]',
      'server.cors.maxAgeSeconds must be an integer from 0 to 86400',
      'chains.l2.cors.methods is not a known setting (known: origins)',
      'chains.l2.cors.origins must be a list: ["*"] (any), or origins like ["https://app.example.com", "https://*.example.com"]',
    ]);
  });
});
