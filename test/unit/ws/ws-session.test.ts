// One WebSocket connection's session (src/transports/ws/ws-session.ts) over a real `ws` socket
// pair on loopback, in front of the call path on the scripted plugin and a test node:
// messages answered as HTTP calls are, under the client's ids; a binary or unreadable
// message refused in the error table's shape; the key's last use recorded; and the
// connection closed with the code that says why: the key lapsed, its new restrictions
// refuse this client, the endpoint is gone, or the client stopped answering pings.

import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import type { KeyMatch } from '../../../src/auth/key-store.js';
import type { ChainRuntime } from '../../../src/chain/runtime.js';
import type { RestrictionReason } from '../../../src/exec/restrict.js';
import { silentLogger } from '../../../src/ops/log.js';
import { MemoryConnectionSlots } from '../../../src/quota/connection-slots.js';
import { WsSession } from '../../../src/transports/ws/ws-session.js';
import { bench, chainConfig, item, scriptedPlugin, type Bench } from '../../support/chain.js';
import { echoNode, startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { pause, until } from '../../support/until.js';

/** The client's side: answers and the close, as they come. */
interface Client {
  readonly ws: WebSocket;
  readonly messages: string[];
  readonly closed: Promise<{ code: number; reason: string }>;
}

describe('WebSocket session (src/transports/ws/ws-session.ts)', () => {
  let node: RpcNode;
  let b: Bench;
  let http: Server;
  let wss: WebSocketServer;
  let url: string;
  let now: number;
  let runtime: ChainRuntime | undefined;
  let touched: Array<[string, number]>;
  let restricted: RestrictionReason[];
  let ended: number[];
  let session: WsSession;
  const clients: WebSocket[] = [];

  /** A connection whose server side is a session for a key valid until `validUntil`, opened from 192.0.2.7. */
  async function open(match: (m: KeyMatch) => KeyMatch = (m) => m, options: WebSocket.ClientOptions = {}): Promise<Client> {
    const principal = b.principal({ wsSubscriptions: 2 });
    const accepted = new Promise<WsSession>((resolve) =>
      wss.once('connection', (ws) => {
        const s = new WsSession(
          ws,
          {
            access: b.access,
            path: b.path,
            slots: new MemoryConnectionSlots(),
            runtime: () => runtime,
            metrics: b.metrics,
            logger: silentLogger,
            now: () => now,
            requestTimeoutMs: () => 5_000,
            maxBufferedBytes: () => 1 << 20,
            touch: (id, at) => void touched.push([id, at]),
            restricted: (reason) => void restricted.push(reason),
            ended: (_s, code) => void ended.push(code),
            peer: { address: '192.0.2.7', userAgent: 'test', traceId: undefined },
          },
          'conn-1',
          b.rt.name,
          'hash-of-the-key',
          match({ record: principal.record, validUntil: Infinity }),
          { origin: undefined, referer: undefined, userAgent: 'test', address: '192.0.2.7' },
        );
        resolve(s);
      }),
    );
    const ws = new WebSocket(url, options);
    clients.push(ws);
    const messages: string[] = [];
    ws.on('message', (d) => messages.push(d.toString()));
    ws.on('error', () => undefined);
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve) => ws.once('open', resolve));
    session = await accepted;
    return { ws, messages, closed };
  }

  beforeEach(async () => {
    now = Date.parse('2026-06-01T12:00:00Z');
    touched = [];
    restricted = [];
    ended = [];
    node = await startRpcNode(echoNode('n'));
    b = await bench(await chainConfig([{ name: 'n', url: node.url, role: 'full' }]), scriptedPlugin());
    runtime = b.rt;
    http = createServer();
    wss = new WebSocketServer({ server: http });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    for (const ws of clients.splice(0)) ws.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    await new Promise<void>((resolve) => http.close(() => resolve()));
    await b.close();
    await node.close();
  });

  it('answers each message through the call path under the client’s id, and records the key’s last use', async () => {
    const c = await open();
    c.ws.send(item('"a"', 'eth_chainId'));
    c.ws.send(`[${item('7', 'eth_blockNumber')},${item('8', 'net_version')}]`);
    await until(() => c.messages.length === 2, { what: 'both answers arrive' });
    expect(c.messages).to.have.deep.members([
      '{"jsonrpc":"2.0","id":"a","result":"n:eth_chainId"}',
      '[{"jsonrpc":"2.0","id":7,"result":"n:eth_blockNumber"},{"jsonrpc":"2.0","id":8,"result":"n:net_version"}]',
    ]);
    expect(touched).to.deep.equal([
      [session.record.id, now],
      [session.record.id, now],
    ]);
    const requests = await b.metrics.requests.get();
    expect(requests.values.filter((v) => v.labels.transport === 'ws').reduce((n, v) => n + v.value, 0)).to.equal(2);
  });

  it('refuses a binary message and an unreadable one as invalid requests, keeping the connection', async () => {
    const c = await open();
    c.ws.send(Buffer.from(item('1', 'eth_chainId')), { binary: true });
    await until(() => c.messages.length === 1, { what: 'the binary message is answered' });
    c.ws.send('{"jsonrpc":"2.0","id":2,');
    await until(() => c.messages.length === 2, { what: 'the unreadable message is answered' });
    const errors = c.messages.map((m) => (JSON.parse(m) as { error: { code: number; message: string } }).error);
    expect(errors[0]).to.deep.equal({ code: -32600, message: 'Send JSON-RPC requests as text messages' });
    expect(errors[1]?.code).to.equal(-32700);
    expect(node.received).to.have.length(0);
    c.ws.send(item('3', 'eth_chainId'));
    await until(() => c.messages.length === 3, { what: 'a good message is still answered' });
  });

  it('closes with 1008 at the first message once the presented value has lapsed, and gives the connection back once', async () => {
    const c = await open((m) => ({ ...m, validUntil: now + 1_000 }));
    now += 1_000;
    c.ws.send(item('1', 'eth_chainId'));
    expect(await c.closed).to.deep.equal({ code: 1008, reason: 'API key revoked or expired' });
    await session.done;
    expect(ended).to.deep.equal([1008]);
    expect(node.received).to.have.length(0);
    const closes = await b.metrics.wsCloses.get();
    expect(closes.values.find((v) => v.labels.code === '1008')?.value).to.equal(1);
  });

  it('closes with 1008 when the store says the key is gone, or its new restrictions refuse this client', async () => {
    const gone = await open();
    session.refresh(undefined);
    expect(await gone.closed).to.deep.equal({ code: 1008, reason: 'API key revoked or expired' });
    const c = await open();
    // Still allowed from its address: nothing happens.
    session.refresh({ record: { ...session.record, restrictions: { ips: ['192.0.2.0/24'] } }, validUntil: Infinity });
    expect(restricted).to.deep.equal([]);
    session.refresh({ record: { ...session.record, restrictions: { ips: ['198.51.100.0/24'] } }, validUntil: Infinity });
    expect(await c.closed).to.deep.equal({ code: 1008, reason: 'API key restrictions no longer allow this client' });
    expect(restricted).to.deep.equal(['ip']);
  });

  it('pings on each sweep, keeps a client that answers, and cuts one that does not', async () => {
    const answering = await open();
    const kept = session;
    const silent = await open(undefined, { autoPong: false });
    const cut = session;
    for (const s of [kept, cut]) s.sweep();
    expect([kept.alive, cut.alive]).to.deep.equal([false, false]);
    await until(() => kept.alive, { what: 'the pong arrives' });
    // The silent client's pong would have come by now, as the other's did.
    await pause(50);
    expect(cut.alive).to.equal(false);
    for (const s of [kept, cut]) s.sweep();
    expect((await silent.closed).code).to.equal(1006);
    expect(answering.ws.readyState).to.equal(WebSocket.OPEN);
  });

  it('closes with 1001 when a sweep finds its endpoint removed by a reload', async () => {
    const c = await open();
    runtime = undefined;
    session.sweep();
    expect(await c.closed).to.deep.equal({ code: 1001, reason: 'Endpoint removed' });
  });
});
