// Key restrictions through a real gateway, devnet nodes and real clients, on every
// transport: origins, referrers, client addresses (IPv4 and IPv6 CIDR ranges, behind
// two trusted proxies' X-Forwarded-For), user agents and contracts over HTTP,
// WebSocket (at the upgrade, per message, and again when the key changes) and gRPC
// (addresses and user agents; origins and referrers do not apply there). A refusal is
// 403 -32004 naming the restriction, reaches no node, costs nothing against limits,
// and is counted by reason.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { PARAMS, unary as grpcUnary } from '../support/grpc-client.js';
import { clientCalls, get, HUB_GRPC, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { RpcSocket, refusal, wsUrl } from '../support/ws-client.js';

const L1: ChainSpec = { name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'l1-full-1', role: 'full' }] };
const REST: ChainSpec = { name: 'hub-rest', plugin: 'sdk-rest', path: '/hub/rest', nodes: [{ name: 'hub-rest-full-1', role: 'full' }] };
const TIERS = `
  tight: { rate: 1, burst: 1 }
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 1000, archive: true, wsConnections: unlimited }
`;
const TOKEN = 'restrictions-admin-token-0123';
const APP = 'https://app.example.com';
const A = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const B = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512';

describe('key restrictions on every transport', function () {
  this.timeout(30_000);
  let stack: Stack;
  const clock = Date.parse('2026-06-01T12:00:00Z');
  const sockets: RpcSocket[] = [];
  let grpcClient: grpc.Client;

  before(async () => {
    // Two proxies in front (a CDN in 172.16/12, then the load balancer on loopback): the client is the first entry from the right that is neither.
    stack = await startStack({
      chains: [L1, REST, HUB_GRPC],
      tiers: TIERS,
      now: () => clock,
      adminToken: TOKEN,
      serverYaml: 'trustedProxies: ["127.0.0.1", "::1", "172.16.0.0/12"]',
    });
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    grpcClient = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure());
  });
  after(async () => {
    for (const s of sockets) s.ws.terminate();
    grpcClient?.close();
    await stack?.close();
  });

  const key = async (restrictions: Record<string, unknown>, tier = 'enterprise'): Promise<string> =>
    (await stack.createKey(tier, restrictions)).value;
  const call = (k: string, headers: Record<string, string> = {}, body: unknown = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }) =>
    rpc(stack.url('/l1'), body, { apikey: k, ...headers });
  const refusedWith = (res: { status: number; json: unknown }, message: RegExp): void => {
    expect(res.status).to.equal(403);
    const err = (res.json as { error: { code: number; message: string } }).error;
    expect(err.code).to.equal(-32004);
    expect(err.message).to.match(message);
  };
  const metric = async (reason: string): Promise<number> =>
    Number(
      new RegExp(`noderouter_restriction_refusals_total\\{chain="[^"]+",reason="${reason}"\\} (\\d+)`).exec(
        (await get(stack.admin('/metrics'))).text,
      )?.[1] ?? 0,
    );

  describe('HTTP', () => {
    it('origins: the listed origin (or a subdomain of a wildcard) is served; another or none gets 403 without CORS headers', async () => {
      const k = await key({ origins: [APP, 'https://*.example.org'] });
      const ok = await call(k, { origin: APP });
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('access-control-allow-origin')).to.equal(APP);
      expect((await call(k, { origin: 'https://shop.example.org' })).status).to.equal(200);
      const before = await metric('origin');
      const other = await call(k, { origin: 'https://evil.example' });
      refusedWith(other, /not permitted from this origin/);
      // No CORS headers: a page on that origin cannot even read the refusal.
      expect(other.headers.get('access-control-allow-origin')).to.equal(null);
      refusedWith(await call(k), /has no Origin header/);
      expect(await metric('origin')).to.equal(before + 2);
    });

    it('referrers: pages under the prefix are served, others and none refused', async () => {
      const k = await key({ referrers: [`${APP}/shop/`] });
      const rest = (referer?: string) =>
        get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: k, ...(referer === undefined ? {} : { referer }) });
      expect((await rest(`${APP}/shop/cart?item=1`)).status).to.equal(200);
      const other = await rest(`${APP}/admin/`);
      expect(other.status).to.equal(403);
      expect(other.json).to.deep.equal({ error: { code: -32004, message: 'API key not permitted from this page (Referer)' } });
      expect((await rest()).status).to.equal(403);
    });

    it('ips: IPv4 and IPv6 ranges, the client read from X-Forwarded-For past the trusted proxies', async () => {
      const k = await key({ ips: ['198.51.100.0/24', '2001:db8::/32'] });
      // forged entry, the client (as the CDN saw it), the CDN (as the load balancer saw it)
      expect((await call(k, { 'x-forwarded-for': '10.9.9.9, 198.51.100.7, 172.16.0.1' })).status).to.equal(200);
      expect((await call(k, { 'x-forwarded-for': '2001:db8:1::5, 172.16.0.1' })).status).to.equal(200);
      // A client cannot place itself in range by writing the entry further left.
      refusedWith(
        await call(k, { 'x-forwarded-for': '198.51.100.7, 203.0.113.9, 172.16.0.1' }),
        /not permitted from address 203\.0\.113\.9$/,
      );
      refusedWith(await call(k, { 'x-forwarded-for': '2001:db9::1, 172.16.0.1' }), /not permitted from address 2001:db9::1/);
      // Without the header the address is the peer's (loopback here).
      refusedWith(await call(k), /not permitted from address (::ffff:)?127\.0\.0\.1/);
    });

    it('userAgents: patterns of the whole User-Agent', async () => {
      const k = await key({ userAgents: ['MyApp/*'] });
      expect((await call(k, { 'user-agent': 'MyApp/2.1 (linux)' })).status).to.equal(200);
      refusedWith(await call(k, { 'user-agent': 'curl/8.5.0' }), /User-Agent/);
    });

    it('contracts: calls naming only listed contracts reach a node; others, and calls naming none, are refused item by item', async () => {
      const k = await key({ contracts: [A] });
      const body = (method: string, params: unknown[], id: number) => ({ jsonrpc: '2.0', id, method, params });
      const ok = await call(k, {}, body('eth_call', [{ to: A, data: '0x70a08231' }, 'latest'], 1));
      expect(ok.status).to.equal(200);
      expect(ok.json).to.have.property('result');
      refusedWith(await call(k, {}, body('eth_call', [{ to: B, data: '0x' }, 'latest'], 2)), new RegExp(`call contract ${B}`));
      refusedWith(await call(k, {}, body('eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x2' }], 3)), /names no contract address/);
      const marker = '0x1234567';
      const batch = await call(k, {}, [
        body('eth_getLogs', [{ address: [A], fromBlock: 'latest' }], 4),
        body('eth_estimateGas', [{ to: B, data: marker }], 5),
        body('eth_getBalance', [B, 'latest'], 6),
      ]);
      expect(batch.status).to.equal(200);
      const [logs, gas, balance] = batch.json as Array<{ id: number; result?: unknown; error?: { code: number } }>;
      expect(logs).to.have.property('result');
      expect(gas?.error?.code).to.equal(-32004);
      // Balances and other reads name no contract: a contracts list leaves them alone.
      expect(balance).to.have.property('result');
      expect(clientCalls(stack.devnet, 'l1-full-1', marker)).to.equal(0);
      expect(await metric('contract')).to.be.at.least(3);
    });

    it('costs nothing against limits when refused', async () => {
      const k = await key({ origins: [APP] }, 'tight');
      for (let i = 0; i < 5; i++) expect((await call(k, { origin: 'https://evil.example' })).status).to.equal(403);
      // The tier allows one call at this instant: it is still there.
      const ok = await call(k, { origin: APP });
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('ratelimit-remaining')).to.equal('0');
      expect((await call(k, { origin: APP })).status).to.equal(429);
    });
  });

  describe('WebSocket', () => {
    const open = async (k: string, headers: Record<string, string> = {}): Promise<RpcSocket> => {
      const s = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: { apikey: k, ...headers } });
      sockets.push(s);
      return s;
    };

    it('checks origins, addresses and user agents at the upgrade (referrers do not apply)', async () => {
      const k = await key({ origins: [APP], ips: ['198.51.100.0/24'], referrers: [`${APP}/x/`], userAgents: ['*Chrome*'] });
      const good = { origin: APP, 'x-forwarded-for': '198.51.100.7, 172.16.0.1', 'user-agent': 'Mozilla/5.0 Chrome/140' };
      const s = await open(k, good);
      expect((await s.call('eth_blockNumber')).result).to.match(/^0x/);
      const url = `${wsUrl(stack.gateway.url)}/l1`;
      for (const [over, message] of [
        [{ origin: 'https://evil.example' }, /origin/],
        [{ origin: '' }, /no Origin header/],
        [{ 'x-forwarded-for': '203.0.113.9, 172.16.0.1' }, /address 203\.0\.113\.9/],
        [{ 'user-agent': 'curl/8' }, /User-Agent/],
      ] as const) {
        const headers: Record<string, string> = { apikey: k, ...good, ...over };
        if (headers.origin === '') delete headers.origin;
        const r = await refusal(url, headers);
        expect(r.status, JSON.stringify(over)).to.equal(403);
        expect(JSON.parse(r.body).error.message).to.match(message);
      }
    });

    it('checks the contracts of every message, subscriptions included', async () => {
      const k = await key({ contracts: [A] });
      const s = await open(k);
      expect((await s.call('eth_call', [{ to: A, data: '0x' }, 'latest'])).result).to.be.a('string');
      expect((await s.call('eth_call', [{ to: B, data: '0x' }, 'latest'])).error).to.deep.equal({
        code: -32004,
        message: `API key not permitted to call contract ${B}`,
      });
      expect((await s.call('eth_subscribe', ['logs', { address: A }])).result).to.be.a('string');
      expect((await s.call('eth_subscribe', ['logs', { topics: [] }])).error?.code).to.equal(-32004);
      expect((await s.call('eth_subscribe', ['logs', { address: [A, B] }])).error?.code).to.equal(-32004);
      expect((await s.call('eth_subscribe', ['newHeads'])).result).to.be.a('string');
    });

    it('ends an open connection (1008) when the key’s new restrictions no longer allow its client', async () => {
      const { id, value } = await stack.createKey('enterprise');
      const s = await open(value, { origin: APP });
      expect((await s.call('eth_chainId')).result).to.be.a('string');
      const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      // Still allowed: the connection stays.
      let res = await fetch(stack.admin(`/admin/keys/${id}/restrict`), {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ origins: [APP] }),
      });
      expect(res.status).to.equal(200);
      expect((await s.call('eth_chainId')).result).to.be.a('string');
      res = await fetch(stack.admin(`/admin/keys/${id}/restrict`), {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ origins: ['https://other.example'] }),
      });
      expect(res.status).to.equal(200);
      expect((await s.closed).code).to.equal(1008);
    });
  });

  describe('gRPC', () => {
    const unary = async (k: string, md: Record<string, string> = {}): Promise<{ code: number; details: string }> => {
      const { code, details } = await grpcUnary(grpcClient, PARAMS, { apikey: k, ...md });
      return { code, details };
    };

    it('checks addresses (x-forwarded-for metadata behind the proxies) and user agents', async () => {
      const k = await key({ ips: ['2001:db8::/32'], userAgents: ['grpc-node-js/*'] });
      expect(await unary(k, { 'x-forwarded-for': '2001:db8::9, 172.16.0.1' })).to.deep.equal({ code: 0, details: '' });
      expect(await unary(k, { 'x-forwarded-for': '2001:db9::9, 172.16.0.1' })).to.deep.equal({
        code: 7,
        details: 'API key not permitted from address 2001:db9::9',
      });
      const agents = await key({ userAgents: ['MyApp/*'] });
      expect(await unary(agents)).to.deep.equal({ code: 7, details: 'API key not permitted for this User-Agent' });
    });

    it('does not apply origins or referrers: gRPC has no browsers', async () => {
      const k = await key({ origins: [APP], referrers: [`${APP}/`] });
      expect((await unary(k)).code).to.equal(0);
      expect((await unary(k, { origin: 'https://evil.example' })).code).to.equal(0);
    });
  });

  describe('metrics', () => {
    it('counts refusals by reason, on bounded labels', async () => {
      const text = (await get(stack.admin('/metrics'))).text;
      const reasons = [...text.matchAll(/noderouter_restriction_refusals_total\{chain="[^"]+",reason="([^"]+)"\}/g)].map((m) => m[1]);
      expect(new Set(reasons)).to.deep.equal(new Set(['origin', 'referrer', 'ip', 'user_agent', 'contract']));
    });
  });
});
