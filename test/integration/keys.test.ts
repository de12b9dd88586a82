// Key lifecycle through the admin API, permissions, tiers and their limits, and
// usage. Time is a clock the tests move: nothing waits for a limit to refill.

import { expect } from 'chai';
import { recordUsage, sqlitePath } from '../support/record.js';
import { get, rpc, startStack, type Stack } from '../support/harness.js';

const TOKEN = 'test-admin-token-0123456789';
const TIERS = `
  free: { rate: 10, burst: 1, maxBatch: 3, archive: false }
  bursty: { rate: 1, burst: 5 }
  daily: { rate: unlimited, daily: 3, monthly: 100 }
  enterprise: { rate: unlimited, maxBatch: 1000, archive: true }
`;

describe('keys, tiers and quotas', function () {
  this.timeout(30_000);
  let stack: Stack;
  // Starts at real time: rotation grace and expiry are stamped by the store in real time.
  let clock = Date.now();
  const auth = { authorization: `Bearer ${TOKEN}` };

  before(async () => {
    stack = await startStack({ tiers: TIERS, adminToken: TOKEN, now: () => clock });
  });
  after(() => stack.close());

  const call = (key: string, method = 'eth_blockNumber', params: unknown[] = [], id: unknown = 1) =>
    rpc(stack.url('/l1'), { jsonrpc: '2.0', id, method, params }, { apikey: key });

  async function admin(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
    const res = await fetch(stack.admin(path), {
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: JSON.parse(text) as Record<string, unknown>, text };
  }

  describe('admin API', () => {
    it('refuses requests without the admin token', async () => {
      const res = await get(stack.admin('/admin/keys'));
      expect(res.status).to.equal(401);
      expect((await get(stack.admin('/admin/keys'), { authorization: 'Bearer wrong-token-wrong-token' })).status).to.equal(401);
    });

    it('creates a key whose value appears only in the create answer', async () => {
      const created = await admin('POST', '/admin/keys', { account: 'acme', tier: 'enterprise', label: 'prod' });
      expect(created.status).to.equal(201);
      const value = created.json.key as string;
      const record = created.json.record as Record<string, unknown>;
      expect(value).to.match(/^nrk_/);
      expect(record).to.include({ account: 'acme', tier: 'enterprise', label: 'prod', state: 'active', prefix: value.slice(0, 8) });
      expect(record).to.not.have.property('hash');
      const list = await admin('GET', '/admin/keys?account=acme');
      const show = await admin('GET', `/admin/keys/${record.id as string}`);
      for (const text of [list.text, show.text]) {
        expect(text).to.not.contain(value);
        expect(text).to.contain(value.slice(0, 8));
      }
      expect((await call(value)).status).to.equal(200);
    });

    it('refuses bad input with a clear message', async () => {
      const res = await admin('POST', '/admin/keys', { account: 'acme', tier: 'platinum' });
      expect(res.status).to.equal(400);
      expect((res.json.error as { message: string }).message).to.contain('tier must be one of');
      expect((await admin('POST', '/admin/keys/key_nope/revoke')).status).to.equal(404);
    });

    it('revokes a key from the very next request', async () => {
      const { value, id } = await stack.createKey('enterprise');
      expect((await call(value)).status).to.equal(200);
      expect((await admin('POST', `/admin/keys/${id}/revoke`)).status).to.equal(200);
      const res = await call(value);
      expect(res.status).to.equal(401);
      expect((res.json as { error: { code: number } }).error.code).to.equal(-32016);
    });

    it('rotates: the old value works during the grace period, not after', async () => {
      const { value: old, id } = await stack.createKey('enterprise');
      expect((await call(old)).status).to.equal(200);
      const rotated = await admin('POST', `/admin/keys/${id}/rotate`, { graceSeconds: 60 });
      const fresh = rotated.json.key as string;
      expect(fresh).to.not.equal(old);
      expect((await call(fresh)).status).to.equal(200);
      expect((await call(old)).status).to.equal(200);
      clock = Date.now() + 61_000;
      expect((await call(old)).status).to.equal(401);
      expect((await call(fresh)).status).to.equal(200);
      clock = Date.now();
    });

    it('refuses to rotate a revoked key with 400, and issues no new value', async () => {
      const { value, id } = await stack.createKey('enterprise');
      expect((await admin('POST', `/admin/keys/${id}/revoke`)).status).to.equal(200);
      const res = await admin('POST', `/admin/keys/${id}/rotate`, {});
      expect(res.status).to.equal(400);
      expect(res.json.error).to.deep.include({
        code: 'INVALID_INPUT',
        message: `key ${value.slice(0, 8)} is revoked and cannot be rotated`,
      });
      expect(res.json).to.not.have.property('key');
      // The record is as it was: same prefix, still revoked, nothing retired.
      const shown = await admin('GET', `/admin/keys/${id}`);
      expect(shown.json.record).to.deep.include({ prefix: value.slice(0, 8), state: 'revoked', retired: [] });
      expect((await call(value)).status).to.equal(401);
    });

    it('refuses a prefix two keys share with 400, asking for the id, and revokes by id', async () => {
      const { value, id } = await stack.createKey('enterprise');
      const record = (await stack.gateway.keys.store.get(id)) as NonNullable<Awaited<ReturnType<typeof stack.gateway.keys.store.get>>>;
      // Another customer's key whose first characters happen to be the same.
      await stack.gateway.keys.store.put({ ...record, id: 'key_OtherCustomer', account: 'globex', hash: 'f'.repeat(64) });
      const prefix = value.slice(0, 8);
      for (const [method, path] of [
        ['POST', `/admin/keys/${prefix}/revoke`],
        ['POST', `/admin/keys/${prefix}/rotate`],
        ['GET', `/admin/keys/${prefix}`],
        ['GET', `/admin/keys/${prefix}/usage`],
      ] as const) {
        const res = await admin(method, path, method === 'POST' ? {} : undefined);
        expect(res.status, path).to.equal(400);
        expect(res.json.error).to.deep.equal({
          code: 'INVALID_INPUT',
          message: `prefix "${prefix}" matches more than one key: use the key's id (key_…) instead`,
        });
      }
      expect((await call(value)).status).to.equal(200);
      expect((await admin('POST', '/admin/keys/key_OtherCustomer/revoke')).json.record).to.deep.include({
        account: 'globex',
        state: 'revoked',
      });
      expect((await call(value)).status).to.equal(200);
    });

    it('refuses an expired key', async () => {
      const { value } = await stack.createKey('enterprise', { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
      expect((await call(value)).status).to.equal(200);
      clock = Date.now() + 3_700_000;
      expect((await call(value)).status).to.equal(401);
      clock = Date.now();
    });
  });

  describe('permissions', () => {
    it('refuses chains outside the key’s patterns with 403 before any node', async () => {
      const { value } = await stack.createKey('enterprise', { chains: ['hub-*'] });
      for (const n of stack.devnet.nodes.values()) n.clearReceived();
      const res = await call(value, 'eth_blockNumber', [], 'x');
      expect(res.status).to.equal(403);
      // Refused before the body is read: one error object, id null.
      expect(res.json).to.deep.include({ id: null });
      expect((res.json as { error: { code: number } }).error.code).to.equal(-32004);
      expect([...stack.devnet.nodes.values()].flatMap((n) => n.received)).to.have.length(0);
      expect((await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: value })).status).to.equal(200);
    });

    it('applies allowed and denied method patterns, item by item in a batch', async () => {
      const { value } = await stack.createKey('enterprise', { allow: ['eth_*'], deny: ['eth_getLogs'] });
      expect((await call(value, 'eth_getLogs', [{}])).status).to.equal(403);
      expect((await call(value, 'net_version')).status).to.equal(403);
      const batch = await rpc(
        stack.url('/l1'),
        [
          { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' },
          { jsonrpc: '2.0', id: 2, method: 'eth_getLogs', params: [{}] },
        ],
        { apikey: value },
      );
      expect(batch.status).to.equal(200);
      const items = batch.json as Array<{ id: number; result?: string; error?: { code: number } }>;
      expect(items[0]?.result).to.match(/^0x/);
      expect(items[1]?.error?.code).to.equal(-32004);
    });

    it('lets a key narrow archive access below its tier', async () => {
      const { value } = await stack.createKey('enterprise', { archive: false });
      expect((await call(value, 'eth_getBalance', ['0x00000000000000000000000000000000000000aa', 'earliest'])).status).to.equal(403);
    });
  });

  describe('limits', () => {
    it('holds steady load at twice the rate to the rate', async () => {
      const { value } = await stack.createKey('free');
      let allowed = 0;
      const start = clock;
      // 20 calls per second for 5 simulated seconds against 10/s.
      for (let i = 0; i < 100; i++) {
        clock = start + i * 50;
        const res = await call(value);
        if (res.status === 200) allowed++;
        else expect(res.status).to.equal(429);
      }
      expect(allowed).to.be.within(50 * 0.95, 50 * 1.05 + 1);
    });

    it('honours a burst, then refuses with 429, -32005, the caller id and pacing headers', async () => {
      const { value } = await stack.createKey('bursty');
      for (let i = 0; i < 5; i++) {
        const ok = await call(value);
        expect(ok.status).to.equal(200);
        expect(ok.headers.get('ratelimit-limit')).to.equal('5');
        expect(ok.headers.get('ratelimit-remaining')).to.equal(String(4 - i));
      }
      const res = await call(value, 'eth_blockNumber', [], 'late');
      expect(res.status).to.equal(429);
      expect(res.json).to.deep.include({ id: 'late' });
      expect((res.json as { error: { code: number } }).error.code).to.equal(-32005);
      expect(res.headers.get('retry-after')).to.equal('1');
      expect(res.headers.get('ratelimit-remaining')).to.equal('0');
      expect(Number(res.headers.get('ratelimit-reset'))).to.be.greaterThan(0);
      clock += 1_000;
      expect((await call(value)).status).to.equal(200);
    });

    it('charges a batch one per item and refuses batches over the tier size with 413', async () => {
      const { value } = await stack.createKey('free');
      clock += 10_000;
      const two = [1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'eth_blockNumber' }));
      expect((await rpc(stack.url('/l1'), two, { apikey: value })).status).to.equal(429);
      const four = [1, 2, 3, 4].map((id) => ({ jsonrpc: '2.0', id, method: 'eth_blockNumber' }));
      const res = await rpc(stack.url('/l1'), four, { apikey: value });
      expect(res.status).to.equal(413);
      // One error object for the whole batch, never one per item.
      expect(res.json).to.deep.include({ id: null });
      expect((res.json as { error: { code: number } }).error.code).to.equal(-32600);
    });

    it('resets the daily quota at the UTC day boundary', async () => {
      clock = Date.UTC(2026, 5, 12, 23, 59, 30);
      const { value } = await stack.createKey('daily');
      for (let i = 0; i < 3; i++) expect((await call(value)).status).to.equal(200);
      const over = await call(value);
      expect(over.status).to.equal(429);
      expect(over.headers.get('retry-after')).to.equal('30');
      clock = Date.UTC(2026, 5, 13, 0, 0, 1);
      expect((await call(value)).status).to.equal(200);
    });
  });

  describe('usage', () => {
    it('counts calls, errors and limited calls per day and chain, and persists them', async () => {
      clock = Date.UTC(2026, 5, 20, 8, 0, 0);
      const { value, id } = await stack.createKey('bursty');
      for (let i = 0; i < 5; i++) await call(value);
      await call(value); // limited
      await call(value, 'eth_call', [{ to: '0x00000000000000000000000000000000000000aa', data: '0xdeadbeef' }, 'latest']); // limited too: bucket empty
      clock += 2_000;
      await call(value, 'eth_call', [{ to: '0x00000000000000000000000000000000000000aa', data: '0xdeadbeef' }, 'latest']); // a chain error
      await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: value });
      const res = await admin('GET', `/admin/keys/${id}/usage`);
      expect(res.json.usage).to.deep.equal([
        { day: '2026-06-20', chain: 'hub-rest', calls: 1, errors: 0, limited: 0 },
        { day: '2026-06-20', chain: 'l1', calls: 6, errors: 1, limited: 2 },
      ]);
      await stack.gateway.close();
      expect(recordUsage(sqlitePath(stack.gateway.config.store.record))[id]).to.have.length(2);
    });
  });
});
