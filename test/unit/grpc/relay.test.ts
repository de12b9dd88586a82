// One gRPC call through the relay (src/transports/grpc/relay.ts), between real HTTP/2
// streams on loopback: a plain HTTP/2 client, a server handing each call to the relay
// for a chain on the scripted gRPC family, and a test gRPC node. What the client sees:
// the key refused (and the connection ended) or not permitted; the one request message
// forwarded as it came, without the key or one hop's headers, and the answer relayed
// with the rate; requests that are no single whole message, too large, or unreadable
// to the plugin refused and charged; the client's deadline and its leaving honoured,
// the node's call cancelled; and the node's status passed on.

import { expect } from 'chai';
import { connect, constants, createServer, type ClientHttp2Session, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { GatewayError } from '../../../src/errors.js';
import { newOutcome, type RequestOutcome } from '../../../src/exec/request-record.js';
import { frameMessage } from '../../../src/grpc-wire/frames.js';
import type { InboundGrpcCall } from '../../../src/plugin/contract.js';
import { GrpcRelay, isGrpcChain, type GrpcChain, type GrpcLimits } from '../../../src/transports/grpc/relay.js';
import { bench, chainConfig, type Bench } from '../../support/chain.js';
import { rawCall, type RawAnswer } from '../../support/grpc-client.js';
import { echoGrpc, scriptedGrpcPlugin, startGrpcNode, type GrpcNode } from '../../support/grpc-node.js';
import { testKeys, type TestKeys } from '../../support/keys.js';
import { until } from '../../support/until.js';

const PING = '/t.S/Ping';
const message = (text: string): Buffer => frameMessage(Buffer.from(text));

describe('gRPC relay (src/transports/grpc/relay.ts)', () => {
  let node: GrpcNode;
  let b: Bench;
  let chain: GrpcChain;
  let keys: TestKeys;
  let key: { id: string; value: string };
  /** What the plugin was handed. */
  let seen: InboundGrpcCall[];
  let limits: GrpcLimits;
  let server: Http2Server;
  let url: string;
  /** How the relay ended each call: the status it returned and what it recorded. */
  let handled: Array<{ code: number; trace: RequestOutcome }>;
  const sessions: ClientHttp2Session[] = [];

  function session(): ClientHttp2Session {
    const s = connect(url);
    s.on('error', () => undefined);
    sessions.push(s);
    return s;
  }

  /** One call on a new connection: a single message and the end unless told otherwise. */
  function send(headers: Record<string, string>, body: readonly Buffer[] = [message('hello')], end = true): Promise<RawAnswer> {
    return rawCall(session(), { ':path': PING, ...headers }, body, end).answer;
  }

  beforeEach(async () => {
    node = await startGrpcNode(echoGrpc('g'));
    seen = [];
    const plugin = scriptedGrpcPlugin({
      seen,
      parse(c) {
        if (c.path === '/t.S/Bad') throw new GatewayError('INVALID_REQUEST', { message: 'x-height must be a number' });
        if (c.path === '/t.S/Oops') throw new Error('a bug in the plugin');
        return { kind: 'grpc', method: c.path, meta: undefined };
      },
    });
    b = await bench(await chainConfig([{ name: 'g', url: node.url, role: 'full' }]), plugin);
    if (!isGrpcChain(b.rt)) throw new Error('the scripted gRPC family reads gRPC calls');
    chain = b.rt;
    b.principal({ rate: 100, burst: 100 });
    keys = await testKeys(b);
    key = await keys.create();
    limits = { maxBodyBytes: 1024, maxResponseBytes: 1 << 20, requestTimeoutMs: 5_000, requestReadTimeoutMs: 200 };
    const relay = new GrpcRelay({ identifier: keys.identifier, path: b.path, limits: () => limits });
    handled = [];
    server = createServer();
    server.on('stream', (stream, headers) => {
      stream.on('error', () => undefined);
      const trace = newOutcome();
      void relay.handle(stream, headers, chain, trace).then((code) => handled.push({ code, trace }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    for (const s of sessions.splice(0)) s.destroy();
    await node.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await b.close();
    await keys.close();
  });

  it('forwards the one message and the metadata, never the key or one hop’s headers, and relays the answer with the rate', async () => {
    const a = await send({ apikey: key.value, authorization: 'Bearer secret', 'x-custom': 'kept' });
    expect(a.code).to.equal(0);
    expect(a.body.equals(message(`g:${PING}`))).to.equal(true);
    expect(a.headers['ratelimit-limit']).to.equal('100');
    expect(a.headers['ratelimit-remaining']).to.equal('99');
    expect(node.received).to.have.length(1);
    const [got] = node.received as [(typeof node.received)[number]];
    expect(got.body.equals(message('hello'))).to.equal(true);
    expect(got.headers).to.include({ 'x-custom': 'kept', te: 'trailers' });
    expect(got.headers).to.not.have.any.keys('apikey', 'authorization');
    expect(seen.map((c) => c.message?.toString())).to.deep.equal(['hello']);
    expect(seen[0]?.metadata).to.not.have.any.keys('apikey');
    await until(() => handled.length === 1, { what: 'the relay ends the call' });
    expect(handled[0]?.code).to.equal(0);
    expect(handled[0]?.trace).to.deep.include({ outcome: 'ok', bytesIn: message('hello').length });
    expect(handled[0]?.trace.key?.id).to.equal(key.id);
  });

  it('refuses a call without a key, or with an unknown one, as UNAUTHENTICATED and ends its connection', async () => {
    for (const [headers, details] of [
      [{}, 'API key required: send metadata "apikey"'],
      [{ apikey: `nrk_${'0'.repeat(32)}` }, 'Invalid API key'],
    ] as const) {
      const s = session();
      const ended = new Promise<void>((resolve) => s.once('goaway', () => resolve()));
      const a = await rawCall(s, { ':path': PING, ...headers }, [message('hello')]).answer;
      expect([a.code, a.details]).to.deep.equal([16, details]);
      await ended;
    }
    expect(node.received).to.have.length(0);
    expect(handled.map((h) => h.trace.outcome)).to.deep.equal(['missing_key', 'invalid_key']);
  });

  it('answers UNAVAILABLE while the key store is away, keeping the connection: the client did nothing wrong', async () => {
    const back = keys.away();
    const s = session();
    let ended = false;
    s.once('goaway', () => (ended = true));
    const unknown = `nrk_${'1'.repeat(32)}`;
    const away = await rawCall(s, { ':path': PING, apikey: unknown }, [message('hello')]).answer;
    expect(away.code).to.equal(14);
    back();
    const next = await rawCall(s, { ':path': PING, apikey: key.value }, [message('hello')]).answer;
    expect(next.code).to.equal(0);
    expect(ended).to.equal(false);
  });

  it('refuses a key not permitted on the chain as PERMISSION_DENIED, keeping the connection', async () => {
    const narrow = await keys.create('acct-1', ['elsewhere']);
    const s = session();
    const denied = await rawCall(s, { ':path': PING, apikey: narrow.value }, [message('hello')]).answer;
    expect(denied.code).to.equal(7);
    const next = await rawCall(s, { ':path': PING, apikey: key.value }, [message('hello')]).answer;
    expect(next.code).to.equal(0);
    expect(node.received).to.have.length(1);
  });

  it('refuses a request over maxBodyBytes as RESOURCE_EXHAUSTED, charged as an invalid request', async () => {
    b.principal({ rate: 1 / 3_600, burst: 1 });
    limits = { ...limits, maxBodyBytes: 64 };
    const big = await send({ apikey: key.value }, [frameMessage(Buffer.alloc(100, 1))]);
    expect([big.code, big.details]).to.deep.equal([8, 'Request message over 64 bytes']);
    // The refusal took the one call the tier allows.
    const next = await send({ apikey: key.value });
    expect(next.code).to.equal(8);
    expect(next.headers['retry-after']).to.match(/^\d+$/);
    expect(node.received).to.have.length(0);
    const rejections = await b.metrics.rejections.get();
    expect(rejections.values.find((v) => v.labels.reason === 'invalid')?.value).to.equal(1);
  });

  it('refuses client streaming as UNIMPLEMENTED: a second message, or one message and no end', async () => {
    const streaming = 'Client-streaming and bidirectional calls are not relayed: send one request message and end the stream';
    const two = await send({ apikey: key.value }, [message('one'), message('two')]);
    expect([two.code, two.details]).to.deep.equal([12, streaming]);
    const open = await send({ apikey: key.value }, [message('one')], false);
    expect([open.code, open.details]).to.deep.equal([12, streaming]);
    expect(node.received).to.have.length(0);
  });

  it('refuses a request that is no one whole message, or is not sent in time, as INVALID_ARGUMENT', async () => {
    const whole = 'A call carries exactly one whole request message';
    const none = await send({ apikey: key.value }, []);
    expect([none.code, none.details]).to.deep.equal([3, whole]);
    const partial = await send({ apikey: key.value }, [message('0123456789').subarray(0, 8)]);
    expect([partial.code, partial.details]).to.deep.equal([3, whole]);
    const late = await send({ apikey: key.value }, [], false);
    expect([late.code, late.details]).to.deep.equal([3, 'The request was not sent in time']);
    expect(node.received).to.have.length(0);
  });

  it('hands the plugin the message without its prefix (none when compressed); a call it cannot read is INVALID_ARGUMENT', async () => {
    expect((await send({ apikey: key.value }, [frameMessage(Buffer.from('packed'), true)])).code).to.equal(0);
    expect(seen.map((c) => c.message)).to.deep.equal([undefined]);
    // The compressed message goes to the node as it came.
    expect(node.received[0]?.body.equals(frameMessage(Buffer.from('packed'), true))).to.equal(true);
    const bad = await send({ ':path': '/t.S/Bad', apikey: key.value });
    expect([bad.code, bad.details]).to.deep.equal([3, 'x-height must be a number']);
    const oops = await send({ ':path': '/t.S/Oops', apikey: key.value });
    expect([oops.code, oops.details]).to.deep.equal([3, 'Invalid request']);
    expect(node.received).to.have.length(1);
  });

  it('holds a call to the client’s grpc-timeout: DEADLINE_EXCEEDED, and the node’s call cancelled', async () => {
    node.handler = () => 'hold';
    const a = await send({ apikey: key.value, 'grpc-timeout': '200m' });
    expect(a.code).to.equal(4);
    expect(node.received).to.have.length(1);
    expect(Number(String(node.received[0]?.headers['grpc-timeout']).replace(/m$/, ''))).to.be.within(1, 200);
    await until(() => node.received[0]?.stream.closed === true, { what: 'the node’s call is closed' });
  });

  it('counts a client that leaves as cancelled, and cancels the node’s call', async () => {
    node.handler = () => 'hold';
    const { stream } = rawCall(session(), { ':path': PING, apikey: key.value }, [message('hello')]);
    await until(() => node.received.length === 1, { what: 'the call reaches the node' });
    stream.close(constants.NGHTTP2_CANCEL);
    await until(() => handled.length === 1, { what: 'the relay ends the call' });
    expect(handled[0]?.code).to.equal(1);
    expect(handled[0]?.trace.outcome).to.equal('cancelled');
    await until(() => node.received[0]?.stream.closed === true, { what: 'the node’s call is closed' });
  });

  it('passes on a node’s status: the chain’s answer as it is, a failing node as UNAVAILABLE', async () => {
    node.handler = (c) => (c.path === PING ? { status: 5, message: 'no such thing' } : { status: 14, message: 'syncing' });
    const notFound = await send({ apikey: key.value });
    expect([notFound.code, notFound.details]).to.deep.equal([5, 'no such thing']);
    expect(notFound.headers['ratelimit-limit']).to.equal('100');
    const failing = await send({ ':path': '/t.S/Other', apikey: key.value });
    expect(failing.code).to.equal(14);
    await until(() => handled.length === 2, { what: 'the relay ends both calls' });
    expect(handled.map((h) => [h.code, h.trace.outcome])).to.deep.equal([
      [5, 'chain_error'],
      [14, 'upstream_failed'],
    ]);
  });
});
