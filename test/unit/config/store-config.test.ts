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
        servers: { kind: 'url', url: 'redis://127.0.0.1:6379' },
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
    expect(await configProblems(withStore('{ hot: { kind: redis } }'))).to.deep.equal([
      'store.hot.url is required with kind: redis, or one of the other ways to find Redis: url: redis://host:6379, or sentinels: [host:26379, …] with name: <master>, or cluster: [host:6379, …]',
    ]);
    expect(await configProblems(withStore('{ record: { kind: mysql } }'))).to.deep.equal([
      'store.record.kind must be "sqlite" or "postgres"',
    ]);
  });

  it('reads Redis behind Sentinel and a Redis Cluster, passwords from the environment', async () => {
    const env = { REDIS_PASSWORD: 'hunter2', SENTINEL_PASSWORD: 's3cret' };
    const sentinel = await parseConfig(
      withStore(
        '{ hot: { kind: redis, sentinels: ["10.0.0.7:26379", "[::1]:26380"], name: mymaster, password: "${REDIS_PASSWORD}", sentinelPassword: "${SENTINEL_PASSWORD}" } }',
      ),
      '/etc/nr/gateway.yaml',
      env,
    );
    expect(sentinel.store.hot.kind === 'redis' && sentinel.store.hot.servers).to.deep.equal({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.7', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'mymaster',
      password: 'hunter2',
      sentinelPassword: 's3cret',
    });
    const cluster = await parseConfig(
      withStore('{ hot: { kind: redis, cluster: ["r1:7000", "r2:7001"], password: "${REDIS_PASSWORD}" } }'),
      '/etc/nr/gateway.yaml',
      env,
    );
    expect(cluster.store.hot.kind === 'redis' && cluster.store.hot.servers).to.deep.equal({
      kind: 'cluster',
      nodes: [
        { host: 'r1', port: 7000 },
        { host: 'r2', port: 7001 },
      ],
      password: 'hunter2',
    });
  });

  it('refuses two ways to find Redis, Sentinel without its master name, and settings the chosen way does not read', async () => {
    expect(await configProblems(withStore('{ hot: { kind: redis, url: "redis://r:6379", cluster: ["r:7000"] } }'))).to.deep.equal([
      'store.hot.cluster is given beside url, but Redis is found one way: keep one of url, cluster',
    ]);
    expect(await configProblems(withStore('{ hot: { kind: redis, sentinels: ["r:26379"] } }'))).to.deep.equal([
      "store.hot.name is required with sentinels: the master's name as the sentinels know it (sentinel monitor <name> …), e.g. name: mymaster",
    ]);
    expect(await configProblems(withStore('{ hot: { kind: redis, cluster: ["r:7000"], name: m, sentinelPassword: x } }'))).to.deep.equal([
      'store.hot.name names a Sentinel master, which cluster does not read: add sentinels: [host:26379, …], or leave name out',
      "store.hot.sentinelPassword is the sentinels' password, which cluster does not read: add sentinels, or leave it out",
    ]);
    expect(await configProblems(withStore('{ hot: { kind: redis, cluster: ["r:7000"], prefix: "{nr}:" } }'))).to.deep.equal([
      'store.hot.prefix holds { or }, which on a cluster would put every key in one slot: leave the braces out',
    ]);
    const inUrl = await configProblems(withStore('{ hot: { kind: redis, url: "redis://r:6379", password: hunter2 } }'));
    expect(inUrl).to.deep.equal(['store.hot.password is not read with url: write it in the URL, redis://:${REDIS_PASSWORD}@host:6379']);
    expect(await configProblems(withStore('{ hot: { kind: redis, sentinels: ["r"], name: m } }'))).to.deep.equal([
      'store.hot.sentinels[0] must be host:port, e.g. 10.0.0.7:26379',
    ]);
    expect(await configProblems(withStore('{ hot: { kind: memory, cluster: ["r:7000"] } }'))).to.deep.equal([
      'store.hot.cluster is a setting of the Redis hot state, which kind: memory does not read: set kind: redis, or leave it out',
    ]);
  });

  it('reads a PostgreSQL record with its defaults, with the memory hot state for one instance', async () => {
    const c = await parseConfig(
      withStore('{ record: { kind: postgres, url: "postgres://nr@db.internal:5432/gw" } }'),
      '/etc/nr/gateway.yaml',
      {},
    );
    expect(c.store).to.deep.equal({
      record: { kind: 'postgres', url: 'postgres://nr@db.internal:5432/gw', schema: 'noderouter', poolSize: 10 },
      hot: { kind: 'memory' },
    });
    const set = await parseConfig(
      withStore(
        '{ record: { kind: postgres, url: "postgresql://db/gw", schema: nr_eu, poolSize: 3 }, hot: { kind: redis, url: "redis://r:6379", instances: 4 } }',
      ),
      '/etc/nr/gateway.yaml',
      {},
    );
    expect(set.store.record).to.deep.equal({ kind: 'postgres', url: 'postgresql://db/gw', schema: 'nr_eu', poolSize: 3 });
  });

  it('refuses a PostgreSQL record without its URL, with another scheme, a bad schema name or a pool size out of range, never printing a password', async () => {
    expect(await configProblems(withStore('{ record: { kind: postgres } }'))).to.deep.equal(['store.record.url is required (a string)']);
    const wrong = await configProblems(withStore('{ record: { kind: postgres, url: "mysql://nr:hunter2@db/gw" } }'));
    expect(wrong).to.deep.equal([
      'store.record.url must be a postgres:// or postgresql:// URL (postgres://user:${PGPASSWORD}@host:5432/database)',
    ]);
    const broken = await configProblems(withStore('{ record: { kind: postgres, url: "postgres://nr:hun ter2@db:port/gw" } }'));
    expect(broken).to.have.length(1);
    expect(broken[0]).to.match(
      /^store\.record\.url is not a URL that parses: write postgres:\/\/user:\$\{PGPASSWORD\}@host:5432\/database/,
    );
    expect([...wrong, ...broken].join('\n')).to.not.contain('hunter2');
    expect(await configProblems(withStore('{ record: { kind: postgres, url: "postgres://db/gw", schema: 1nr-x } }'))).to.deep.equal([
      'store.record.schema must be letters, digits and _ (at most 63, not starting with a digit), e.g. noderouter',
    ]);
    expect(await configProblems(withStore('{ record: { kind: postgres, url: "postgres://db/gw", poolSize: 0 } }'))).to.have.length(1);
  });

  it("refuses the settings of one kind of record written beside the other's", async () => {
    // The shipped config's path may stay when kind changes.
    expect(await configProblems(withStore('{ record: { kind: postgres, url: "postgres://db/gw", path: a.db } }'))).to.deep.equal([]);
    expect(await configProblems(withStore('{ record: { path: a.db, schema: nr } }'))).to.deep.equal([
      'store.record.schema is a setting of the PostgreSQL record, which kind: sqlite does not read: set kind: postgres, or leave it out',
    ]);
    // Several instances on a PostgreSQL record still share limits through Redis only.
    expect(await configProblems(withStore('{ record: { kind: postgres, url: "postgres://db/gw" }, hot: { instances: 2 } }'))).to.deep.equal(
      [
        'store.hot.instances is 2, but the memory hot state belongs to one instance: instances that share limits need hot: { kind: redis, url: … } (or leave instances out)',
      ],
    );
  });

  it('refuses a chain cached in Redis without the Redis hot state, naming the fix', async () => {
    const cached = BASE.replace('route: { path: /hub }', 'route: { path: /hub }\n    cache: redis');
    expect(await configProblems(cached)).to.deep.equal([
      'chains.hub.cache is "redis", which needs store.hot.kind: redis (the cache shares its connection): set store.hot to { kind: redis, url: … }, or use cache: memory',
    ]);
    expect(await configProblems(withStore('{ hot: { kind: redis, url: "redis://127.0.0.1:6379" } }', cached))).to.deep.equal([]);
  });
});
