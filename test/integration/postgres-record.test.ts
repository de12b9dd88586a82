// Many instances on one PostgreSQL record (a fresh schema per test) with the Redis hot
// state: a key made through one instance's admin API works on the other, a revocation
// through one is refused on the other within the key cache's life, and the usage
// history both write adds up exactly once both have stopped gracefully; and
// `noderouter store migrate` brings a PostgreSQL record's schema up to date. One instance
// on it with the memory hot state keeps its usage book and history there.

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { Gateway } from '../../src/app/gateway.js';
import { L1_FULL_AND_ARCHIVE, redisHot, rpc, startStack, type Stack } from '../support/harness.js';
import { PG_URL, tempSchema, type TempSchema } from '../support/pg.js';
import { deleteUnderPrefix } from '../support/redis.js';
import { until } from '../support/until.js';
import { runCli } from '../support/cli.js';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const TOKEN = 'test-admin-token-postgres-record-01';
/** The key cache's life in this test: a revocation reaches the other instance within it. */
const CACHE_TTL_MS = 300;
const CALL = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };

async function admin(
  gateway: Gateway,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${gateway.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('many instances on a PostgreSQL record', function () {
  this.timeout(30_000);
  const prefix = `nrtest:${randomBytes(4).toString('hex')}:`;
  let pg: TempSchema;
  let stack: Stack;
  let other: Gateway;

  beforeEach(async () => {
    pg = await tempSchema();
    stack = await startStack({
      chains: [L1_FULL_AND_ARCHIVE],
      adminToken: TOKEN,
      storeYaml: `{ record: { kind: postgres, url: "${PG_URL}", schema: ${pg.schema}, poolSize: 4 }, hot: ${redisHot(prefix, 'timeoutMs: 3000, instances: 2')} }`,
      keysYaml: `cacheTtlMs: ${CACHE_TTL_MS}`,
      // Only a graceful stop writes usage history while the test runs.
      extraYaml: 'usage: { flushInterval: 5m }',
    });
    other = await stack.startAnother();
  });

  afterEach(async () => {
    await stack.close();
    await pg.cleanup();
    await deleteUnderPrefix(prefix);
  });

  const callOn = (gw: Gateway, key: string) => rpc(`${gw.url}/l1`, CALL, { apikey: key }).then((r) => r.status);

  it('serves on one instance a key made through the other, and refuses it on one within the cache life of its revocation through the other', async () => {
    const made = await admin(stack.gateway, 'POST', '/admin/keys', { account: 'acct-pg', tier: 'enterprise' });
    expect(made.status).to.equal(201);
    const value = made.json.key as string;
    const id = (made.json.record as { id: string }).id;
    expect(await callOn(other, value)).to.equal(200);
    expect(await callOn(stack.gateway, value)).to.equal(200);
    expect((await admin(other, 'GET', `/admin/keys/${id}`)).json.record).to.deep.include({ id, account: 'acct-pg' });

    expect((await admin(other, 'POST', `/admin/keys/${id}/revoke`)).status).to.equal(200);
    // The instance that revoked refuses at once; the other within the cache's life.
    expect(await callOn(other, value)).to.equal(401);
    await until(async () => (await callOn(stack.gateway, value)) === 401, {
      what: 'the revoked key is refused on the other instance',
      timeoutMs: CACHE_TTL_MS + 1_000,
    });
  });

  it('sums the usage history both instances write, once both have stopped', async () => {
    const { id, value } = await stack.createKey('enterprise');
    for (let i = 0; i < 5; i++) expect(await callOn(stack.gateway, value)).to.equal(200);
    for (let i = 0; i < 7; i++) expect(await callOn(other, value)).to.equal(200);
    await other.close();
    await stack.gateway.close();
    const rows = await pg.query<{ method: string; calls: string }>(
      `SELECT method, sum(calls) AS calls FROM ${pg.table('usage_hours')} WHERE key_id = $1 GROUP BY method`,
      [id],
    );
    expect(rows.map((r) => [r.method, Number(r.calls)])).to.deep.equal([['eth_blockNumber', 12]]);
  });

  it('migrates a PostgreSQL record with the store command, and says so once', async () => {
    const running = await runCli(['store', 'migrate', '--config', stack.configFile]);
    expect(running.stderr).to.equal('');
    expect(running.stdout).to.match(
      new RegExp(`^record 127\\.0\\.0\\.1:5432/\\S+, schema ${pg.schema} \\(postgres\\): schema version \\d+ \\(up to date\\)$`, 'm'),
    );
    const fresh = await tempSchema();
    try {
      const file = join(stack.dir, 'fresh.yaml');
      await writeFile(file, (await readFile(stack.configFile, 'utf8')).replace(`schema: ${pg.schema}`, `schema: ${fresh.schema}`));
      expect((await runCli(['store', 'migrate', '--config', file])).stdout).to.match(/schema version (\d+) \(applied now: 1, 2, .*\1\)/);
      expect((await runCli(['store', 'migrate', '--config', file])).stdout).to.match(/schema version \d+ \(up to date\)/);
    } finally {
      await fresh.cleanup();
    }
  });
});

describe('one instance on a PostgreSQL record with the memory hot state', function () {
  this.timeout(30_000);
  let pg: TempSchema;
  let stack: Stack;

  beforeEach(async () => {
    pg = await tempSchema();
    stack = await startStack({
      chains: [L1_FULL_AND_ARCHIVE],
      storeYaml: `{ record: { kind: postgres, url: "${PG_URL}", schema: ${pg.schema} }, hot: { kind: memory } }`,
      extraYaml: 'usage: { flushInterval: 5m }',
    });
  });

  afterEach(async () => {
    await stack.close();
    await pg.cleanup();
  });

  it('serves its keys and keeps its usage book and history in the record across a restart', async () => {
    const { id, value } = await stack.createKey('enterprise');
    for (let i = 0; i < 3; i++) expect(await rpc(`${stack.gateway.url}/l1`, CALL, { apikey: value }).then((r) => r.status)).to.equal(200);
    await stack.gateway.close();
    const days = await pg.query<{ calls: string }>(`SELECT sum(calls) AS calls FROM ${pg.table('usage_days')} WHERE key_id = $1`, [id]);
    expect(Number(days[0]?.calls)).to.equal(3);
    const again = await stack.startAnother();
    expect(await rpc(`${again.url}/l1`, CALL, { apikey: value }).then((r) => r.status)).to.equal(200);
    const usage = await again.services.bundle.limiter.usage(id);
    expect(usage.reduce((n, r) => n + r.calls, 0)).to.equal(4);
  });
});
