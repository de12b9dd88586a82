// Issue 18, tried as an attacker would with a free key (and without one): archive state
// without archive access, breakers opened for everyone by the request's own failures,
// node administration methods, connection floods and auth guessing, clients that do
// not read, and HTTP/2 flood shapes on the gRPC listener. Each test asserts what the
// attacker gets and what other customers see.

import { expect } from 'chai';
import { connect as h2connect, constants, type ClientHttp2Session } from 'node:http2';
import { connect as tcpConnect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { frameMessage } from '../../src/grpc-wire/frames.js';
import { pb } from 'noderouter/devnet';
import { get, HUB_GRPC, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { pause, until } from '../support/until.js';

const TIERS = `
  free: { rate: unlimited, burst: unlimited, maxBatch: 100, archive: false, wsConnections: 4 }
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 1000, archive: true }
`;
const BREAKER = '    breaker: { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 60000, rollingWindowMs: 60000 }';

const L1: ChainSpec = {
  name: 'l1',
  plugin: 'evm',
  path: '/l1',
  extra: `    attemptTimeoutMs: 400\n${BREAKER}\n    hedge: { perSecond: 0 }\n    options: { openMethods: ["admin_nodeInfo"] }`,
  nodes: [
    { name: 'l1-full-1', role: 'full' },
    { name: 'l1-full-2', role: 'full' },
    { name: 'l1-full-3', role: 'full' },
    { name: 'l1-archive-1', role: 'archive' },
  ],
};
/** The same nodes behind an endpoint with a response cache. */
const L1_CACHED: ChainSpec = {
  name: 'l1c',
  plugin: 'evm',
  path: '/l1c',
  cache: 'memory',
  nodes: [
    { name: 'l1c-full-1', role: 'full', sameAs: 'l1-full-1' },
    { name: 'l1c-archive-1', role: 'archive', sameAs: 'l1-archive-1' },
  ],
};
const HUB_RPC: ChainSpec = {
  name: 'hub-rpc',
  plugin: 'sdk-rpc',
  path: '/hub/rpc',
  network: 'hub',
  nodes: [
    { name: 'hub-rpc-full-1', role: 'full' },
    { name: 'hub-rpc-archive-1', role: 'archive' },
  ],
};
const HUB_REST: ChainSpec = {
  name: 'hub-rest',
  plugin: 'sdk-rest',
  path: '/hub/rest',
  network: 'hub',
  nodes: [
    { name: 'hub-rest-full-1', role: 'full' },
    { name: 'hub-rest-archive-1', role: 'archive' },
  ],
};

const call = (method: string, params: unknown[] = [], id: unknown = 1): object => ({ jsonrpc: '2.0', id, method, params });

describe('a customer gets exactly their tier (attacks)', function () {
  this.timeout(30_000);
  let stack: Stack;
  let free: string;

  before(async () => {
    stack = await startStack({
      chains: [L1, L1_CACHED, HUB_RPC, HUB_REST, HUB_GRPC],
      tiers: TIERS,
      serverYaml:
        'maxResponseBytes: 8192, maxConnectionsPerClient: 40, wsMaxBufferedBytes: 65536, grpcMaxConcurrentStreams: 4, headersTimeoutMs: 300',
    });
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    free = (await stack.createKey('free')).value;
  });
  after(() => stack.close());

  const clear = (): void => {
    for (const n of stack.devnet.nodes.values()) n.clearReceived();
  };
  const reached = (name: string): number => stack.devnet.node(name).received.filter((r) => !r.body.includes('getBlockByNumber')).length;
  const l1 = (body: unknown, key = free): ReturnType<typeof rpc> => rpc(stack.url('/l1'), body, { apikey: key });
  const errorCode = (json: unknown): number | undefined => (json as { error?: { code: number } }).error?.code;
  const breakers = (chain: string): string[] =>
    (stack.gateway.runtimes().find((rt) => rt.name === chain)?.pool.nodes ?? []).map((n) => n.breakerState);

  describe('archive state without archive access', () => {
    it('a block hash from long ago: the full node says pruned, the key gets 403, the archive node is never asked', async () => {
      const old = await rpc(stack.url('/l1'), call('eth_getBlockByNumber', ['0x10', false]), { apikey: stack.key });
      const hash = (old.json as { result: { hash: string } }).result.hash;
      clear();
      const res = await l1(call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', { blockHash: hash }]));
      expect(res.status).to.equal(403);
      expect(errorCode(res.json)).to.equal(-32004);
      expect(reached('l1-archive-1')).to.equal(0);
      // The same call with archive access is answered by the archive node.
      const ok = await rpc(stack.url('/l1'), call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', { blockHash: hash }]), {
        apikey: stack.key,
      });
      expect((ok.json as { result?: string }).result).to.match(/^0x/);
      expect(reached('l1-archive-1')).to.equal(1);
    });

    it('an archive answer to a call by block hash is never cached for, nor shared with, a key without archive access', async () => {
      const old = await rpc(stack.url('/l1'), call('eth_getBlockByNumber', ['0x11', false]), { apikey: stack.key });
      const hash = (old.json as { result: { hash: string } }).result.hash;
      const body = call('eth_getCode', ['0x00000000000000000000000000000000000000aa', { blockHash: hash }]);
      const first = await rpc(stack.url('/l1c'), body, { apikey: stack.key });
      expect((first.json as { result?: string }).result).to.match(/^0x/);
      const again = await rpc(stack.url('/l1c'), body, { apikey: free });
      expect(again.status).to.equal(403);
      expect(errorCode(again.json)).to.equal(-32004);
      // At once, side by side: the one with archive access gets the state, the other 403.
      const [a, b] = await Promise.all([
        rpc(stack.url('/l1c'), body, { apikey: stack.key }),
        rpc(stack.url('/l1c'), body, { apikey: free }),
      ]);
      expect(a.status).to.equal(200);
      expect(b.status).to.equal(403);
    });

    it('a block number written 0X (Go nodes read it as hex) is routed as the old block it is', async () => {
      clear();
      const res = await l1(call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0X10']));
      expect(res.status).to.equal(403);
      expect(errorCode(res.json)).to.equal(-32004);
      const nodes = ['l1-full-1', 'l1-full-2', 'l1-full-3', 'l1-archive-1'];
      expect(nodes.map(reached)).to.deep.equal([0, 0, 0, 0]);
    });

    it('a REST height carried in the path (blocks/5) is an archive read', async () => {
      clear();
      const res = await get(stack.url('/hub/rest/cosmos/base/tendermint/v1beta1/blocks/5'), { apikey: free });
      expect(res.status).to.equal(403);
      expect((res.json as { error: { code: number } }).error.code).to.equal(-32004);
      expect(reached('hub-rest-archive-1') + reached('hub-rest-full-1')).to.equal(0);
      const recent = await get(
        stack.url(`/hub/rest/cosmos/base/tendermint/v1beta1/blocks/${stack.devnet.node('hub-rest-full-1').height()}`),
        {
          apikey: free,
        },
      );
      expect(recent.status).to.equal(200);
    });
  });

  describe('breakers', () => {
    it('a stream of calls too big for every node leaves every breaker closed for other customers', async () => {
      const wide = call('eth_getLogs', [{ fromBlock: '0x370', toBlock: 'latest' }]);
      for (let i = 0; i < 12; i++) {
        const res = await l1(wide);
        expect(res.status).to.equal(502);
      }
      expect(breakers('l1')).to.deep.equal(['closed', 'closed', 'closed', 'closed']);
      const other = await rpc(stack.url('/l1'), call('eth_blockNumber'), { apikey: stack.key });
      expect(other.status).to.equal(200);
    });

    it('a stream of calls that time out on every node leaves every breaker closed', async () => {
      for (const n of stack.devnet.nodes.values()) if (n.network === 'l1') await n.setFaults({ latencyMs: 1500 });
      try {
        for (let i = 0; i < 6; i++) expect((await l1(call('eth_chainId'))).status).to.equal(504);
      } finally {
        for (const n of stack.devnet.nodes.values()) if (n.network === 'l1') await n.clearFaults();
      }
      expect(breakers('l1')).to.deep.equal(['closed', 'closed', 'closed', 'closed']);
      expect((await l1(call('eth_chainId'))).status).to.equal(200);
    });

    it('a node that fails calls the others answer is the node’s own failure: its breaker opens', async () => {
      await stack.devnet.node('l1-full-2').setFaults({ latencyMs: 1500 });
      try {
        for (let i = 0; i < 12; i++) expect((await l1(call('eth_chainId'))).status).to.equal(200);
      } finally {
        await stack.devnet.node('l1-full-2').clearFaults();
      }
      expect(breakers('l1')).to.deep.equal(['closed', 'open', 'closed', 'closed']);
      for (const rt of stack.gateway.runtimes()) for (const n of rt.pool.nodes) n.breaker.close();
    });
  });

  describe('node administration', () => {
    it('is refused without reaching a node, on every form of the call', async () => {
      clear();
      for (const method of ['admin_peers', 'personal_unlockAccount', 'debug_setHead', 'miner_stop', 'engine_forkchoiceUpdatedV3']) {
        const res = await l1(call(method, ['0x1']));
        expect(res.status, method).to.equal(200);
        expect(errorCode(res.json), method).to.equal(-32601);
      }
      const uri = await get(stack.url('/hub/rpc/unsafe_flush_mempool'), { apikey: stack.key });
      expect((uri.json as { error: { code: number } }).error.code).to.equal(-32601);
      const posted = await rpc(stack.url('/hub/rpc'), call('dial_peers', [['a@b:1']]), { apikey: stack.key });
      expect(errorCode(posted.json)).to.equal(-32601);
      const all = [...stack.devnet.nodes.values()].flatMap((n) => n.received);
      expect(all.filter((r) => /admin_|personal_|debug_setHead|miner_|engine_|unsafe_|dial_peers/.test(r.path + r.body))).to.deep.equal([]);
    });

    it('is served where the operator opened it for the chain', async () => {
      clear();
      const res = await l1(call('admin_nodeInfo'));
      // The node's own answer (the devnet has no admin_ methods), not the gateway's refusal.
      expect((res.json as { error?: { message: string } }).error?.message ?? '').to.not.include('not served on this endpoint');
      expect([...stack.devnet.nodes.values()].flatMap((n) => n.received).some((r) => r.body.includes('admin_nodeInfo'))).to.equal(true);
    });
  });

  describe('connections and guessing', () => {
    it('caps the connections one client address holds open; others are closed at once', async () => {
      const sockets: Socket[] = [];
      const port = Number(new URL(stack.gateway.url).port);
      const open = (): Promise<Socket> =>
        new Promise((resolve, reject) => {
          const s = tcpConnect(port, '127.0.0.1', () => resolve(s));
          s.on('error', reject);
        });
      for (let i = 0; i < 40; i++) sockets.push(await open());
      const extra = await open();
      const closed = await new Promise<boolean>((resolve) => {
        extra.on('close', () => resolve(true));
        extra.on('error', () => resolve(true));
        extra.write('GET /l1 HTTP/1.1\r\nhost: x\r\n\r\n');
      });
      expect(closed).to.equal(true);
      for (const s of sockets) s.destroy();
      // The slots are freed as the gateway hears of the closes.
      await until(async () => (await l1(call('eth_chainId'))).status === 200, { what: 'a new connection is served' });
    });

    it('ends the connection of a request with a bad key', async () => {
      const res = await fetch(stack.url('/l1'), { method: 'POST', headers: { apikey: 'nrk_' + 'q'.repeat(32) }, body: '{}' });
      expect(res.status).to.equal(401);
      expect(res.headers.get('connection')).to.equal('close');
    });
  });

  describe('WebSocket clients that do not read', () => {
    let ws: Stack;
    before(async () => {
      ws = await startStack({ chains: [{ ...L1, extra: undefined }], tiers: TIERS, serverYaml: 'wsMaxBufferedBytes: 65536' });
    });
    after(() => ws.close());

    it('are disconnected, never buffered for without bound', async () => {
      for (const n of ws.devnet.nodes.values()) await n.setFaults({ hugeBody: true });
      const client = new WebSocket(`${ws.url('/l1').replace(/^http/, 'ws')}?apikey=${ws.key}`, { maxPayload: 64 * 1024 * 1024 });
      await new Promise((resolve, reject) => {
        client.once('open', resolve);
        client.once('error', reject);
      });
      // The client stops reading its socket, and keeps asking for answers of about 1 MB.
      (client as unknown as { _socket: Socket })._socket.pause();
      // (The devnet's huge answers all carry id 1.)
      for (let i = 0; i < 60; i++) client.send(JSON.stringify(call('eth_chainId')));
      // The paused client cannot read the close: the gateway's own gauge says it let the client go.
      const open = async (): Promise<number> =>
        Number(/noderouter_ws_connections\{chain="l1"\} (\d+)/.exec((await get(ws.admin('/metrics'))).text)?.[1] ?? -1);
      await until(async () => (await open()) === 0, { what: 'the gateway lets the client go', timeoutMs: 15_000, everyMs: 50 });
      client.terminate();
    });
  });

  describe('gRPC listener', () => {
    let session: ClientHttp2Session;
    beforeEach(() => {
      session = h2connect(`http://${stack.gateway.grpcAddress}`);
    });
    afterEach(() => session.close());

    const open = (md: Record<string, string>): ReturnType<ClientHttp2Session['request']> =>
      session.request({
        ':method': 'POST',
        ':path': '/cosmos.auth.v1beta1.Query/Params',
        'content-type': 'application/grpc',
        te: 'trailers',
        ...md,
      });
    const status = (req: ReturnType<typeof open>): Promise<string | undefined> =>
      new Promise((resolve) => {
        let headers: Record<string, unknown> = {};
        req.on('response', (h) => {
          headers = h;
        });
        req.on('trailers', (t) => {
          headers = { ...headers, ...t };
        });
        req.on('close', () => resolve(headers['grpc-status'] as string | undefined));
        req.on('error', () => resolve(undefined));
        req.resume();
      });

    it('refuses a call without apikey at once, before the client sends its message', async () => {
      const req = open({});
      // The client never ends its stream: the refusal must not wait for the message.
      expect(await status(req)).to.equal('16');
    });

    it('never forwards apikey-bin or authorization to a node', async () => {
      clear();
      const req = open({ apikey: stack.key, 'apikey-bin': Buffer.from(free).toString('base64'), authorization: `Bearer ${free}` });
      req.end(frameMessage(Buffer.alloc(0)));
      expect(await status(req)).to.equal('0');
      const seen = [...stack.devnet.nodes.values()].filter((n) => n.network === 'hub').flatMap((n) => n.received);
      const forwarded = seen.filter((r) => r.path === '/cosmos.auth.v1beta1.Query/Params');
      expect(forwarded).to.have.length(1);
      expect(forwarded[0]?.headers).to.not.have.any.keys('apikey', 'apikey-bin', 'authorization');
    });

    it('a compressed message naming a height the relay cannot read is an archive call', async () => {
      const req = session.request({
        ':method': 'POST',
        ':path': '/cosmos.base.tendermint.v1beta1.Service/GetBlockByHeight',
        'content-type': 'application/grpc',
        'grpc-encoding': 'gzip',
        te: 'trailers',
        apikey: free,
      });
      req.end(frameMessage(pb().uint(1, 3).finish(), true));
      // PERMISSION_DENIED: a free key has no archive access.
      expect(await status(req)).to.equal('7');
    });

    it('bounds concurrent streams per connection; the rest are refused', async () => {
      const held = Array.from({ length: 4 }, () => open({ apikey: stack.key }));
      const refused = await new Promise<number | undefined>((resolve) => {
        const extra = open({ apikey: stack.key });
        extra.on('close', () => resolve(extra.rstCode));
        extra.on('error', () => undefined);
      });
      expect(refused).to.equal(constants.NGHTTP2_REFUSED_STREAM);
      for (const h of held) h.close(constants.NGHTTP2_CANCEL);
    });

    it('cuts a client that trickles its message at the read timeout', async () => {
      const req = open({ apikey: stack.key });
      req.write(Buffer.from([0, 0, 0]));
      // headersTimeoutMs (300 here) bounds the time a client has to send its request.
      expect(await status(req)).to.equal('3');
    });

    it('holds no call after a rapid-reset flood', async () => {
      const flood = h2connect(`http://${stack.gateway.grpcAddress}`);
      flood.on('error', () => undefined);
      for (let i = 0; i < 300; i++) {
        const req = flood.request({
          ':method': 'POST',
          ':path': '/cosmos.auth.v1beta1.Query/Params',
          'content-type': 'application/grpc',
          apikey: stack.key,
        });
        req.on('error', () => undefined);
        req.close(constants.NGHTTP2_CANCEL);
      }
      // Time for the gateway to take every reset; an in-flight count they leaked would show after it.
      await pause(300);
      flood.destroy();
      const hub = stack.gateway.runtimes().find((rt) => rt.name === 'hub-grpc');
      expect(hub?.load.inFlight).to.equal(0);
      // Other customers are still served.
      const req = open({ apikey: stack.key });
      req.end(frameMessage(Buffer.alloc(0)));
      expect(await status(req)).to.equal('0');
    });
  });
});
