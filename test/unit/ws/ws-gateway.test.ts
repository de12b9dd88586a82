// WebSocket upgrades on the traffic listener (src/transports/ws/ws-gateway.ts), with real
// `ws` clients against an HTTP server the gateway is attached to, in front of the call
// path on the scripted plugin (with pub/sub) and a test node, and keys in a real file
// store. What a client sees: which upgrades complete, the HTTP answer of each refusal
// (draining, a path with no WebSocket endpoint, a page's origin, the key, the key's and
// the account's connection caps, a slot store that is away), that every slot taken is
// given back (a client gone during the key lookup, a malformed handshake), and how open
// connections end (the key revoked, a reload, missed pings, shutdown).

import { expect } from 'chai';
import { idFirstUnsubscribe } from '../../../src/sdk/subscriptions.js';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import WebSocket from 'ws';
import type { ChainRuntime } from '../../../src/chain/runtime.js';
import type { ServerConfig, TierConfig } from '../../../src/config/types.js';
import { GatewayError } from '../../../src/errors.js';
import { TrustedProxies } from '../../../src/exec/client-address.js';
import { silentLogger } from '../../../src/ops/log.js';
import { MemoryConnectionSlots } from '../../../src/quota/connection-slots.js';
import { EndpointTable } from '../../../src/transports/shared/endpoints.js';
import { WsGateway } from '../../../src/transports/ws/ws-gateway.js';
import { bench, chainConfig, item, scriptedPlugin, serverConfig, type Bench } from '../../support/chain.js';
import { testKeys, type TestKeys } from '../../support/keys.js';
import { rawRequest } from '../../support/raw-http.js';
import { UNLIMITED } from '../../support/tiers.js';
import { echoNode, startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { until } from '../../support/until.js';
import { refusal, RpcSocket } from '../../support/ws-client.js';

const APP = 'https://app.example';

/** A pub/sub family's subscription methods: all the gateway needs to serve the endpoint over WebSocket. */
const PUBSUB = {
  subscriptions: {
    methods: { t_subscribe: 't_unsubscribe' },
    newId: () => '"0x1"',
    unknownId: { code: -32000, message: 'subscription not found' },
    unsubscribe: idFirstUnsubscribe,
  },
};

/** Slots that fail (the store behind them away) for the slot sets `failing` names. */
class FlakySlots extends MemoryConnectionSlots {
  failing: (set: string) => boolean = () => false;

  override acquire(keyId: string, slot: string, cap: number): Promise<boolean> {
    if (this.failing(keyId)) return Promise.reject(new GatewayError('UNAVAILABLE', { message: 'Connection slots unavailable' }));
    return super.acquire(keyId, slot, cap);
  }
}

describe('WebSocket gateway (src/transports/ws/ws-gateway.ts)', () => {
  let node: RpcNode;
  let b: Bench;
  let plain: Bench;
  let keys: TestKeys;
  let slots: FlakySlots;
  let limits: ServerConfig;
  let draining: boolean;
  let table: EndpointTable<ChainRuntime>;
  let runtimes: Map<string, ChainRuntime>;
  let gateway: WsGateway;
  let http: Server;
  let url: string;
  /** The listener's side of every connection. */
  let accepted: Socket[];
  const sockets: RpcSocket[] = [];

  /** The tier every key is on, from now on. */
  const tier = (over: Partial<TierConfig>): void => void b.principal(over);

  async function open(path: string, headers: Record<string, string> = {}, options: WebSocket.ClientOptions = {}): Promise<RpcSocket> {
    const s = await RpcSocket.open(`${url}${path}`, { ...options, headers });
    sockets.push(s);
    return s;
  }

  /** Whether an upgrade with the key completes now (the connection is kept). */
  async function connects(value: string): Promise<boolean> {
    const s = await RpcSocket.open(`${url}/c`, { headers: { apikey: value } }).catch(() => undefined);
    if (s !== undefined) sockets.push(s);
    return s !== undefined;
  }

  /** Connections of the endpoint, as the gauge shows them. */
  async function gauge(): Promise<number> {
    const text = await b.metrics.registry.metrics();
    return Number(/noderouter_ws_connections\{chain="c"\} (\d+)/.exec(text)?.[1] ?? 0);
  }

  async function counted(outcome: string): Promise<number> {
    const requests = await b.metrics.requests.get();
    return requests.values.filter((v) => v.labels.transport === 'ws' && v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
  }

  beforeEach(async () => {
    node = await startRpcNode(echoNode('n'));
    const nodes = [{ name: 'n', url: node.url, role: 'full' as const }];
    b = await bench(await chainConfig(nodes, `    cors: { origins: ["${APP}"] }`), scriptedPlugin({}, PUBSUB));
    plain = await bench(await chainConfig(nodes), scriptedPlugin());
    tier({ wsConnections: 10 });
    const proxies = new TrustedProxies([]);
    keys = await testKeys(b, () => proxies);
    slots = new FlakySlots();
    limits = { ...(await serverConfig()), wsPingIntervalMs: 100 };
    draining = false;
    table = new EndpointTable([
      { path: '/c', host: undefined, target: b.rt },
      { path: '/plain', host: undefined, target: plain.rt },
    ]);
    runtimes = new Map([['c', b.rt]]);
    gateway = new WsGateway({
      endpoints: () => table,
      runtime: (name) => runtimes.get(name),
      identifier: keys.identifier,
      keys: keys.cache,
      store: keys.store,
      slots,
      access: b.access,
      path: b.path,
      metrics: b.metrics,
      logger: silentLogger,
      now: Date.now,
      draining: () => draining,
      limits: () => limits,
      trustedProxies: () => proxies,
    });
    http = createServer((_req, res) => res.writeHead(404).end());
    gateway.attach(http);
    accepted = [];
    http.on('connection', (s: Socket) => void accepted.push(s));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    for (const s of sockets.splice(0)) s.ws.terminate();
    await gateway.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
    await b.close();
    await plain.close();
    await keys.close();
    await node.close();
  });

  it('takes the key from the apikey header or query parameter; calls reach the node, the key does not', async () => {
    const { value } = await keys.create();
    const byHeader = await open('/c', { apikey: value });
    const byQuery = await open(`/c/?apikey=${value}`);
    for (const s of [byHeader, byQuery]) expect((await s.call('eth_chainId')).result).to.equal('n:eth_chainId');
    expect(gateway.connections).to.equal(2);
    expect(await gauge()).to.equal(2);
    const calls = node.received.filter((r) => r.body.includes('eth_chainId'));
    expect(calls).to.have.length(2);
    for (const r of calls) {
      expect(r.headers.apikey).to.equal(undefined);
      expect(r.path + r.body).to.not.include(value);
    }
  });

  it('refuses a missing, unknown or doubled key with 401 in the chain’s JSON-RPC shape, and counts it', async () => {
    const { value } = await keys.create();
    const other = await keys.create();
    const cases: Array<[string, Record<string, string>]> = [
      ['/c', {}],
      ['/c', { apikey: `nrk_${'0'.repeat(32)}` }],
      [`/c?apikey=${value}`, { apikey: other.value }],
    ];
    for (const [path, headers] of cases) {
      const r = await refusal(`${url}${path}`, headers);
      expect(r.status, path).to.equal(401);
      expect(r.headers['content-type']).to.equal('application/json');
      const body = JSON.parse(r.body) as { jsonrpc: string; id: null; error: { code: number } };
      expect(body).to.deep.include({ jsonrpc: '2.0', id: null });
      expect(body.error.code).to.equal(-32016);
    }
    expect(await counted('missing_key')).to.equal(1);
    expect(gateway.connections).to.equal(0);
    expect(node.received).to.have.length(0);
  });

  it('refuses a key not permitted on this chain with 403', async () => {
    const { value } = await keys.create('acct-1', ['elsewhere']);
    const r = await refusal(`${url}/c`, { apikey: value });
    expect(r.status).to.equal(403);
    expect((JSON.parse(r.body) as { error: { code: number } }).error.code).to.equal(-32004);
    expect(await counted('forbidden')).to.equal(1);
  });

  it('answers 404 in the REST shape, before any key is read, where no endpoint serves WebSocket', async () => {
    for (const path of ['/nowhere', '/c/sub', '/plain']) {
      const r = await refusal(`${url}${path}`, { apikey: `nrk_${'0'.repeat(32)}` });
      expect(r.status, path).to.equal(404);
      expect(JSON.parse(r.body), path).to.deep.equal({ error: { code: -32601, message: 'No WebSocket endpoint at this address' } });
    }
    expect(keys.lookups).to.equal(0);
  });

  it('refuses a path with an encoded slash, or longer than server.maxPathLength, with 400', async () => {
    const slash = await refusal(`${url}/c%2Fx`);
    expect(slash.status).to.equal(400);
    expect(JSON.parse(slash.body)).to.deep.equal({
      error: { code: -32600, message: 'Encoded slashes and backslashes are not allowed in paths' },
    });
    limits = { ...limits, maxPathLength: 64 };
    const long = await refusal(`${url}/c/${'a'.repeat(64)}`);
    expect(long.status).to.equal(400);
    expect((JSON.parse(long.body) as { error: { message: string } }).error.message).to.equal('Request path is longer than 64 characters');
  });

  it('answers pages only from the endpoint’s CORS origins (403 before the key is looked up); clients without Origin are not pages', async () => {
    const { value } = await keys.create();
    const r = await refusal(`${url}/c`, { apikey: value, origin: 'https://evil.example' });
    expect(r.status).to.equal(403);
    expect(JSON.parse(r.body)).to.deep.equal({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32004, message: 'This endpoint does not answer pages from this origin' },
    });
    expect(keys.lookups).to.equal(0);
    await open('/c', { apikey: value, origin: APP });
    await open('/c', { apikey: value });
    expect(gateway.connections).to.equal(2);
  });

  it('caps a key’s connections at its tier’s wsConnections (429, a rejection), and takes a new one once one closes', async () => {
    tier({ wsConnections: 1 });
    const { value } = await keys.create();
    const first = await open('/c', { apikey: value });
    const r = await refusal(`${url}/c`, { apikey: value });
    expect(r.status).to.equal(429);
    expect((JSON.parse(r.body) as { error: unknown }).error).to.deep.equal({
      code: -32005,
      message: "WebSocket connections of this key are at its tier's limit of 1",
    });
    const rejections = await b.metrics.rejections.get();
    expect(rejections.values.find((v) => v.labels.reason === 'connections')?.labels).to.deep.include({ chain: 'c', tier: 't' });
    await first.close();
    await until(() => gateway.connections === 0, { what: 'the first connection is gone' });
    expect(await gauge()).to.equal(0);
    await open('/c', { apikey: value });
  });

  it('caps an account’s connections over all its keys, giving back the refused key’s own slot', async () => {
    tier({ wsConnections: 1, account: { ...UNLIMITED, wsConnections: 1 } });
    const one = await keys.create('acct-1');
    const two = await keys.create('acct-1');
    const elsewhere = await keys.create('acct-2');
    const first = await open('/c', { apikey: one.value });
    const r = await refusal(`${url}/c`, { apikey: two.value });
    expect(r.status).to.equal(429);
    expect((JSON.parse(r.body) as { error: { message: string } }).error.message).to.equal(
      "WebSocket connections of this account are at its tier's limit of 1",
    );
    await open('/c', { apikey: elsewhere.value });
    await first.close();
    // The second key is at its own cap of 1 too: it connects only if the refusal gave its slot back.
    await until(() => connects(two.value), { what: 'the second key connects' });
  });

  it('refuses with 503 while the slot store is away, giving back the key’s slot when only the account’s set fails', async () => {
    tier({ wsConnections: 1, account: { ...UNLIMITED, wsConnections: 5 } });
    const { value } = await keys.create();
    slots.failing = () => true;
    const away = await refusal(`${url}/c`, { apikey: value });
    expect(away.status).to.equal(503);
    expect((JSON.parse(away.body) as { error: { message: string } }).error.message).to.equal('Connection slots unavailable');
    slots.failing = (set) => set.startsWith('account/');
    expect((await refusal(`${url}/c`, { apikey: value })).status).to.equal(503);
    slots.failing = () => false;
    await open('/c', { apikey: value });
    expect(await counted('unavailable')).to.equal(2);
  });

  it('gives the slot back when the client leaves during the key lookup, or its handshake is malformed', async () => {
    tier({ wsConnections: 1 });
    const { value } = await keys.create();
    const answer = keys.hold();
    const port = new URL(url.replace(/^ws/, 'http')).port;
    const leaving = connect(Number(port), '127.0.0.1');
    leaving.on('error', () => undefined);
    leaving.write(
      `GET /c HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\napikey: ${value}\r\n\r\n`,
    );
    await until(() => keys.lookups === 1, { what: 'the key is looked up' });
    // A reset, so the listener's side is destroyed at once (a FIN would leave it half open).
    leaving.resetAndDestroy();
    await until(() => accepted.every((s) => s.destroyed), { what: 'the gateway sees the client gone' });
    answer();
    // No Sec-WebSocket-Key: ws refuses the handshake itself, after the key took its slot.
    const malformed = await rawRequest(
      url.replace(/^ws/, 'http'),
      `GET /c HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\napikey: ${value}\r\n\r\n`,
    );
    expect(malformed.status).to.equal(400);
    await until(() => connects(value), { what: 'the key connects again' });
    expect(gateway.connections).to.equal(1);
  });

  it('closes a key’s connections with 1008 when the store revokes it, and leaves other keys’ open', async () => {
    const revoked = await keys.create();
    const kept = await keys.create();
    const a = await open('/c', { apikey: revoked.value });
    const other = await open('/c', { apikey: kept.value });
    await keys.store.revoke(revoked.id);
    expect(await a.closed).to.deep.equal({ code: 1008, reason: 'API key revoked or expired' });
    expect((await other.call('eth_chainId')).result).to.equal('n:eth_chainId');
    expect((await refusal(`${url}/c`, { apikey: revoked.value })).status).to.equal(401);
  });

  it('applies a reload’s wsMaxMessageBytes to connections made after it, and closes connections of a removed endpoint with 1001', async () => {
    const { value } = await keys.create();
    const before = await open('/c', { apikey: value });
    limits = { ...limits, wsMaxMessageBytes: 1024 };
    const after = await open('/c', { apikey: value });
    const big = item('1', 'eth_call', ['x'.repeat(2_000)]);
    expect((await before.send(big, '1')).result).to.equal('n:eth_call');
    after.ws.send(big);
    expect((await after.closed).code).to.equal(1009);
    // The reload removes the endpoint: the next sweep closes its connections, new upgrades find nothing.
    runtimes.delete('c');
    table = new EndpointTable([]);
    expect(await before.closed).to.deep.equal({ code: 1001, reason: 'Endpoint removed' });
    expect((await refusal(`${url}/c`, { apikey: value })).status).to.equal(404);
  });

  it('pings on every server.wsPingIntervalMs and drops a client that stops answering (1006)', async () => {
    const { value } = await keys.create();
    const answering = await open('/c', { apikey: value });
    const silent = await open('/c', { apikey: value }, { autoPong: false });
    expect((await silent.closed).code).to.equal(1006);
    expect(answering.ws.readyState).to.equal(WebSocket.OPEN);
    await until(() => gateway.connections === 1, { what: 'the silent connection is counted out' });
  });

  it('refuses upgrades with 503 and retry-after while draining, before any key is read', async () => {
    const { value } = await keys.create();
    draining = true;
    const r = await refusal(`${url}/c`, { apikey: value });
    expect(r.status).to.equal(503);
    expect(r.headers['retry-after']).to.equal('1');
    expect(JSON.parse(r.body)).to.deep.equal({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Gateway is shutting down' } });
    expect(keys.lookups).to.equal(0);
  });

  it('closes every connection with 1001 on shutdown, then refuses upgrades with 503', async () => {
    const { value } = await keys.create();
    const conns = [await open('/c', { apikey: value }), await open('/c', { apikey: value })];
    await gateway.close();
    for (const s of conns) expect(await s.closed).to.deep.equal({ code: 1001, reason: 'Gateway shutting down' });
    expect(gateway.connections).to.equal(0);
    expect((await refusal(`${url}/c`, { apikey: value })).status).to.equal(503);
  });
});
