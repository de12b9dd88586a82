// Redis loses nothing that matters (issue #31): two instances on one SQLite record with
// a Redis of the test's own as their hot state, under a steady stream of calls; Redis is
// killed, a key is revoked while it is down, and it comes back empty on the same port.
// Every key, account and restriction reads back and works as before on both instances;
// the revocation reaches both within the key cache's TTL (through the record's change
// log: Redis could not carry it); usage history counts every call answered, and `keys
// usage`, the admin API (by key and by account) and the dashboard all read it from the
// record; limits and quota counters start again from full buckets (what a wipe loses,
// as documented).

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { Gateway } from '../../src/app/gateway.js';
import { runCli } from '../support/cli.js';
import { DashboardClient } from '../support/dashboard-client.js';
import { get, L1_FULL_AND_ARCHIVE, rpc, startStack, type Stack } from '../support/harness.js';
import { OwnRedis } from '../support/redis-server.js';
import { until } from '../support/until.js';

const TOKEN = 'wipe-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const APP = 'https://app.example';
const CACHE_TTL_MS = 2_000;
const TIERS = `
  enterprise: { rate: unlimited, archive: true }
  burst5: { rate: 0.001, burst: 5 }
  daily5: { rate: unlimited, daily: 5 }
`;
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' });

interface Made {
  readonly id: string;
  readonly value: string;
}

describe('a Redis wipe under load', function () {
  this.timeout(60_000);
  let redis: OwnRedis;
  let stack: Stack;
  let a: Gateway;
  let b: Gateway;

  before(async () => {
    redis = await OwnRedis.start();
    stack = await startStack({
      chains: [L1_FULL_AND_ARCHIVE],
      tiers: TIERS,
      adminToken: TOKEN,
      hotYaml: `{ kind: redis, url: "${redis.url}", prefix: "wipe:${randomBytes(4).toString('hex')}:", timeoutMs: 300, onFailure: fail-open, instances: 2, leaseMs: 50 }`,
      keysYaml: `cacheTtlMs: ${CACHE_TTL_MS}`,
      dashboardYaml: '{ enabled: true }',
      // Nothing is written on the interval: the graceful stops write it all.
      extraYaml: 'usage: { flushInterval: 5m }',
    });
    a = stack.gateway;
    b = await stack.startAnother();
  });
  after(async () => {
    await stack?.close();
    await redis?.kill();
  });

  const call = (gw: Gateway, key: string, headers: Record<string, string> = {}) => rpc(`${gw.url}/l1`, CALL, { apikey: key, ...headers });
  const adminPost = async (gw: Gateway, path: string, body: unknown): Promise<{ status: number; json: unknown }> => {
    const res = await fetch(`${gw.adminUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  };
  const makeKey = async (body: Record<string, unknown>): Promise<Made> => {
    const res = await adminPost(a, '/admin/keys', body);
    expect(res.status, JSON.stringify(res.json)).to.equal(201);
    const { key, record } = res.json as { key: string; record: { id: string } };
    return { id: record.id, value: key };
  };
  /** Every key as the admin API shows it, without what use changes (last use). */
  const keysOn = async (gw: Gateway): Promise<unknown[]> => {
    const res = await get(`${gw.adminUrl}/admin/keys`, AUTH);
    expect(res.status).to.equal(200);
    return (res.json as { keys: Array<Record<string, unknown>> }).keys
      .map(({ lastUsedAt: _, ...rest }) => rest)
      .sort((x, y) => String(x.id).localeCompare(String(y.id)));
  };
  const accountsOn = async (gw: Gateway): Promise<unknown[]> =>
    (await gw.accounts.store.listAccounts()).sort((x, y) => x.id.localeCompare(y.id));
  /** Calls through `gw` until one is refused: how many were admitted (at most 50). */
  const admittedUntilRefused = async (gw: Gateway, key: string): Promise<number> => {
    for (let admitted = 0; admitted < 50; admitted++) {
      const res = await call(gw, key);
      if (res.status !== 200) {
        expect(res.status).to.equal(429);
        return admitted;
      }
    }
    return 50;
  };
  const storeUp = async (gw: Gateway): Promise<boolean> => /noderouter_store_up 1/.test((await get(`${gw.adminUrl}/metrics`)).text);

  it('loses no key, account, restriction or usage row; a revocation made while Redis was down reaches both instances; limits restart full', async () => {
    await a.accounts.create({ name: 'acme', tiers: 'enterprise' });
    const plain = await makeKey({ account: 'acme', tier: 'enterprise', label: 'plain' });
    const restricted = await makeKey({ account: 'acct-restricted', tier: 'enterprise', origins: [APP] });
    const victim = await makeKey({ account: 'acct-victim', tier: 'enterprise' });
    const bursty = await makeKey({ account: 'acct-bursty', tier: 'burst5' });
    const quota = await makeKey({ account: 'acct-quota', tier: 'daily5' });

    // Both instances hold the victim in their key caches.
    for (const gw of [a, b]) expect((await call(gw, victim.value)).status).to.equal(200);
    // At the limits before the wipe.
    expect(await admittedUntilRefused(a, bursty.value)).to.equal(5);
    expect(await admittedUntilRefused(a, quota.value)).to.equal(5);

    const keysBefore = await keysOn(a);
    const accountsBefore = await accountsOn(a);
    expect(await keysOn(b)).to.deep.equal(keysBefore);
    expect(await accountsOn(b)).to.deep.equal(accountsBefore);

    // The load: a steady stream from both instances, every answer counted by key.
    const answered = new Map<string, number>([
      [plain.id, 0],
      [restricted.id, 0],
    ]);
    const refusals: string[] = [];
    let loading = true;
    const stream = async (gw: Gateway): Promise<void> => {
      for (let i = 0; loading; i++) {
        const k = i % 2 === 0 ? plain : restricted;
        const res = await call(gw, k.value, k === restricted ? { origin: APP } : {});
        answered.set(k.id, (answered.get(k.id) ?? 0) + 1);
        if (res.status !== 200) refusals.push(`${res.status} ${res.text}`);
      }
    };
    const load = Promise.all([stream(a), stream(b)]);
    const answeredNow = (): number => [...answered.values()].reduce((n, c) => n + c, 0);
    await until(() => answeredNow() >= 40, { what: 'the load runs' });

    await redis.kill();
    const atKill = answeredNow();
    await until(async () => !(await storeUp(a)) && !(await storeUp(b)), { what: 'both instances see Redis gone', everyMs: 50 });
    const revoked = await adminPost(a, `/admin/keys/${victim.id}/revoke`, {});
    expect(revoked.status, JSON.stringify(revoked.json)).to.equal(200);
    const revokedAt = Date.now();
    // Refused on both instances within the key cache's TTL; B could only learn it from the record.
    for (const gw of [a, b]) {
      await until(async () => (await call(gw, victim.value)).status === 401, {
        what: `${gw === a ? 'A' : 'B'} refuses the revoked key`,
        timeoutMs: CACHE_TTL_MS + revokedAt - Date.now() + 500,
        everyMs: 50,
      });
    }
    // Served while Redis is down.
    await until(() => answeredNow() >= atKill + 40, { what: 'the load is served without Redis' });

    await redis.restart();
    await until(async () => (await storeUp(a)) && (await storeUp(b)), { what: 'both instances use Redis again', everyMs: 50 });
    const atRestart = answeredNow();
    await until(() => answeredNow() >= atRestart + 40, { what: 'the load is served by the empty Redis' });
    loading = false;
    await load;
    expect(refusals).to.deep.equal([]);

    // Everything in the record reads back as before, on both instances (the victim is now revoked).
    for (const gw of [a, b]) {
      const keys = (await keysOn(gw)) as Array<{ id: string; state: string; revokedAt: string | null }>;
      expect(keys.filter((k) => k.id !== victim.id)).to.deep.equal(keysBefore.filter((k) => (k as { id: string }).id !== victim.id));
      expect(keys.find((k) => k.id === victim.id)?.state).to.equal('revoked');
      expect(await accountsOn(gw)).to.deep.equal(accountsBefore);
      // Restrictions still hold, and the keys still work.
      expect((await call(gw, restricted.value, { origin: APP })).status).to.equal(200);
      expect((await call(gw, restricted.value, { origin: 'https://evil.example' })).status).to.equal(403);
      expect((await call(gw, plain.value)).status).to.equal(200);
      expect((await call(gw, victim.value)).status).to.equal(401);
    }
    answered.set(plain.id, (answered.get(plain.id) ?? 0) + 2);
    answered.set(restricted.id, (answered.get(restricted.id) ?? 0) + 4);

    // What a wipe loses: limits and quota counters start again from full buckets.
    expect(await admittedUntilRefused(a, bursty.value)).to.equal(5);
    expect(await admittedUntilRefused(a, quota.value)).to.equal(5);

    // Usage history: every answered call, before, during and after the wipe, once, wherever it is read.
    await b.close();
    await a.close();
    const reader = await stack.startAnother();
    const sum = (rows: Array<{ calls: number }>): number => rows.reduce((n, r) => n + r.calls, 0);
    for (const [id, calls] of answered) {
      const res = await get(`${reader.adminUrl}/admin/keys/${id}/usage/history`, AUTH);
      expect(res.status).to.equal(200);
      expect(sum((res.json as { rows: Array<{ calls: number }> }).rows), id).to.equal(calls);
      // `keys usage`: answered, failed, limited and invalid calls are every call.
      const cli = await runCli(['keys', 'usage', id, '--json', '--config', stack.configFile]);
      expect(cli.code, cli.stderr).to.equal(0);
      const days = JSON.parse(cli.stdout) as Array<{ calls: number; limited: number; invalid: number }>;
      expect(
        days.reduce((n, r) => n + r.calls + r.limited + r.invalid, 0),
        `keys usage ${id}`,
      ).to.equal(calls);
    }
    // By account: acme by its name, the restricted key's account by the name the key carries.
    for (const [account, id] of [
      ['acme', plain.id],
      ['acct-restricted', restricted.id],
    ] as const) {
      const res = await get(`${reader.adminUrl}/admin/accounts/${account}/usage/history?by=key`, AUTH);
      expect(res.status).to.equal(200);
      expect((res.json as { rows: Array<{ keyId: string; calls: number }> }).rows.map((r) => [r.keyId, r.calls])).to.deep.equal([
        [id, answered.get(id)],
      ]);
    }
    // The dashboard: acme's own usage, every call of its key answered (plain's calls all succeeded).
    const dashboard = new DashboardClient(new URL(reader.dashboardUrl).origin);
    expect((await dashboard.signIn((await reader.accounts.issueToken('acme')).token)).status).to.equal(200);
    const report = (await dashboard.get('/usage')).json as { totals: { last30: { calls: number; errors: number } } };
    expect(report.totals.last30).to.deep.include({ calls: answered.get(plain.id), errors: 0 });
  });
});
