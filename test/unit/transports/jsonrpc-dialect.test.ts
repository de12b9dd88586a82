// A JSON-RPC 1.0 endpoint through the real call path (answerJsonRpc over a chain
// runtime of the scripted plugin in the 1.0 dialect, a 1.0 node on loopback, and a
// WebSocket session): nodes' answers come back as they sent them, and everything the
// gateway writes itself (refused items and requests, table errors, cache hits, shared
// answers, node-state misses) is `{"result","error","id"}`, never "jsonrpc":"2.0". A 2.0
// endpoint of the same plugin answers as before.

import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import type { KeyPermissions } from '../../../src/auth/key-store.js';
import { newOutcome } from '../../../src/exec/request-record.js';
import evm from '../../../plugins/evm/index.js';
import { startDevnet, type Devnet } from '../../../src/devnet/index.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import { silentLogger } from '../../../src/ops/log.js';
import type { Routing, StateConvention, SubscriptionCodec } from '../../../src/plugin/contract.js';
import { MemoryConnectionSlots } from '../../../src/quota/connection-slots.js';
import { answerJsonRpc, type RpcAnswer } from '../../../src/transports/shared/jsonrpc-answer.js';
import { WsSession } from '../../../src/transports/ws/ws-session.js';
import { bench, chainConfig, item, legacyItem, scriptedPlugin, type Bench } from '../../support/chain.js';
import { legacyRpcHandler, startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { until } from '../../support/until.js';

const ROUTES: Readonly<Record<string, Partial<Routing>>> = {
  cached: { cacheTtlMs: 60_000 },
  uses_filter: { state: { role: 'use', id: '"0xgone"' } },
};

const STATE: StateConvention = { notFound: { code: -32000, message: 'filter not found' }, newId: () => '"0x1"', idleMs: 60_000 };

/** Every object of an answer body (a batch's items, or the one object). */
function objects(body: string | null): Array<Record<string, unknown>> {
  const value = JSON.parse(body ?? 'null') as unknown;
  return (Array.isArray(value) ? value : [value]) as Array<Record<string, unknown>>;
}

/** The 1.0 shape: result, error and id, one of result and error null, and no "jsonrpc". */
function expect10(o: Record<string, unknown>): void {
  expect(Object.keys(o).sort()).to.deep.equal(['error', 'id', 'result']);
  expect(o.result === null || o.error === null).to.equal(true);
}

describe('JSON-RPC 1.0 endpoints (JsonRpcCodec.dialect)', () => {
  let node: RpcNode;
  let b: Bench;

  /** The answer to `body` for a key of a tier like `tier` with `permissions`, as HTTP and WebSocket calls get it. */
  async function ask(
    body: string,
    tier: Parameters<Bench['principal']>[0] = {},
    permissions: Partial<KeyPermissions> = {},
  ): Promise<RpcAnswer> {
    const request = b.rt.handler.jsonrpc?.parse(body);
    if (request === undefined) throw new Error('no codec');
    const principal = b.principal(tier, permissions);
    return answerJsonRpc(b.path, { chain: b.rt, principal, request, deadline: Date.now() + 5_000, trace: newOutcome() });
  }

  beforeEach(async () => {
    node = await startRpcNode(
      legacyRpcHandler((method) =>
        method === 'fails' ? { error: { code: -8, message: 'Block height out of range' } } : { result: `n:${method}` },
      ),
    );
    const config = await chainConfig([{ name: 'n', url: node.url, role: 'full' }], '    cache: memory');
    b = await bench(config, scriptedPlugin(ROUTES, { dialect: '1.0', state: STATE }));
  });

  afterEach(async () => {
    await b.close();
    await node.close();
  });

  it('relays the node’s answers as it sent them, and answers an item without id under id null', async () => {
    const one = await ask(legacyItem('"curltest"', 'getblockcount'));
    expect(one).to.include({ status: 200, body: '{"result":"n:getblockcount","error":null,"id":"curltest"}' });
    expect(node.bodies()).to.deep.equal(['{"method":"getblockcount","params":[],"id":"curltest"}']);
    const noId = await ask(legacyItem(undefined, 'getblockcount'));
    expect(noId.body).to.equal('{"result":"n:getblockcount","error":null,"id":null}');
    // A chain error is the node's own, relayed.
    const failed = await ask(legacyItem('2', 'fails', [99]));
    expect(failed.body).to.equal('{"result":null,"error":{"code":-8,"message":"Block height out of range"},"id":2}');
  });

  it('sends batch items to the node as the client wrote them, under the gateway’s ids, and answers under the client’s', async () => {
    const a = await ask(`[${legacyItem('"x"', 'one')},${legacyItem('"x"', 'two')}]`);
    expect(a.body).to.equal('[{"result":"n:one","error":null,"id":"x"},{"result":"n:two","error":null,"id":"x"}]');
    expect(node.bodies()).to.deep.equal(['[{"method":"one","params":[],"id":0},{"method":"two","params":[],"id":1}]']);
  });

  it('refuses invalid items, forbidden calls and whole requests in the 1.0 shape', async () => {
    const deny = { deny: ['secret'] };
    const a = await ask(`[{"jsonrpc":"1.1","method":"m","id":1},${legacyItem('2', 'secret')},${legacyItem('3', 'ok')}]`, {}, deny);
    const [bad, forbidden, ok] = objects(a.body);
    for (const o of [bad, forbidden, ok]) expect10(o as Record<string, unknown>);
    expect(bad).to.deep.equal({ result: null, error: { code: -32600, message: 'Invalid request: JSON-RPC version not supported' }, id: 1 });
    expect(forbidden).to.deep.equal({ result: null, error: { code: -32004, message: 'API key not permitted for this method' }, id: 2 });
    expect(ok).to.deep.equal({ result: 'n:ok', error: null, id: 3 });
    const refused = await ask(legacyItem('"s"', 'secret'), {}, deny);
    expect(refused).to.include({
      status: 403,
      body: '{"result":null,"error":{"code":-32004,"message":"API key not permitted for this method"},"id":"s"}',
    });
    // Over the tier's batch cap: one error for the whole request, id null.
    const whole = await ask(`[${legacyItem('1', 'a')},${legacyItem('2', 'b')}]`, { maxBatch: 1 });
    expect(whole.status).to.equal(413);
    const [only] = objects(whole.body);
    expect10(only as Record<string, unknown>);
    expect(only).to.deep.include({ result: null, id: null });
  });

  it('gives cache hits, shared answers and node-state misses in the 1.0 shape under the caller’s id', async () => {
    expect((await ask(legacyItem('1', 'cached', ['a']))).body).to.equal('{"result":"n:cached","error":null,"id":1}');
    const hit = await ask(legacyItem('"two"', 'cached', ['a']));
    expect(hit).to.include({ cache: 'HIT', body: '{"result":"n:cached","error":null,"id":"two"}' });
    // An answer shared with an identical call in flight, an error included, keeps the node's result or error.
    node.hold = true;
    const leader = ask(legacyItem('1', 'cached', ['b']));
    await until(() => node.received.length === 2, { what: 'the node has the first call' });
    const follower = ask(legacyItem('"f"', 'cached', ['b']));
    await until(async () => ((await b.metrics.coalesced.get()).values[0]?.value ?? 0) === 1, {
      what: 'the second call waits on the first',
    });
    node.release();
    expect((await follower).body).to.equal('{"result":"n:cached","error":null,"id":"f"}');
    await leader;
    const exchange = b.rt.jsonrpc;
    const [call] = b.calls(legacyItem('9', 'fails'));
    if (exchange === undefined || call === undefined) throw new Error('no exchange');
    expect(exchange.share('{"result":null,"error":{"code":-8,"message":"x"},"id":1}', call)).to.equal(
      '{"result":null,"error":{"code":-8,"message":"x"},"id":9}',
    );
    const miss = await ask(legacyItem('5', 'uses_filter', ['0xgone']));
    expect(miss.body).to.equal('{"result":null,"error":{"code":-32000,"message":"filter not found"},"id":5}');
  });

  it('leaves a 2.0 endpoint of the same plugin as it was', async () => {
    const strict = await bench(await chainConfig([{ name: 'n', url: node.url, role: 'full' }]), scriptedPlugin(ROUTES));
    try {
      const request = strict.rt.handler.jsonrpc?.parse(`[${legacyItem('1', 'm')},${item('2', 'fails')}]`);
      if (request === undefined) throw new Error('no codec');
      const a = await answerJsonRpc(strict.path, {
        chain: strict.rt,
        principal: strict.principal(),
        request,
        deadline: Date.now() + 5_000,
        trace: newOutcome(),
      });
      const [refused] = objects(a.body);
      expect(refused).to.deep.equal({
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32600, message: 'Invalid request: "jsonrpc" must be "2.0"' },
      });
      expect(node.bodies()).to.deep.equal(['{"jsonrpc":"2.0","id":2,"method":"fails"}']);
    } finally {
      await strict.close();
    }
  });

  describe('over WebSocket', () => {
    let http: Server;
    let wss: WebSocketServer;
    const sockets: WebSocket[] = [];

    /** A client connection to a session on `on`'s runtime, and the messages it gets. */
    async function connect(on: Bench): Promise<{ ws: WebSocket; messages: string[] }> {
      const principal = on.principal({ wsSubscriptions: 2 });
      wss.once(
        'connection',
        (socket) =>
          new WsSession(
            socket,
            {
              access: on.access,
              path: on.path,
              slots: new MemoryConnectionSlots(),
              runtime: () => on.rt,
              metrics: on.metrics,
              logger: silentLogger,
              now: Date.now,
              requestTimeoutMs: () => 5_000,
              maxBufferedBytes: () => 1 << 20,
              touch: () => undefined,
              restricted: () => undefined,
              ended: () => undefined,
              peer: { address: '192.0.2.7', userAgent: 'test', traceId: undefined },
            },
            'conn-1',
            on.rt.name,
            'hash',
            { record: principal.record, validUntil: Infinity },
            { origin: undefined, referer: undefined, userAgent: 'test', address: '192.0.2.7' },
          ),
      );
      const ws = new WebSocket(`ws://127.0.0.1:${(http.address() as AddressInfo).port}`);
      sockets.push(ws);
      const messages: string[] = [];
      ws.on('message', (d) => messages.push(d.toString()));
      await new Promise((resolve) => ws.once('open', resolve));
      return { ws, messages };
    }

    beforeEach(async () => {
      http = createServer();
      wss = new WebSocketServer({ server: http });
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    });

    afterEach(async () => {
      for (const ws of sockets.splice(0)) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    });

    it('answers messages and refuses unreadable ones in the 1.0 shape', async () => {
      const { ws, messages } = await connect(b);
      ws.send(legacyItem('1', 'getblockcount'));
      await until(() => messages.length === 1, { what: 'the call is answered' });
      ws.send('{"method":');
      await until(() => messages.length === 2, { what: 'the unreadable message is answered' });
      ws.send(Buffer.from(legacyItem('3', 'getblockcount')), { binary: true });
      await until(() => messages.length === 3, { what: 'the binary message is answered' });
      expect(messages[0]).to.equal('{"result":"n:getblockcount","error":null,"id":1}');
      const [parse, binary] = [objects(messages[1] as string)[0], objects(messages[2] as string)[0]];
      for (const o of [parse, binary]) expect10(o as Record<string, unknown>);
      expect(parse).to.deep.include({ result: null, id: null });
      expect((parse?.error as { code: number }).code).to.equal(-32700);
      expect(binary).to.deep.equal({ result: null, error: { code: -32600, message: 'Send JSON-RPC requests as text messages' }, id: null });
    });

    /** geth's subscriptions, as the EVM plugin declares them. */
    const geth = (): SubscriptionCodec => {
      const subscriptions = evm.create({ chain: 'c', options: {}, limits: DEFAULT_JSONRPC_LIMITS }).jsonrpc?.subscriptions;
      if (subscriptions === undefined) throw new Error('the EVM plugin has subscriptions');
      return subscriptions;
    };

    /** A 1.0 endpoint with these subscriptions, in front of one devnet EVM node that makes no block by itself. */
    async function pubsubOn(subscriptions: SubscriptionCodec): Promise<{ devnet: Devnet; pubsub: Bench }> {
      const devnet = await startDevnet([{ network: 'h', family: 'evm', name: 'a', role: 'full' }], { blockTimeMs: 0, noControl: true });
      const pubsub = await bench(
        await chainConfig([{ name: 'a', url: devnet.node('a').url, role: 'full' }]),
        scriptedPlugin({}, { dialect: '1.0', subscriptions }),
      );
      return { devnet, pubsub };
    }

    it('answers subscribe and unsubscribe calls and delivers notifications in the 1.0 shape', async () => {
      const subscriptions = geth();
      const { devnet, pubsub } = await pubsubOn(subscriptions);
      try {
        const { ws, messages } = await connect(pubsub);
        ws.send(legacyItem('1', 'eth_subscribe', ['newHeads']));
        await until(() => messages.length === 1, { what: 'the subscription is answered' });
        const subscribed = objects(messages[0] as string)[0] as Record<string, unknown>;
        expect10(subscribed);
        expect(subscribed).to.deep.include({ error: null, id: 1 });
        devnet.chains.get('h')?.advance(1);
        await until(() => messages.length === 2, { what: 'the new head is delivered' });
        const note = JSON.parse(messages[1] as string) as { method: string; params: { subscription: unknown }; id: null };
        expect(Object.keys(note)).to.deep.equal(['method', 'params', 'id']);
        expect(note).to.deep.include({ method: 'eth_subscription', id: null });
        expect(note.params.subscription).to.equal(subscribed.result);
        ws.send(legacyItem('2', 'eth_unsubscribe', [subscribed.result]));
        ws.send(legacyItem('3', 'eth_unsubscribe', ['0xnone']));
        await until(() => messages.length === 4, { what: 'both unsubscribes are answered' });
        expect(messages.slice(2)).to.have.members([
          '{"result":true,"error":null,"id":2}',
          `{"result":null,"error":${JSON.stringify(subscriptions?.unknownId)},"id":3}`,
        ]);
      } finally {
        await pubsub.close();
        await devnet.close();
      }
    });

    it('reads and answers an unsubscribe as the family’s convention says (SubscriptionCodec.unsubscribe)', async () => {
      const ours = geth();
      // A family that names the subscription in an object and answers "unsubscribed"; its nodes still take [id].
      const { devnet, pubsub } = await pubsubOn({
        ...ours,
        unsubscribe: {
          idOf: (params: unknown): string | undefined => {
            const id = (params as { subscription?: unknown } | null)?.subscription;
            return typeof id === 'string' ? JSON.stringify(id) : undefined;
          },
          params: (id: string): string => `[${id}]`,
          done: '"unsubscribed"',
        },
      });
      try {
        const { ws, messages } = await connect(pubsub);
        // Two subscriptions on the node: ending one leaves the node's socket open, so the node is sent an unsubscribe.
        ws.send(legacyItem('1', 'eth_subscribe', ['newHeads']));
        ws.send(legacyItem('9', 'eth_subscribe', ['newPendingTransactions']));
        await until(() => messages.length === 2, { what: 'both subscriptions are answered' });
        const answers = messages.map((m) => objects(m)[0] as { result: string; id: number });
        const id = (answers.find((a) => a.id === 1) as { result: string }).result;
        // geth's form names no subscription here: answered as an unknown one.
        ws.send(legacyItem('2', 'eth_unsubscribe', [id]));
        await until(() => messages.length === 3, { what: 'the first unsubscribe is answered' });
        ws.send(legacyItem('3', 'eth_unsubscribe', { subscription: id }));
        await until(() => messages.length === 4, { what: 'the second unsubscribe is answered' });
        expect(messages.slice(2)).to.deep.equal([
          `{"result":null,"error":${JSON.stringify(ours.unknownId)},"id":2}`,
          '{"result":"unsubscribed","error":null,"id":3}',
        ]);
        // The node's subscription ended with it: the node is sent its own unsubscribe, in the form its nodes take.
        await until(
          () => devnet.node('a').received.some((r) => r.method === 'WS' && /"eth_unsubscribe","params":\["0x[0-9a-f]+"\]/.test(r.body)),
          {
            what: 'the node is unsubscribed',
          },
        );
      } finally {
        await pubsub.close();
        await devnet.close();
      }
    });
  });
});
