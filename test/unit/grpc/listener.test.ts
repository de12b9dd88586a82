// The gRPC listener (src/transports/grpc/listener.ts) on loopback, with the real relay in
// front of the call path on the scripted gRPC family and test gRPC nodes: a default
// chain and one routed by :authority. What a client sees: calls reaching the node of
// the endpoint its authority names; what is not gRPC answered in HTTP (405, 415);
// method paths and authorities no endpoint takes refused as gRPC statuses; UNAVAILABLE
// while draining or when the relay fails unexpectedly; every call counted and logged;
// the server limits read when used (streams per connection, connections, idle
// sessions); and close() letting calls in flight finish within its bound, then cutting.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { connect, type ClientHttp2Session } from 'node:http2';
import type { ServerConfig } from '../../../src/config/types.js';
import type { ChainRuntime } from '../../../src/chain/runtime.js';
import { TrustedProxies } from '../../../src/exec/client-address.js';
import { createLogger, type Logger } from '../../../src/ops/log.js';
import { EndpointTable } from '../../../src/transports/shared/endpoints.js';
import { ClientConnections } from '../../../src/transports/shared/client-connections.js';
import { GrpcListener } from '../../../src/transports/grpc/listener.js';
import { GrpcRelay, isGrpcChain, type GrpcChain } from '../../../src/transports/grpc/relay.js';
import { bench, chainConfig, serverConfig, type Bench } from '../../support/chain.js';
import { rawCall, unary, type Reply } from '../../support/grpc-client.js';
import { echoGrpc, scriptedGrpcPlugin, startGrpcNode, type GrpcNode } from '../../support/grpc-node.js';
import { testKeys, type TestKeys } from '../../support/keys.js';
import { until } from '../../support/until.js';

const PING = '/t.S/Ping';
const ZONE = 'zone.grpc.test';

function grpcChain(rt: ChainRuntime): GrpcChain {
  if (!isGrpcChain(rt)) throw new Error('the scripted gRPC family reads gRPC calls');
  return rt;
}

/** A relay with a bug: the listener's last resort. */
class BrokenRelay extends GrpcRelay {
  override handle(): Promise<number> {
    return Promise.reject(new Error('a bug in the relay'));
  }
}

/** Whether a new connection gets the server's SETTINGS (kept), or is closed first. */
function settles(session: ClientHttp2Session): Promise<'settings' | 'closed'> {
  return new Promise((resolve) => {
    session.once('remoteSettings', () => resolve('settings'));
    session.once('close', () => resolve('closed'));
  });
}

describe('gRPC listener (src/transports/grpc/listener.ts)', () => {
  let node: GrpcNode;
  let zoneNode: GrpcNode;
  let b: Bench;
  let zone: Bench;
  let keys: TestKeys;
  let key: Record<string, string>;
  let limits: ServerConfig;
  let draining: boolean;
  let proxies: TrustedProxies;
  let table: EndpointTable<GrpcChain>;
  let lines: string[];
  let logger: Logger;
  let listener: GrpcListener;
  const listeners: GrpcListener[] = [];
  const clients: grpc.Client[] = [];
  const sessions: ClientHttp2Session[] = [];

  async function start(relay = new GrpcRelay({ identifier: keys.identifier, path: b.path, limits: relayLimits })): Promise<GrpcListener> {
    const l = new GrpcListener({
      endpoints: () => table,
      relay,
      metrics: b.metrics,
      logger,
      draining: () => draining,
      limits: () => limits,
      perClient: new ClientConnections(() => 0),
      trustedProxies: () => proxies,
    });
    listeners.push(l);
    await l.listen('127.0.0.1', 0);
    return l;
  }

  function relayLimits(): { maxBodyBytes: number; maxResponseBytes: number; requestTimeoutMs: number; requestReadTimeoutMs: number } {
    return {
      maxBodyBytes: limits.maxBodyBytes,
      maxResponseBytes: limits.maxResponseBytes,
      requestTimeoutMs: limits.requestTimeoutMs,
      requestReadTimeoutMs: limits.headersTimeoutMs,
    };
  }

  function call(path: string, md: Record<string, string> = key, authority?: string, on = listener): Promise<Reply> {
    const c = new grpc.Client(
      on.address,
      grpc.credentials.createInsecure(),
      authority === undefined ? {} : { 'grpc.default_authority': authority },
    );
    clients.push(c);
    return unary(c, path, md, Buffer.from('request'));
  }

  function session(on = listener): ClientHttp2Session {
    const s = connect(`http://${on.address}`);
    s.on('error', () => undefined);
    sessions.push(s);
    return s;
  }

  /** The log's lines so far, read. */
  async function logged(): Promise<Array<Record<string, unknown>>> {
    await logger.flush();
    return lines
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async function counted(outcome: string): Promise<number> {
    const requests = await b.metrics.requests.get();
    return requests.values.filter((v) => v.labels.transport === 'grpc' && v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
  }

  beforeEach(async () => {
    node = await startGrpcNode(echoGrpc('g'));
    zoneNode = await startGrpcNode(echoGrpc('zone'));
    b = await bench(await chainConfig([{ name: 'g', url: node.url, role: 'full' }]), scriptedGrpcPlugin());
    zone = await bench({ ...(await chainConfig([{ name: 'z', url: zoneNode.url, role: 'full' }])), name: 'zone' }, scriptedGrpcPlugin());
    b.principal();
    keys = await testKeys(b);
    key = { apikey: (await keys.create()).value };
    limits = await serverConfig();
    draining = false;
    proxies = new TrustedProxies([]);
    table = new EndpointTable([
      { path: undefined, host: undefined, target: grpcChain(b.rt) },
      { path: undefined, host: ZONE, target: grpcChain(zone.rt) },
    ]);
    lines = [];
    logger = createLogger('info', { write: (s) => void lines.push(s) });
    listener = await start();
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of sessions.splice(0)) s.destroy();
    for (const l of listeners.splice(0)) await l.close(0);
    await b.close();
    await zone.close();
    await keys.close();
    await node.close();
    await zoneNode.close();
  });

  it('relays a call to the endpoint its :authority names: the hosted one by its host, the default one for any other', async () => {
    const plain = await call(PING);
    expect(plain.code).to.equal(0);
    expect(plain.data?.toString()).to.equal(`g:${PING}`);
    for (const authority of [ZONE, `${ZONE}:9090`]) {
      const hosted = await call(PING, key, authority);
      expect(hosted.code, authority).to.equal(0);
      expect(hosted.data?.toString()).to.equal(`zone:${PING}`);
    }
    expect([node.received.length, zoneNode.received.length]).to.deep.equal([1, 2]);
    expect(zone.rt.load.inFlight + b.rt.load.inFlight).to.equal(0);
  });

  it('answers what is not a gRPC call in HTTP: 405 for another method, 415 for another content type', async () => {
    const s = session();
    const get = await rawCall(s, { ':method': 'GET', ':path': PING }).answer;
    expect(get.headers).to.include({ ':status': 405, allow: 'POST' });
    for (const type of ['application/json', 'application/grpc-web', 'application/grpcx']) {
      const other = await rawCall(s, { ':path': PING, 'content-type': type }).answer;
      expect(other.headers, type).to.include({ ':status': 415, accept: 'application/grpc' });
      expect(other.code).to.equal(undefined);
    }
    // A gRPC subtype is gRPC: it reaches the relay, which asks for the key.
    const proto = await rawCall(s, { ':path': PING, 'content-type': 'application/grpc+proto' }).answer;
    expect(proto.code).to.equal(grpc.status.UNAUTHENTICATED);
    expect(node.received).to.have.length(0);
  });

  it('refuses a path that is no /package.Service/Method, or is longer than server.maxPathLength: UNIMPLEMENTED', async () => {
    limits = { ...limits, maxPathLength: 64 };
    const s = session();
    for (const path of ['/', '/t.S', '/t.S/Ping/more', '/1t.S/Ping', '/t.S/Pi-ng', `/t.S/${'P'.repeat(60)}`]) {
      const a = await rawCall(s, { ':path': path, ...key }).answer;
      expect(a.headers[':status'], path).to.equal(200);
      expect([a.code, a.details], path).to.deep.equal([grpc.status.UNIMPLEMENTED, 'Not a gRPC method path (/package.Service/Method)']);
    }
    expect(node.received).to.have.length(0);
    expect(keys.lookups).to.equal(0);
  });

  it('refuses an authority no endpoint takes when every endpoint is hosted: UNIMPLEMENTED', async () => {
    table = new EndpointTable([{ path: undefined, host: ZONE, target: grpcChain(zone.rt) }]);
    const other = await call(PING, key, 'elsewhere.test');
    expect([other.code, other.details]).to.deep.equal([grpc.status.UNIMPLEMENTED, 'No gRPC chain endpoint for this authority']);
    expect((await call(PING, key, ZONE)).code).to.equal(0);
    expect(node.received).to.have.length(0);
  });

  it('answers UNAVAILABLE with retry-after while draining, asking no node, and counts the call', async () => {
    draining = true;
    const r = await call(PING);
    expect([r.code, r.details]).to.deep.equal([grpc.status.UNAVAILABLE, 'Gateway is shutting down']);
    expect(r.metadata['retry-after']).to.equal('1');
    expect(node.received).to.have.length(0);
    expect(await counted('unavailable')).to.equal(1);
  });

  it('answers UNAVAILABLE when the relay fails unexpectedly, and logs it with the request id', async () => {
    const broken = await start(new BrokenRelay({ identifier: keys.identifier, path: b.path, limits: relayLimits }));
    const r = await call(PING, { ...key, 'x-request-id': 'req-broken' }, undefined, broken);
    expect([r.code, r.details]).to.deep.equal([grpc.status.UNAVAILABLE, 'Upstream nodes failed to answer']);
    const log = await logged();
    const error = log.find((l) => l.msg === 'gRPC call failed unexpectedly');
    expect(error).to.deep.include({ requestId: 'req-broken', chain: 'c' });
    expect(String(error?.error)).to.include('a bug in the relay');
    expect(log.find((l) => l.requestId === 'req-broken' && l.status !== undefined)).to.deep.include({
      status: 14,
      outcome: 'upstream_failed',
    });
    expect(b.rt.load.inFlight).to.equal(0);
  });

  it('logs each call with its request id, chain, method, status and the client a trusted proxy names', async () => {
    proxies = new TrustedProxies(['127.0.0.1']);
    const r = await call(PING, { ...key, 'x-request-id': 'req-1', 'x-forwarded-for': '203.0.113.9' });
    expect(r.code).to.equal(0);
    const line = (await logged()).find((l) => l.requestId === 'req-1');
    expect(line).to.deep.include({
      transport: 'grpc',
      chain: 'c',
      method: PING,
      node: 'g',
      status: 0,
      outcome: 'ok',
      client: '203.0.113.9',
    });
    expect(await counted('ok')).to.equal(1);
  });

  it('tells each new connection the streams it may open as grpcMaxConcurrentStreams says then', async () => {
    limits = { ...limits, grpcMaxConcurrentStreams: 1 };
    const first = session();
    expect(await settles(first)).to.equal('settings');
    expect(first.remoteSettings.maxConcurrentStreams).to.equal(1);
    limits = { ...limits, grpcMaxConcurrentStreams: 7 };
    const second = session();
    expect(await settles(second)).to.equal('settings');
    expect(second.remoteSettings.maxConcurrentStreams).to.equal(7);
  });

  it('refuses connections past maxConnections as each arrives, and takes more once a reload raises it', async () => {
    limits = { ...limits, maxConnections: 1 };
    expect(await settles(session())).to.equal('settings');
    expect(await settles(session())).to.equal('closed');
    limits = { ...limits, maxConnections: 2 };
    expect(await settles(session())).to.equal('settings');
  });

  it('closes a connection without a call for keepAliveTimeoutMs', async () => {
    limits = { ...limits, keepAliveTimeoutMs: 100 };
    const idle = session();
    const closed = new Promise<void>((resolve) => idle.once('close', resolve));
    expect(await settles(idle)).to.equal('settings');
    await closed;
  });

  it('on close, lets a call in flight finish within the bound and cuts one still running past it', async () => {
    let answer: () => void = () => undefined;
    node.handler = (c) =>
      c.path === '/t.S/Slow' ? new Promise((resolve) => (answer = () => resolve({ messages: ['late'], status: 0 }))) : 'hold';
    const slow = call('/t.S/Slow');
    const stuck = call('/t.S/Stuck');
    await until(() => node.received.length === 2, { what: 'both calls reach the node' });
    const closing = listener.close(300);
    answer();
    const finished = await slow;
    expect([finished.code, finished.data?.toString()]).to.deep.equal([0, 'late']);
    await closing;
    expect((await stuck).code).to.not.equal(0);
    // Nothing listens any more.
    expect((await call(PING)).code).to.equal(grpc.status.UNAVAILABLE);
  });
});
