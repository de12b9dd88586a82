// `server.workers: 2` on a PostgreSQL record, as an operator runs it (the real
// `noderouter serve`, a primary and two workers, each process on a pool of its own):
// a key made through the admin API is served by both workers, its revocation is
// refused by both, and the usage history that every worker writes sums the calls of
// both exactly once they have stopped.

import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { callAlone, count, hammer, servedByBoth, type Answer } from '../support/cluster-calls.js';
import { configYaml } from '../support/harness.js';
import { PG_URL, tempSchema, type TempSchema } from '../support/pg.js';
import { serve, type Served } from '../support/serve.js';

const TOKEN = 'workers-postgres-admin-token-0123';
const TIERS = `
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 100, archive: true }
`;
const CALL = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };

async function admin(served: Served, method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${served.admin}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

describe('server.workers: 2 on a PostgreSQL record', function () {
  this.timeout(120_000);
  let devnet: Devnet;
  let dir: string;
  let pg: TempSchema;
  let served: Served | undefined;

  beforeEach(async () => {
    devnet = await startDevnet([{ network: 'l1', family: 'evm', name: 'p-full-1', role: 'full' }], { blockTimeMs: 0, noControl: true });
    dir = await mkdtemp(join(tmpdir(), 'noderouter-workers-pg-'));
    pg = await tempSchema();
    const file = join(dir, 'gateway.yaml');
    await writeFile(
      file,
      configYaml(
        [{ name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'p-full-1', role: 'full' }] }],
        new Map([['p-full-1', devnet.node('p-full-1').url]]),
        {
          tiers: TIERS,
          storeYaml: `{ record: { kind: postgres, url: "${PG_URL}", schema: ${pg.schema}, poolSize: 4 }, hot: { kind: memory } }`,
          probeIntervalMs: 600_000,
          adminToken: TOKEN,
          serverYaml: 'workers: 2, shutdownDelayMs: 0',
          logYaml: '{ level: info }',
          // Only the stop writes usage history while the test runs: the sum is read once every worker has written.
          extraYaml: 'usage: { flushInterval: 5m }',
        },
      ),
    );
    served = await serve(['--config', file], { workers: true, timeoutMs: 90_000 });
  });

  afterEach(async () => {
    if (served !== undefined && served.child.exitCode === null && served.child.signalCode === null) {
      served.child.kill('SIGINT');
      await served.exited;
    }
    await devnet.close();
    await pg.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves a key made through the admin API on both workers, refuses it on both once revoked, and sums both workers’ usage exactly', async () => {
    const s = served as Served;
    expect(s.pids).to.have.length(2);
    const made = await admin(s, 'POST', '/admin/keys', { account: 'pg-cluster', tier: 'enterprise' });
    expect(made.status).to.equal(201);
    const { key, record } = made.json as { key: string; record: { id: string } };
    let ok = 0;
    const one = async (): Promise<Answer> => {
      const a = await callAlone(`${s.url}/l1`, CALL, { apikey: key });
      if (a.status === 200) ok++;
      return a;
    };
    const since = s.out().length;
    const answers = await hammer(40, 8, one);
    expect(count(answers, 200)).to.equal(40);
    expect(await servedByBoth(s, 40, since, one)).to.deep.equal([0, 1]);

    expect((await admin(s, 'POST', `/admin/keys/${record.id}/revoke`)).status).to.equal(200);
    const revokedSince = s.out().length;
    const refused = await hammer(20, 4, () => callAlone(`${s.url}/l1`, CALL, { apikey: key }));
    expect(count(refused, 401)).to.equal(20);
    expect(await servedByBoth(s, 20, revokedSince, () => callAlone(`${s.url}/l1`, CALL, { apikey: key }))).to.deep.equal([0, 1]);

    s.child.kill('SIGTERM');
    expect(await s.exited).to.equal(0);
    const rows = await pg.query<{ method: string; outcome: string; calls: number }>(
      `SELECT method, outcome, sum(calls)::integer AS calls FROM ${pg.table('usage_hours')} WHERE key_id = $1 GROUP BY method, outcome`,
      [record.id],
    );
    expect(rows).to.deep.equal([{ method: 'eth_blockNumber', outcome: 'ok', calls: ok }]);
  });
});
