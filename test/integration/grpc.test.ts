// gRPC through the gateway with real @grpc/grpc-js clients and devnet gRPC nodes:
// every auth outcome as a gRPC status, limits, archive routing by height metadata,
// pruned-answer and failover retries, breakers, server-streaming relay and cancel,
// usage, metrics, routing by :authority, refusals of what is not relayed, reload
// and graceful shutdown. Probes are driven by hand (probeAll), and the limits' clock
// is the test's.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { connect } from 'node:http2';
import { readFile, writeFile } from 'node:fs/promises';
import type { ChainRuntime } from '../../src/chain/runtime.js';
import type { DevnetGrpcNode } from '../../plugins/sdk-grpc/devnet.js';
import { pb } from 'noderouter/devnet';
import { message, varint } from '../../plugins/sdk-grpc/proto.js';
import { metadata, PARAMS, raw, unary as grpcUnary, type Reply } from '../support/grpc-client.js';
import { DEFAULT_TIERS, get, HUB_GRPC, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const BY_HEIGHT = '/cosmos.base.tendermint.v1beta1.Service/GetBlockByHeight';
const WATCH = '/grpc.health.v1.Health/Watch';
const ZONE_HOST = 'zone.grpc.test';

const ZONE_GRPC: ChainSpec = {
  name: 'zone-grpc',
  plugin: 'sdk-grpc',
  network: 'zone',
  host: ZONE_HOST,
  extra:
    '    attemptTimeoutMs: 300\n    breaker: { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 60000, rollingWindowMs: 10000 }',
  nodes: [
    { name: 'zone-grpc-full-1', role: 'full' },
    { name: 'zone-grpc-full-2', role: 'full' },
    { name: 'zone-grpc-archive-1', role: 'archive' },
  ],
};

describe('gRPC', function () {
  this.timeout(30_000);
  let stack: Stack;
  let clock = Date.parse('2026-06-01T12:00:00Z');
  const clients = new Map<string, grpc.Client>();

  function client(authority?: string): grpc.Client {
    const key = authority ?? '';
    let c = clients.get(key);
    if (c === undefined) {
      const options = authority === undefined ? {} : { 'grpc.default_authority': authority };
      c = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure(), options);
      clients.set(key, c);
    }
    return c;
  }

  const unary = (path: string, md: Record<string, string | string[]>, request?: Buffer, authority?: string): Promise<Reply> =>
    grpcUnary(client(authority), path, md, request);

  const key = (): Record<string, string> => ({ apikey: stack.key });
  const node = (name: string): DevnetGrpcNode => stack.devnet.node(name) as DevnetGrpcNode;
  const runtime = (name: string): ChainRuntime => stack.gateway.runtimes().find((c) => c.name === name) as ChainRuntime;
  /** Client calls of a path a node received (probes ask other methods). */
  const hits = (name: string, path = PARAMS): number => node(name).received.filter((r) => r.path === path).length;
  const clear = (): void => {
    for (const n of stack.devnet.nodes.values()) n.clearReceived();
  };
  const metrics = async (): Promise<string> => (await get(stack.admin('/metrics'))).text;

  before(async () => {
    stack = await startStack({
      chains: [HUB_GRPC, ZONE_GRPC],
      devnet: { fullRetention: 16, startHeight: 200 },
      tiers: `${DEFAULT_TIERS}  tiny: { rate: 1, burst: 1 }\n`,
      serverYaml: 'maxBodyBytes: 1024, headersTimeoutMs: 300, shutdownTimeoutMs: 300',
      now: () => clock,
    });
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
  });
  after(async () => {
    for (const c of clients.values()) c.close();
    await stack.close();
  });
  afterEach(async () => {
    for (const n of stack.devnet.nodes.values()) await n.clearFaults();
    for (const rt of stack.gateway.runtimes()) {
      await rt.prober.probeAll();
      await rt.prober.probeAll();
      for (const n of rt.pool.nodes) n.breaker.close();
    }
  });

  describe('keys and permissions', () => {
    it('answers the auth params query with the spec’s fields, and no node sees the key', async () => {
      clear();
      const res = await unary(PARAMS, key());
      expect(res.code).to.equal(0);
      const params = message(res.data, 1);
      expect([1, 2, 3, 4, 5].map((f) => varint(params, f))).to.deep.equal([256, 7, 10, 590, 1000]);
      const received = [...stack.devnet.nodes.values()].flatMap((n) => n.received);
      expect(received.filter((r) => r.path === PARAMS)).to.have.length(1);
      expect(received.some((r) => 'apikey' in r.headers)).to.equal(false);
    });

    it('lists both chains for the dashboard: the gateway’s gRPC address, and the :authority that reaches the hosted one', async () => {
      const listed = stack.gateway.endpoints().map((e) => ({ chain: e.chain, url: e.url, authority: e.authority, ws: e.ws }));
      const url = `grpc://${stack.gateway.grpcAddress}`;
      expect(listed).to.deep.equal([
        { chain: 'hub-grpc', url, authority: undefined, ws: undefined },
        { chain: 'zone-grpc', url, authority: ZONE_HOST, ws: undefined },
      ]);
      clear();
      expect((await unary(PARAMS, key(), Buffer.alloc(0), listed[1]?.authority)).code).to.equal(0);
      expect(ZONE_GRPC.nodes.map((n) => hits(n.name)).reduce((a, b) => a + b)).to.equal(1);
    });

    it('refuses a call without a key, or with an unknown key: UNAUTHENTICATED, no node asked', async () => {
      clear();
      const none = await unary(PARAMS, {});
      expect(none.code).to.equal(grpc.status.UNAUTHENTICATED);
      expect(none.details).to.contain('apikey');
      const unknown = await unary(PARAMS, { apikey: 'nrk_' + 'x'.repeat(32) });
      expect(unknown.code).to.equal(grpc.status.UNAUTHENTICATED);
      expect(unknown.details).to.equal('Invalid API key');
      expect([...stack.devnet.nodes.values()].flatMap((n) => n.received)).to.have.length(0);
    });

    it('refuses a revoked key on its next call', async () => {
      const k = await stack.createKey('enterprise');
      expect((await unary(PARAMS, { apikey: k.value })).code).to.equal(0);
      await stack.gateway.store.revoke(k.id);
      expect((await unary(PARAMS, { apikey: k.value })).code).to.equal(grpc.status.UNAUTHENTICATED);
    });

    it('refuses two different keys in one call', async () => {
      const other = await stack.createKey('enterprise');
      const res = await unary(PARAMS, { apikey: [stack.key, other.value] });
      expect(res.code).to.equal(grpc.status.UNAUTHENTICATED);
      expect(res.details).to.contain('Two different API keys');
      expect((await unary(PARAMS, { apikey: [stack.key, stack.key] })).code).to.equal(0);
    });

    it('refuses a key not permitted for the chain, and a method its patterns deny: PERMISSION_DENIED', async () => {
      const zoneOnly = await stack.createKey('enterprise', { chains: ['zone-grpc'] });
      expect((await unary(PARAMS, { apikey: zoneOnly.value })).code).to.equal(grpc.status.PERMISSION_DENIED);
      expect((await unary(PARAMS, { apikey: zoneOnly.value }, undefined, ZONE_HOST)).code).to.equal(0);
      const noAuth = await stack.createKey('enterprise', { deny: ['/cosmos.auth.*'] });
      const denied = await unary(PARAMS, { apikey: noAuth.value });
      expect(denied.code).to.equal(grpc.status.PERMISSION_DENIED);
      expect(denied.details).to.contain('method');
    });

    it('refuses an old height to a key without archive access, before any node', async () => {
      const free = await stack.createKey('free');
      clear();
      const res = await unary(PARAMS, { apikey: free.value, 'x-cosmos-block-height': '10' });
      expect(res.code).to.equal(grpc.status.PERMISSION_DENIED);
      expect(res.details).to.contain('archive');
      expect(hits('hub-grpc-archive-1')).to.equal(0);
      expect((await unary(PARAMS, { apikey: free.value })).code).to.equal(0);
    });

    it('refuses a malformed height as INVALID_ARGUMENT', async () => {
      const res = await unary(PARAMS, { ...key(), 'x-cosmos-block-height': 'ten' });
      expect(res.code).to.equal(grpc.status.INVALID_ARGUMENT);
    });
  });

  describe('limits and usage', () => {
    it('refuses calls past the tier’s rate with RESOURCE_EXHAUSTED and retry-after metadata', async () => {
      const tiny = await stack.createKey('tiny');
      expect((await unary(PARAMS, { apikey: tiny.value })).code).to.equal(0);
      const limited = await unary(PARAMS, { apikey: tiny.value });
      expect(limited.code).to.equal(grpc.status.RESOURCE_EXHAUSTED);
      expect(limited.metadata['retry-after']).to.equal('1');
      expect(limited.metadata['ratelimit-remaining']).to.equal('0');
      clock += 1_000;
      expect((await unary(PARAMS, { apikey: tiny.value })).code).to.equal(0);
      expect(await metrics()).to.match(/noderouter_rejections_total\{chain="hub-grpc",tier="tiny",reason="rate"\} 1/);
    });

    it('counts a call once in usage however many nodes tried it', async () => {
      const { value, id } = await stack.createKey('growth');
      await node('hub-grpc-full-1').setFaults({ down: true });
      await node('hub-grpc-full-2').setFaults({ status: grpc.status.UNAVAILABLE });
      for (let i = 0; i < 3; i++) expect((await unary(PARAMS, { apikey: value })).code).to.equal(0);
      const rows = await stack.gateway.services.bundle.limiter.usage(id);
      expect(rows.map((r) => [r.chain, r.calls, r.errors])).to.deep.equal([['hub-grpc', 3, 0]]);
    });
  });

  describe('routing and failover', () => {
    it('sends a height below full retention to the archive node, a recent one to a full node', async () => {
      clear();
      expect((await unary(PARAMS, { ...key(), 'x-cosmos-block-height': '10' })).code).to.equal(0);
      expect(hits('hub-grpc-archive-1')).to.equal(1);
      const head = stack.devnet.chains.get('hub')?.height() as number;
      expect((await unary(PARAMS, { ...key(), 'x-cosmos-block-height': String(head - 1) })).code).to.equal(0);
      expect(hits('hub-grpc-full-1') + hits('hub-grpc-full-2')).to.equal(1);
      expect(hits('hub-grpc-archive-1')).to.equal(1);
    });

    it('reads the height of GetBlockByHeight from its request and routes it the same way', async () => {
      clear();
      const old = await unary(BY_HEIGHT, key(), pb().uint(1, 5).finish());
      expect(old.code).to.equal(0);
      expect(varint(message(message(old.data, 2), 1), 3)).to.equal(5);
      expect(hits('hub-grpc-archive-1', BY_HEIGHT)).to.equal(1);
      expect(hits('hub-grpc-full-1', BY_HEIGHT) + hits('hub-grpc-full-2', BY_HEIGHT)).to.equal(0);
    });

    it('retries a full node’s pruned answer on the archive node', async () => {
      // The gateway still believes the full nodes keep height h; they no longer do.
      const chain = stack.devnet.chains.get('hub');
      const h = (chain?.height() as number) - 10;
      chain?.advance(20);
      clear();
      const res = await unary(PARAMS, { ...key(), 'x-cosmos-block-height': String(h) });
      expect(res.code).to.equal(0);
      expect(hits('hub-grpc-full-1') + hits('hub-grpc-full-2')).to.equal(1);
      expect(hits('hub-grpc-archive-1')).to.equal(1);
      expect(await metrics()).to.match(/noderouter_retries_total\{chain="hub-grpc",reason="pruned"\} [1-9]/);
    });

    it('fails over from a down node to another node', async () => {
      await node('zone-grpc-full-1').setFaults({ down: true });
      clear();
      for (let i = 0; i < 4; i++) expect((await unary(PARAMS, key(), undefined, ZONE_HOST)).code).to.equal(0);
      expect(hits('zone-grpc-full-1')).to.equal(0);
      expect(hits('zone-grpc-full-2')).to.equal(4);
    });

    it('opens a node’s breaker after failures, visible in /health/chains and metrics', async () => {
      await node('zone-grpc-full-2').setFaults({ status: grpc.status.UNAVAILABLE });
      // Its rolling window still holds earlier successes: enough failures to pass 50%.
      for (let i = 0; i < 12; i++) expect((await unary(PARAMS, key(), undefined, ZONE_HOST)).code).to.equal(0);
      const health = (await get(stack.admin('/health/chains'))).json as {
        chains: Array<{ chain: string; nodes: Array<{ name: string; breaker: string }> }>;
      };
      expect(health.chains.find((c) => c.chain === 'zone-grpc')?.nodes.find((n) => n.name === 'zone-grpc-full-2')?.breaker).to.equal(
        'open',
      );
      expect(await metrics()).to.match(/noderouter_breaker_state\{chain="zone-grpc",node="zone-grpc-full-2"\} 2/);
      clear();
      for (let i = 0; i < 3; i++) await unary(PARAMS, key(), undefined, ZONE_HOST);
      expect(hits('zone-grpc-full-2')).to.equal(0);
    });

    it('relays the chain’s own error statuses unchanged, without retrying them', async () => {
      clear();
      const res = await unary('/cosmos.auth.v1beta1.Query/NoSuchMethod', key());
      expect(res.code).to.equal(grpc.status.UNIMPLEMENTED);
      expect(res.details).to.contain('NoSuchMethod');
      const future = await unary(PARAMS, { ...key(), 'x-cosmos-block-height': '999999' });
      expect(future.code).to.equal(grpc.status.INVALID_ARGUMENT);
      expect(hits('hub-grpc-full-1') + hits('hub-grpc-full-2') + hits('hub-grpc-archive-1')).to.equal(1);
    });

    it('answers UNAVAILABLE with retry-after when no node can take the call', async () => {
      for (const n of ZONE_GRPC.nodes) await node(n.name).setFaults({ down: true });
      await runtime('zone-grpc').prober.probeAll();
      await runtime('zone-grpc').prober.probeAll();
      const res = await unary(PARAMS, key(), undefined, ZONE_HOST);
      expect(res.code).to.equal(grpc.status.UNAVAILABLE);
      expect(res.metadata['retry-after']).to.equal('1');
    });

    it('answers DEADLINE_EXCEEDED when every node hangs', async () => {
      for (const n of ZONE_GRPC.nodes) await node(n.name).setFaults({ hang: true });
      const res = await unary(PARAMS, key(), undefined, ZONE_HOST);
      expect(res.code).to.equal(grpc.status.DEADLINE_EXCEEDED);
      expect(res.details).to.equal('Upstream nodes timed out');
    });

    it('routes by :authority: a chain’s host, else the default gRPC chain', async () => {
      clear();
      expect((await unary(PARAMS, key(), undefined, ZONE_HOST)).code).to.equal(0);
      expect((await unary(PARAMS, key(), undefined, 'other.example:443')).code).to.equal(0);
      expect(ZONE_GRPC.nodes.reduce((s, n) => s + hits(n.name), 0)).to.equal(1);
      expect(HUB_GRPC.nodes.reduce((s, n) => s + hits(n.name), 0)).to.equal(1);
    });
  });

  describe('streams and shapes', () => {
    it('relays a server stream message by message, and cancels the node’s call when the client does', async () => {
      const chain = stack.devnet.chains.get('hub');
      const call = client().makeServerStreamRequest(WATCH, raw, raw, Buffer.alloc(0), metadata(key()));
      const received: number[] = [];
      let status: number | undefined;
      call.on('error', (e: grpc.ServiceError) => {
        status = e.code;
      });
      const next = (): Promise<void> =>
        new Promise((resolve) =>
          call.once('data', (d: Buffer) => {
            received.push(varint(d, 1) as number);
            resolve();
          }),
        );
      await next();
      // The second message exists only after a new block: it cannot have been buffered.
      const second = next();
      chain?.advance(1);
      await second;
      const third = next();
      chain?.advance(1);
      await third;
      expect(received).to.deep.equal([1, 1, 1]);
      const watcher = HUB_GRPC.nodes.map((n) => node(n.name)).find((n) => n.watching === 1);
      expect(watcher).to.not.equal(undefined);
      call.cancel();
      await until(() => (watcher as DevnetGrpcNode).watching === 0, { what: 'the node’s watch ends' });
      expect(watcher?.watching).to.equal(0);
      expect(status).to.equal(grpc.status.CANCELLED);
      expect(await metrics()).to.match(
        /noderouter_requests_total\{chain="hub-grpc",method="\/grpc.health.v1.Health\/Watch",outcome="cancelled",transport="grpc"\} 1/,
      );
    });

    it('refuses client-streaming and bidirectional calls with UNIMPLEMENTED', async () => {
      const streamed = await new Promise<grpc.ServiceError | null>((resolve) => {
        const call = client().makeClientStreamRequest(PARAMS, raw, raw, metadata(key()), (err) => resolve(err));
        call.write(Buffer.from('a'));
        call.write(Buffer.from('b'));
        call.end();
      });
      expect(streamed?.code).to.equal(grpc.status.UNIMPLEMENTED);
      // One message and no end: the gateway stops waiting after server.headersTimeoutMs.
      const bidi = client().makeBidiStreamRequest(PARAMS, raw, raw, metadata(key()));
      bidi.write(Buffer.from('a'));
      const code = await new Promise<number>((resolve) => bidi.on('error', (e: grpc.ServiceError) => resolve(e.code)));
      expect(code).to.equal(grpc.status.UNIMPLEMENTED);
    });

    it('refuses a request message over server.maxBodyBytes with RESOURCE_EXHAUSTED', async () => {
      const res = await unary(PARAMS, key(), Buffer.alloc(2_000, 1));
      expect(res.code).to.equal(grpc.status.RESOURCE_EXHAUSTED);
    });

    it('answers what is not gRPC in HTTP: 405 for GET, 415 for another content type', async () => {
      const session = connect(`http://${stack.gateway.grpcAddress}`);
      const status = (headers: Record<string, string>): Promise<number> =>
        new Promise((resolve, reject) => {
          const req = session.request(headers);
          req.on('response', (h) => resolve(h[':status'] as number));
          req.on('error', reject);
          req.end();
        });
      expect(await status({ ':method': 'GET', ':path': PARAMS })).to.equal(405);
      expect(await status({ ':method': 'POST', ':path': PARAMS, 'content-type': 'application/json' })).to.equal(415);
      session.close();
    });

    it('answers a path that is not /package.Service/Method with UNIMPLEMENTED', async () => {
      const res = await unary('/not-a-grpc-path', key());
      expect(res.code).to.equal(grpc.status.UNIMPLEMENTED);
    });
  });

  describe('metrics and reload', () => {
    it('counts gRPC calls by transport, with upstream metrics per gRPC node', async () => {
      await unary(PARAMS, key());
      const text = await metrics();
      expect(text).to.match(
        /noderouter_requests_total\{chain="hub-grpc",method="\/cosmos.auth.v1beta1.Query\/Params",outcome="ok",transport="grpc"\} [1-9]/,
      );
      expect(text).to.match(/noderouter_requests_total\{chain="hub-grpc",method="other",outcome="missing_key",transport="grpc"\} [1-9]/);
      expect(text).to.match(/noderouter_upstream_requests_total\{chain="hub-grpc",node="hub-grpc-full-\d",outcome="ok"\} [1-9]/);
      expect(text).to.match(/noderouter_upstream_duration_seconds_count\{chain="hub-grpc",node="hub-grpc-archive-1"\} [1-9]/);
      expect(text).to.match(/noderouter_health_probes_total\{chain="zone-grpc",node="zone-grpc-archive-1",result="ok"\} [1-9]/);
      expect(text).to.match(/noderouter_node_head_height\{chain="hub-grpc",node="hub-grpc-full-1"\} [1-9]/);
    });

    it('swaps gRPC chain endpoints on reload', async () => {
      const text = await readFile(stack.configFile, 'utf8');
      await writeFile(stack.configFile, text.replace(`host: ${ZONE_HOST}`, 'host: zone2.grpc.test'));
      expect(await stack.gateway.reload()).to.equal(true);
      clear();
      expect((await unary(PARAMS, key(), undefined, 'zone2.grpc.test')).code).to.equal(0);
      expect(ZONE_GRPC.nodes.reduce((s, n) => s + hits(n.name), 0)).to.equal(1);
      await writeFile(stack.configFile, text);
      expect(await stack.gateway.reload()).to.equal(true);
    });

    it('reads its limits when it uses them: a reload’s stream cap and connection cap apply to the next connection', async () => {
      /** A new HTTP/2 connection: the stream cap its SETTINGS say, or undefined when it is closed unanswered. */
      const streamCap = (): Promise<number | undefined> =>
        new Promise((resolve) => {
          const session = connect(`http://${stack.gateway.grpcAddress}`);
          session.on('error', () => undefined);
          session.once('remoteSettings', (settings) => {
            resolve(settings.maxConcurrentStreams);
            session.close();
          });
          session.once('close', () => resolve(undefined));
        });
      const text = await readFile(stack.configFile, 'utf8');
      const server = 'maxBodyBytes: 1024, headersTimeoutMs: 300, shutdownTimeoutMs: 300';
      expect(text).to.contain(server);
      const held = connect(`http://${stack.gateway.grpcAddress}`);
      held.on('error', () => undefined);
      const before = await new Promise<number | undefined>((resolve) =>
        held.once('remoteSettings', (s) => resolve(s.maxConcurrentStreams)),
      );
      expect(before).to.equal(stack.gateway.limits().grpcMaxConcurrentStreams);
      await writeFile(stack.configFile, text.replace(server, `${server}, grpcMaxConcurrentStreams: 7`));
      expect(await stack.gateway.reload()).to.equal(true);
      expect(await streamCap()).to.equal(7);
      // A connection is held open: a cap of one refuses the next at its accept.
      await writeFile(stack.configFile, text.replace(server, `${server}, maxConnections: 1`));
      expect(await stack.gateway.reload()).to.equal(true);
      expect(await streamCap()).to.equal(undefined);
      await writeFile(stack.configFile, text);
      expect(await stack.gateway.reload()).to.equal(true);
      expect(await streamCap()).to.equal(before);
      held.close();
    });

    it('drains on close: a unary call in flight finishes, a stream is cut after server.shutdownTimeoutMs, new calls are refused', async () => {
      const call = client().makeServerStreamRequest(WATCH, raw, raw, Buffer.alloc(0), metadata(key()));
      await new Promise((resolve) => call.once('data', resolve));
      const ended = new Promise<number>((resolve) => call.on('error', (e: grpc.ServiceError) => resolve(e.code)));
      for (const n of HUB_GRPC.nodes) await node(n.name).setFaults({ latencyMs: 100 });
      clear();
      const slow = unary(PARAMS, key());
      await until(() => HUB_GRPC.nodes.some((n) => hits(n.name) > 0), { what: 'a node has the call' });
      await stack.gateway.close();
      expect((await slow).code).to.equal(0);
      expect(await ended).to.equal(grpc.status.UNAVAILABLE);
      expect((await unary(PARAMS, key())).code).to.equal(grpc.status.UNAVAILABLE);
    });
  });
});
