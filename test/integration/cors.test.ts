// CORS on the traffic endpoints, as a browser would meet it (the requests a browser
// sends, made with fetch here; the real browser is browser-cors.test.ts): preflights
// answered without a key and before any lookup, answers of every kind (200, 401, 403,
// 404, 429) readable by an allowed page with the RateLimit-*, Retry-After and
// x-request-id headers exposed, pages of origins an endpoint does not answer refused
// before the key is looked up, per-chain lists over the server's, WebSocket upgrades
// checked for Origin, and nothing added for requests without Origin.

import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { refusal, RpcSocket, wsUrl } from '../support/ws-client.js';

const APP = 'https://app.example.com';
const L1: ChainSpec = { name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'l1-full-1', role: 'full' }] };
const PRIVATE: ChainSpec = {
  name: 'private',
  plugin: 'evm',
  path: '/private',
  extra: `    cors: { origins: ["${APP}"] }`,
  nodes: [{ name: 'private-full-1', role: 'full' }],
};
const REST: ChainSpec = { name: 'hub-rest', plugin: 'sdk-rest', path: '/hub/rest', nodes: [{ name: 'hub-rest-full-1', role: 'full' }] };
const TIERS = `
  tight: { rate: 1, burst: 1 }
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 1000, archive: true }
`;
const BLOCK = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };
const EXPOSED = 'ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after, x-request-id, x-cache';

function preflight(url: string, origin: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'apikey,content-type', ...headers },
  });
}

describe('CORS on the traffic endpoints', function () {
  this.timeout(30_000);
  let stack: Stack;
  const clock = Date.parse('2026-06-01T12:00:00Z');

  before(async () => {
    stack = await startStack({ chains: [L1, PRIVATE, REST], tiers: TIERS, now: () => clock, serverYaml: 'cors: { maxAgeSeconds: 600 }' });
  });
  after(() => stack?.close());

  it('answers a preflight 204 without a key, before any lookup or node', async () => {
    const before = stack.devnet.node('l1-full-1').received.length;
    const res = await preflight(stack.url('/l1'), 'https://any.example', {
      'access-control-request-headers': 'apikey, content-type, x-request-id, cookie',
      'x-request-id': 'pre-1',
    });
    expect(res.status).to.equal(204);
    expect(await res.text()).to.equal('');
    expect(Object.fromEntries([...res.headers].filter(([k]) => k.startsWith('access-control') || k === 'x-request-id'))).to.deep.equal({
      'access-control-allow-origin': 'https://any.example',
      'access-control-allow-methods': 'GET, POST',
      'access-control-allow-headers': 'apikey, content-type, x-request-id',
      'access-control-max-age': '600',
      'x-request-id': 'pre-1',
    });
    expect(res.headers.get('vary')).to.match(/origin/i);
    expect(res.headers.get('access-control-allow-credentials')).to.equal(null);
    expect(stack.devnet.node('l1-full-1').received.length).to.equal(before);
    // Chromium asks before a public page calls a private address: only an endpoint that lists the page's origin says yes ("*" does not).
    const pna = { 'access-control-request-private-network': 'true' };
    expect((await preflight(stack.url('/private'), APP, pna)).headers.get('access-control-allow-private-network')).to.equal('true');
    expect((await preflight(stack.url('/l1'), APP, pna)).headers.get('access-control-allow-private-network')).to.equal(null);
  });

  it('lets a page send the request headers the endpoint’s family declares: the height header on SDK REST, not on an EVM endpoint', async () => {
    const asked = { 'access-control-request-headers': 'apikey, content-type, x-cosmos-block-height' };
    const rest = await preflight(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), APP, asked);
    expect(rest.headers.get('access-control-allow-headers')).to.equal('apikey, content-type, x-cosmos-block-height');
    const evm = await preflight(stack.url('/l1'), APP, asked);
    expect(evm.headers.get('access-control-allow-headers')).to.equal('apikey, content-type');
  });

  it('makes answers of every kind readable by the page, with the rate headers exposed', async () => {
    const { value } = await stack.createKey('tight');
    const ok = await rpc(stack.url('/l1'), BLOCK, { apikey: value, origin: APP });
    expect(ok.status).to.equal(200);
    expect(ok.headers.get('access-control-allow-origin')).to.equal(APP);
    expect(ok.headers.get('access-control-expose-headers')).to.equal(EXPOSED);
    expect(ok.headers.get('vary')).to.equal('origin');
    expect(ok.headers.get('ratelimit-remaining')).to.equal('0');
    const limited = await rpc(stack.url('/l1'), BLOCK, { apikey: value, origin: APP });
    expect(limited.status).to.equal(429);
    expect(limited.headers.get('access-control-allow-origin')).to.equal(APP);
    expect(limited.headers.get('retry-after')).to.match(/^\d+$/);
    const missing = await rpc(stack.url('/l1'), BLOCK, { origin: APP });
    expect(missing.status).to.equal(401);
    expect(missing.headers.get('access-control-allow-origin')).to.equal(APP);
    const forbidden = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'admin_peers' }, { apikey: stack.key, origin: APP });
    expect(forbidden.headers.get('access-control-allow-origin')).to.equal(APP);
    const notFound = await get(stack.url('/nowhere'), { origin: APP });
    expect(notFound.status).to.equal(404);
    expect(notFound.headers.get('access-control-allow-origin')).to.equal(APP);
    const rest = await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: stack.key, origin: APP });
    expect(rest.status).to.equal(200);
    expect(rest.headers.get('access-control-allow-origin')).to.equal(APP);
  });

  it('adds nothing but Vary for a request without Origin', async () => {
    const res = await rpc(stack.url('/l1'), BLOCK, { apikey: stack.key });
    expect([...res.headers.keys()].filter((k) => k.startsWith('access-control'))).to.deep.equal([]);
    expect(res.headers.get('vary')).to.equal('origin');
  });

  it('refuses pages of origins an endpoint does not answer, before the key is looked up', async () => {
    const bad = await preflight(stack.url('/private'), 'https://evil.example');
    expect(bad.status).to.equal(403);
    expect(bad.headers.get('access-control-allow-origin')).to.equal(null);
    expect((await preflight(stack.url('/private'), APP)).status).to.equal(204);
    // An unknown key would be 401: the origin is refused first.
    const res = await rpc(stack.url('/private'), BLOCK, { apikey: 'nrk_unknownunknownunknownunknown12', origin: 'https://evil.example' });
    expect(res.status).to.equal(403);
    expect(res.json).to.deep.equal({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32004, message: 'This endpoint does not answer pages from this origin' },
    });
    expect(res.headers.get('access-control-allow-origin')).to.equal(null);
    expect((await rpc(stack.url('/private'), BLOCK, { apikey: stack.key, origin: APP })).status).to.equal(200);
    // Clients without Origin (servers, curl) are no page: served.
    expect((await rpc(stack.url('/private'), BLOCK, { apikey: stack.key })).status).to.equal(200);
    const ws = await refusal(`${wsUrl(stack.gateway.url)}/private`, { apikey: stack.key, origin: 'https://evil.example' });
    expect(ws.status).to.equal(403);
    const s = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/private`, { headers: { apikey: stack.key, origin: APP } });
    expect((await s.call('eth_chainId')).result).to.be.a('string');
    s.ws.terminate();
  });

  it('follows a reload of the origins', async () => {
    const text = await readFile(stack.configFile, 'utf8');
    expect(text).to.contain('cors: { maxAgeSeconds: 600 }');
    await writeFile(
      stack.configFile,
      text.replace('cors: { maxAgeSeconds: 600 }', 'cors: { maxAgeSeconds: 600, origins: ["https://new.example.com"] }'),
    );
    try {
      expect(await stack.gateway.reload()).to.equal(true);
      expect((await rpc(stack.url('/l1'), BLOCK, { apikey: stack.key, origin: APP })).status).to.equal(403);
      expect((await rpc(stack.url('/l1'), BLOCK, { apikey: stack.key, origin: 'https://new.example.com' })).status).to.equal(200);
      // The chain's own list stays its own.
      expect((await rpc(stack.url('/private'), BLOCK, { apikey: stack.key, origin: APP })).status).to.equal(200);
    } finally {
      await writeFile(stack.configFile, text);
      await stack.gateway.reload();
    }
  });
});
