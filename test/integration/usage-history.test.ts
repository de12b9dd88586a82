// Usage history through a real gateway (devnet nodes, HTTP and WebSocket clients) into a
// real SQLite file: each call of a request is counted under its key, chain, method and
// outcome, a batch's bytes shared among its calls; nothing reaches the database while
// requests are served, and a graceful stop writes what was gathered; two instances on
// one file sum; the admin API reads the rollups and the failed-call log, which holds
// neither the key's value nor any call's params. The clock is pinned, so every call
// falls in one known hour.

import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Gateway } from '../../src/app/gateway.js';
import type { UsageBatch, UsageHistory, UsageQuery } from '../../src/quota/usage-history.js';
import type { SqliteDatabase } from '../../src/record/sqlite-database.js';
import { SqliteUsageHistory } from '../../src/record/sqlite-usage-history.js';
import { L1_FULL_AND_ARCHIVE, rpc, startStack, type Stack } from '../support/harness.js';
import { tempRecord, type TempRecord } from '../support/record.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

const TOKEN = 'test-admin-token-usage-history-0123';
const NOW = Date.UTC(2026, 2, 30, 12, 30, 0);
const HOUR = 3_600_000;
const MARKER = 'PARAM-MARKER-7f3a';

/** The SQLite history, counting the writes it is asked for. */
class Counted implements UsageHistory {
  writes = 0;
  constructor(readonly inner: SqliteUsageHistory) {}
  async write(batch: UsageBatch): Promise<void> {
    this.writes++;
    return this.inner.write(batch);
  }
  read(q: UsageQuery) {
    return this.inner.read(q);
  }
  failedCalls(keyId: string, limit: number) {
    return this.inner.failedCalls(keyId, limit);
  }
  prune(beforeHour: number, failedBefore: number) {
    return this.inner.prune(beforeHour, failedBefore);
  }
}

const changes = (db: SqliteDatabase): number => (db.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;

async function admin(gateway: Gateway, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gateway.adminUrl}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('usage history through the gateway', () => {
  let record: TempRecord;
  let db: SqliteDatabase;
  let history: Counted;
  let stack: Stack;

  beforeEach(async () => {
    record = await tempRecord();
    db = record.open();
    history = new Counted(new SqliteUsageHistory(db));
    stack = await startStack({
      chains: [L1_FULL_AND_ARCHIVE],
      now: () => NOW,
      history,
      adminToken: TOKEN,
      // Nothing is written on the interval while a test runs: only the stop writes.
      extraYaml: 'usage: { flushInterval: 5m, failedCalls: { perKey: 5 } }',
    });
  });

  afterEach(async () => {
    await stack.close();
    await record.cleanup();
  });

  it('counts every call, writes nothing while serving, and writes it all on a graceful stop', async () => {
    const { id, value } = await stack.createKey('enterprise');
    const headers = { apikey: value };
    const unchanged = changes(db);
    const sent: string[] = [];
    let received = 0;
    const post = async (body: string): Promise<void> => {
      sent.push(body);
      const res = await rpc(stack.url('/l1'), body, headers);
      received += Buffer.byteLength(res.text);
    };
    for (let i = 0; i < 3; i++) await post(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'eth_blockNumber' }));
    await post(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' },
        { jsonrpc: '2.0', id: 2, method: 'eth_chainId' },
        { jsonrpc: '2.0', id: 3, method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000001', 'latest'] },
        { jsonrpc: '2.0', id: 4, params: [MARKER] },
      ]),
    );
    const socket = await RpcSocket.open(wsUrl(stack.url('/l1')), { headers });
    await socket.call('eth_gasPrice');
    await socket.close();

    expect(history.writes).to.equal(0);
    expect(changes(db)).to.equal(unchanged);
    await stack.gateway.close();
    expect(history.writes).to.equal(1);

    const q = { keyId: id, from: NOW - HOUR, to: NOW + HOUR };
    const byMethod = await history.read({ ...q, by: ['method', 'outcome'], step: 'total' });
    expect(byMethod.map((r) => [r.method, r.outcome, r.calls])).to.deep.equal([
      ['eth_blockNumber', 'ok', 4],
      ['eth_chainId', 'ok', 1],
      ['eth_gasPrice', 'ok', 1],
      ['eth_getBalance', 'ok', 1],
      ['other', 'invalid_request', 1],
    ]);
    const [hour] = await history.read({ ...q, by: ['chain'], step: 'hour' });
    expect(hour).to.deep.include({ start: Math.floor(NOW / HOUR) * HOUR, chain: 'l1', calls: 8 });
    // Every byte of the HTTP requests and answers went to some call, none twice (eth_gasPrice came over the WebSocket).
    const http = byMethod.filter((r) => r.method !== 'eth_gasPrice');
    expect(http.reduce((n, r) => n + r.bytesIn, 0)).to.equal(sent.reduce((n, b) => n + Buffer.byteLength(b), 0));
    expect(http.reduce((n, r) => n + r.bytesOut, 0)).to.equal(received);
    expect(byMethod.find((r) => r.method === 'eth_gasPrice')?.bytesIn).to.be.greaterThan(0);
    for (const r of byMethod) expect(r.latency.reduce((a, b) => a + b, 0)).to.equal(r.calls);
    expect(byMethod.find((r) => r.method === 'eth_blockNumber')).to.deep.include({ cost: 4, nodeCalls: 4 });

    // What the database holds: no key value, no params.
    db.db.pragma('wal_checkpoint(TRUNCATE)');
    for (const name of await readdir(record.dir)) {
      const bytes = await readFile(join(record.dir, name));
      expect(bytes.includes(value), name).to.equal(false);
      expect(bytes.includes(MARKER), name).to.equal(false);
    }
  });

  it('sums two instances writing one file, and the admin API reads the rollups and the failed calls', async () => {
    const { id, value } = await stack.createKey('enterprise');
    const other = await stack.startAnother();
    const call = (gateway: Gateway, method: string) =>
      rpc(`${gateway.url}/l1`, { jsonrpc: '2.0', id: 1, method }, { apikey: value }).then((r) => r.status);
    for (let i = 0; i < 5; i++) expect(await call(stack.gateway, 'eth_blockNumber')).to.equal(200);
    for (let i = 0; i < 7; i++) expect(await call(other, 'eth_blockNumber')).to.equal(200);
    // Not served (the gateway holds no node's keys): a failed call the key's owner may want to see.
    const refused = await call(other, 'eth_sendTransaction');
    await stack.gateway.close();

    // The other instance still serves, its own calls not yet written: the first one's are read.
    let got = await admin(other, `/admin/keys/${id}/usage/history?by=method`);
    expect(got.status).to.equal(200);
    expect(got.body).to.deep.include({ id, step: 'total', by: ['method'] });
    expect(got.body.rows).to.deep.equal([
      {
        method: 'eth_blockNumber',
        calls: 5,
        cost: 5,
        nodeCalls: 5,
        bytesIn: (got.body.rows as Array<{ bytesIn: number }>)[0]?.bytesIn,
        bytesOut: (got.body.rows as Array<{ bytesOut: number }>)[0]?.bytesOut,
        latency: (got.body.rows as Array<{ latency: unknown }>)[0]?.latency,
      },
    ]);

    await other.close();
    const [total] = await history.read({ keyId: id, from: NOW - HOUR, to: NOW + HOUR, by: ['method'], step: 'total' });
    expect(total).to.deep.include({ method: 'eth_blockNumber', calls: 12 });

    const again = await stack.startAnother();
    got = await admin(again, `/admin/keys/${id}/usage/history?by=method,outcome&step=hour&from=${new Date(NOW - HOUR).toISOString()}`);
    const rows = got.body.rows as Array<{
      start: string;
      method: string;
      outcome: string;
      calls: number;
      latency: { p95Ms: number | null };
    }>;
    expect(rows.map((r) => [r.start, r.method, r.outcome, r.calls])).to.deep.equal([
      [new Date(Math.floor(NOW / HOUR) * HOUR).toISOString(), 'eth_blockNumber', 'ok', 12],
      [new Date(Math.floor(NOW / HOUR) * HOUR).toISOString(), 'other', 'method_not_found', 1],
    ]);
    expect(rows[0]?.latency.p95Ms).to.be.a('number');
    const failed = await admin(again, `/admin/keys/${id}/failed-calls`);
    expect(failed.body.calls).to.deep.equal([
      {
        at: new Date(NOW).toISOString(),
        chain: 'l1',
        // The plugin's label of a method it does not serve.
        method: 'other',
        outcome: 'method_not_found',
        status: refused,
        code: 'METHOD_NOT_FOUND',
        node: null,
        latencyMs: (failed.body.calls as Array<{ latencyMs: number }>)[0]?.latencyMs,
        requestId: (failed.body.calls as Array<{ requestId: string }>)[0]?.requestId,
      },
    ]);
    expect((await admin(again, `/admin/keys/${id}/usage/history?step=week`)).status).to.equal(400);
    expect((await admin(again, '/admin/keys/nosuchkey/failed-calls')).status).to.equal(404);
  });

  it("answers an account's history by its id or name (or the account a key names), split by key too, and refuses what it cannot answer", async () => {
    const { account } = await stack.gateway.accounts.create({ name: 'acme', tiers: 'enterprise' });
    const first = await stack.createKey('enterprise', { account: account.id });
    const second = await stack.createKey('enterprise', { account: account.id });
    const elsewhere = await stack.createKey('enterprise');
    const call = async (key: string, method: string) =>
      (await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method }, { apikey: key })).status;
    for (let i = 0; i < 3; i++) expect(await call(first.value, 'eth_blockNumber')).to.equal(200);
    expect(await call(second.value, 'eth_chainId')).to.equal(200);
    expect(await call(second.value, 'eth_sendTransaction')).to.equal(200);
    expect(await call(elsewhere.value, 'eth_blockNumber')).to.equal(200);
    // Nothing is written before the interval (5m here) or a flush.
    expect((await admin(stack.gateway, `/admin/accounts/${account.id}/usage/history`)).body.rows).to.deep.equal([]);
    await stack.gateway.flushUsage();

    const hour = new Date(Math.floor(NOW / HOUR) * HOUR).toISOString();
    for (const ref of [account.id, 'acme']) {
      const got = await admin(stack.gateway, `/admin/accounts/${ref}/usage/history?by=key,method,outcome&step=hour`);
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.include({ account: account.id, step: 'hour', by: ['key', 'method', 'outcome'] });
      const rows = got.body.rows as Array<{ start: string; keyId: string; method: string; outcome: string; calls: number }>;
      expect(rows.map((r) => [r.start, r.keyId, r.method, r.outcome, r.calls])).to.deep.equal(
        [
          [hour, first.id, 'eth_blockNumber', 'ok', 3],
          [hour, second.id, 'eth_chainId', 'ok', 1],
          [hour, second.id, 'other', 'method_not_found', 1],
          // Rows by key id (then method), as SQL sorts them: a stable sort keeps each key's methods in order.
        ].sort((a, b) => ((a[1] as string) < (b[1] as string) ? -1 : (a[1] as string) > (b[1] as string) ? 1 : 0)),
      );
    }
    const total = await admin(stack.gateway, `/admin/accounts/acme/usage/history?method=eth_blockNumber`);
    expect((total.body.rows as Array<{ calls: number; cost: number }>).map((r) => [r.calls, r.cost])).to.deep.equal([[3, 3]]);
    // A key's account that was never made with `accounts create` is read by the name the key carries.
    const named = (await stack.gateway.keys.store.get(elsewhere.id))?.account as string;
    const other = await admin(stack.gateway, `/admin/accounts/${named}/usage/history?by=chain`);
    expect(other.status).to.equal(200);
    expect((other.body.rows as Array<{ chain: string; calls: number }>).map((r) => [r.chain, r.calls])).to.deep.equal([['l1', 1]]);

    const refused = async (path: string) => {
      const res = await admin(stack.gateway, path);
      return [res.status, (res.body.error as { code: string }).code];
    };
    expect(await refused('/admin/accounts/nosuchaccount/usage/history')).to.deep.equal([404, 'ACCOUNT_NOT_FOUND']);
    expect(await refused('/admin/accounts/acme/usage/history?by=node')).to.deep.equal([400, 'INVALID_INPUT']);
    expect(await refused('/admin/accounts/acme/usage/history?step=week')).to.deep.equal([400, 'INVALID_INPUT']);
    expect(await refused('/admin/accounts/acme/usage/history?from=2026-03-31&to=2026-03-30')).to.deep.equal([400, 'INVALID_INPUT']);
    expect(await refused('/admin/accounts/acme/usage/history?step=hour&from=2025-01-01')).to.deep.equal([400, 'INVALID_INPUT']);
    // A key's own rows are never split by key.
    expect(await refused(`/admin/keys/${first.id}/usage/history?by=key`)).to.deep.equal([400, 'INVALID_INPUT']);
    const unauthorized = await fetch(`${stack.gateway.adminUrl}/admin/accounts/acme/usage/history`);
    expect(unauthorized.status).to.equal(401);
  });

  it('keeps in an account the usage its keys had before it adopted them', async () => {
    const legacy = await stack.createKey('enterprise', { account: 'globex' });
    const call = async () =>
      (await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: legacy.value })).status;
    expect([await call(), await call()]).to.deep.equal([200, 200]);
    await stack.gateway.flushUsage();
    // The key's earlier rows name "globex"; from now on it carries the account's id.
    const { account } = await stack.gateway.accounts.create({ name: 'globex', tiers: 'enterprise' }, { adoptKeys: true });
    expect(await call()).to.equal(200);
    await stack.gateway.flushUsage();
    for (const ref of [account.id, 'globex']) {
      const got = await admin(stack.gateway, `/admin/accounts/${ref}/usage/history?method=eth_blockNumber`);
      expect(got.status).to.equal(200);
      expect(
        (got.body.rows as Array<{ calls: number }>).map((r) => r.calls),
        ref,
      ).to.deep.equal([3]);
    }
  });
});
