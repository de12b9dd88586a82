import { expect } from 'chai';
import { parseConfig } from '../../../src/config/load.js';
import { configProblems } from '../../support/config-problems.js';

const BASE = `
tiers:
  free: { rate: 5 }
chains:
  hub:
    plugin: evm
    route: { path: /hub }
    nodes:
      - { name: a, url: "http://127.0.0.1:1", role: full }
`;

const withStore = (store: string, base = BASE): string => `store: ${store}\n${base}`;

describe('config: store (the record and the hot state)', () => {
  it('opens a SQLite record beside the config with the memory hot state by default', async () => {
    const c = await parseConfig(BASE, '/etc/nr/gateway.yaml', {});
    expect(c.store).to.deep.equal({ record: { kind: 'sqlite', path: '/etc/nr/data/noderouter.db' }, hot: { kind: 'memory' } });
  });

  it('reads a record path relative to the config file, and the Redis hot state with every setting', async () => {
    const c = await parseConfig(
      withStore(
        '{ record: { kind: sqlite, path: ../db/nr.db }, hot: { kind: redis, url: "redis://127.0.0.1:6379", prefix: "a:", timeoutMs: 900, onFailure: fail-closed, instances: 3, leaseMs: 0, leaseTokens: 0 } }',
      ),
      '/etc/nr/gateway.yaml',
      {},
    );
    expect(c.store).to.deep.equal({
      record: { kind: 'sqlite', path: '/etc/db/nr.db' },
      hot: {
        kind: 'redis',
        url: 'redis://127.0.0.1:6379',
        prefix: 'a:',
        timeoutMs: 900,
        onFailure: 'fail-closed',
        instances: 3,
        leaseMs: 0,
        leaseTokens: 0,
      },
    });
  });

  it('refuses the file store of earlier versions, naming the migrate command with its file and the new settings', async () => {
    const problems = await configProblems(withStore('{ kind: file, path: ../data/keys.json }'));
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(/^store\.kind is "file", the JSON file store of earlier versions/);
    expect(problems[0]).to.contain('noderouter store migrate --from /data/keys.json');
    expect(problems[0]).to.contain('store: { record: { kind: sqlite, path: ../data/noderouter.db }, hot: { kind: memory } }');
    // A file store written without kind (it was the default) is the same.
    expect((await configProblems(withStore('{ path: keys.json }')))[0]).to.contain('store migrate --from /etc/keys.json');
  });

  it('refuses the Redis store of earlier versions, naming how to move (and never printing a password)', async () => {
    const problems = await configProblems(withStore('{ kind: redis, url: "redis://10.0.0.5:6379", prefix: "nr:", instances: 3 }'));
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(/^store\.kind is "redis", the single store of earlier versions/);
    expect(problems[0]).to.contain('noderouter store migrate --from redis://10.0.0.5:6379 --prefix nr:');
    expect(problems[0]).to.contain('hot: { kind: redis, url: redis://10.0.0.5:6379, prefix: "nr:" }');
    const secret = await configProblems(withStore('{ kind: redis, url: "redis://:hunter2@10.0.0.5:6379" }'));
    expect(secret.join('\n')).to.not.contain('hunter2');
  });

  it('refuses several instances on the memory hot state, and Redis settings it would not read', async () => {
    expect(await configProblems(withStore('{ hot: { instances: 2 } }'))).to.deep.equal([
      'store.hot.instances is 2, but the memory hot state belongs to one instance: instances that share limits need hot: { kind: redis, url: … } (or leave instances out)',
    ]);
    expect(await configProblems(withStore('{ hot: { kind: memory, url: "redis://127.0.0.1:6379", leaseMs: 50 } }'))).to.deep.equal([
      'store.hot.url is a setting of the Redis hot state, which kind: memory does not read: set kind: redis, or leave it out',
      'store.hot.leaseMs is a setting of the Redis hot state, which kind: memory does not read: set kind: redis, or leave it out',
    ]);
    expect(await configProblems(withStore('{ hot: { instances: 1 } }'))).to.deep.equal([]);
  });

  it('refuses the Redis hot state without its URL, and a kind of record it does not know', async () => {
    expect(await configProblems(withStore('{ hot: { kind: redis } }'))).to.deep.equal(['store.hot.url is required (a string)']);
    expect(await configProblems(withStore('{ record: { kind: mysql } }'))).to.deep.equal(['store.record.kind must be "sqlite"']);
  });

  it('refuses a chain cached in Redis without the Redis hot state, naming the fix', async () => {
    const cached = BASE.replace('route: { path: /hub }', 'route: { path: /hub }\n    cache: redis');
    expect(await configProblems(cached)).to.deep.equal([
      'chains.hub.cache is "redis", which needs store.hot.kind: redis (the cache shares its connection): set store.hot to { kind: redis, url: … }, or use cache: memory',
    ]);
    expect(await configProblems(withStore('{ hot: { kind: redis, url: "redis://127.0.0.1:6379" } }', cached))).to.deep.equal([]);
  });
});
