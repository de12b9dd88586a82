// Relaying a node's gRPC answer to the client (src/transports/grpc/answer-relay.ts) between real
// HTTP/2 streams on loopback: a test node, a relay server calling relayStream or
// relayEnded the way the gRPC relay does, and a client. Messages pass as the node sends
// them and its trailers come last; a message over the cap, a node ending without a
// status, the deadline and the client leaving each end the relay with the status and
// outcome they stand for, and the node's call is cancelled.

import { expect } from 'chai';
import {
  connect,
  constants,
  createServer,
  type ClientHttp2Session,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { UpstreamOutcome } from '../../../src/exec/outcome.js';
import { frameMessage } from '../../../src/grpc-wire/frames.js';
import { relayable, relayEnded, relayStream, type Relayed, type RelayContext } from '../../../src/transports/grpc/answer-relay.js';
import type { GrpcCall, GrpcCodec } from '../../../src/plugin/contract.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { chainConfig } from '../../support/chain.js';
import { until } from '../../support/until.js';

const GRPC = { ':status': 200, 'content-type': 'application/grpc' } as const;
const message = (text: string): Buffer => frameMessage(Buffer.from(text));

async function listen(server: Http2Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** What the client saw of one call. */
interface Seen {
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly trailers: IncomingHttpHeaders | undefined;
}

describe('gRPC answer relay (src/transports/grpc/answer-relay.ts)', () => {
  let node: Http2Server;
  let relay: Http2Server;
  let pool: PoolNode;
  let nodes: NodePool;
  let client: ClientHttp2Session;
  /** The node's side of each call, to hold or check. */
  const held: ServerHttp2Stream[] = [];
  /** How the relay ended, and what it told the node's metrics. */
  let relayed: Promise<Relayed>;
  let ended: UpstreamOutcome[];
  let deadline: AbortController;
  let clientGone = false;
  let how: 'stream' | 'ended' = 'stream';

  const codec: GrpcCodec<undefined> = {
    parse: (c) => ({ kind: 'grpc', method: c.path, meta: undefined }),
    // NOT_FOUND is the chain's answer; anything else the node's failure.
    judge: (_call, reply) => (reply.code === 5 ? 'chain_error' : 'node_failure'),
  };

  /** The test node: each path answers its own way. */
  function answer(stream: ServerHttp2Stream, path: string): void {
    held.push(stream);
    stream.on('error', () => undefined);
    switch (path) {
      case '/t.S/Three':
        stream.respond({ ...GRPC, 'x-node-header': 'kept' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-node-trailer': 'kept' }));
        stream.write(message('one'));
        stream.write(message('two'));
        stream.end(message('three'));
        return;
      case '/t.S/Big':
        stream.respond(GRPC);
        stream.write(message('fits'));
        stream.write(frameMessage(Buffer.alloc(2_000, 1)));
        return;
      case '/t.S/NoStatus':
        stream.respond(GRPC);
        stream.end(message('only'));
        return;
      case '/t.S/NotFound':
        stream.respond({ ...GRPC, 'grpc-status': '5', 'grpc-message': 'no%20such%20thing' }, { endStream: true });
        return;
      default:
        // One message, then nothing: held open.
        stream.respond(GRPC);
        stream.write(message('first'));
    }
  }

  /** The relay: the node's answer started as the gRPC exchange starts it, then relayed. */
  async function onCall(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    stream.on('error', () => undefined);
    const path = String(headers[':path']);
    const call: GrpcCall = { kind: 'grpc', method: path, meta: undefined };
    const started = await pool.grpc.start(
      path,
      { 'content-type': 'application/grpc', te: 'trailers' },
      message('request'),
      5_000,
      undefined,
    );
    const ctx: RelayContext = {
      client: stream,
      codec,
      call,
      maxResponseBytes: 1_000,
      signal: deadline.signal,
      clientGone: () => clientGone,
      rate: { 'ratelimit-remaining': '9' },
    };
    const end = (o: UpstreamOutcome): void => void ended.push(o);
    relayed = how === 'ended' ? Promise.resolve(relayEnded(ctx, { started, end }, 'chain_error')) : relayStream(ctx, { started, end });
  }

  /** One call through the relay: what the client got. */
  function send(path: string, onData?: (req: ReturnType<ClientHttp2Session['request']>) => void): Promise<Seen> {
    return new Promise((resolve) => {
      const req = client.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
      req.on('error', () => undefined);
      let headers: IncomingHttpHeaders = {};
      let trailers: IncomingHttpHeaders | undefined;
      const chunks: Buffer[] = [];
      req.on('response', (h) => (headers = h));
      req.on('trailers', (t) => (trailers = t));
      req.on('data', (c: Buffer) => {
        chunks.push(c);
        onData?.(req);
      });
      req.on('close', () => resolve({ headers, body: Buffer.concat(chunks), trailers }));
      req.end(message('request'));
    });
  }

  beforeEach(async () => {
    ended = [];
    deadline = new AbortController();
    clientGone = false;
    how = 'stream';
    node = createServer();
    node.on('stream', (stream, headers) => {
      stream.resume();
      stream.on('end', () => answer(stream, String(headers[':path'])));
    });
    nodes = new NodePool(await chainConfig([{ name: 'g', url: `http://127.0.0.1:${await listen(node)}`, role: 'full' }]));
    pool = nodes.nodes[0] as PoolNode;
    relay = createServer();
    relay.on('stream', (stream, headers) => void onCall(stream, headers));
    client = connect(`http://127.0.0.1:${await listen(relay)}`);
    client.on('error', () => undefined);
  });

  afterEach(async () => {
    for (const s of held.splice(0)) if (!s.destroyed) s.close(constants.NGHTTP2_CANCEL);
    client.close();
    await nodes.close();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
    await new Promise<void>((resolve) => node.close(() => resolve()));
  });

  it('passes every message as the node sends it, then the node’s trailers; headers gain the rate, lose what is one hop’s', async () => {
    const seen = await send('/t.S/Three');
    expect(seen.body.equals(Buffer.concat([message('one'), message('two'), message('three')]))).to.equal(true);
    expect(seen.headers).to.include({ 'x-node-header': 'kept', 'ratelimit-remaining': '9', 'content-type': 'application/grpc' });
    expect(seen.trailers).to.include({ 'grpc-status': '0', 'x-node-trailer': 'kept' });
    expect(await relayed).to.deep.equal({ code: 0, outcome: 'ok', bytes: seen.body.length });
    expect(ended).to.deep.equal(['ok']);
  });

  it('cuts an answer whose message passes the cap: UNAVAILABLE to the client, the node failing, its call cancelled', async () => {
    const seen = await send('/t.S/Big');
    expect(seen.body.equals(message('fits'))).to.equal(true);
    expect(seen.trailers).to.include({ 'grpc-status': '14', 'grpc-message': 'Node answered a message over the size cap' });
    expect(await relayed).to.deep.equal({ code: 14, outcome: 'upstream_failed', bytes: message('fits').length });
    expect(ended).to.deep.equal(['failure']);
    await until(() => held[0]?.closed === true, { what: 'the node’s call is closed' });
  });

  it('takes an answer that ends without a status for the node failing', async () => {
    const seen = await send('/t.S/NoStatus');
    expect(seen.trailers).to.include({ 'grpc-status': '14', 'grpc-message': 'Node ended the call without a status' });
    expect((await relayed).outcome).to.equal('upstream_failed');
    expect(ended).to.deep.equal(['failure']);
  });

  it('ends at the deadline with DEADLINE_EXCEEDED, the node’s timeout, and cancels the node’s call', async () => {
    const seen = await send('/t.S/Hold', () => deadline.abort());
    expect(seen.body.equals(message('first'))).to.equal(true);
    expect(seen.trailers).to.include({ 'grpc-status': '4', 'grpc-message': 'Deadline exceeded while relaying the answer' });
    expect(await relayed).to.deep.include({ code: 4, outcome: 'upstream_timeout' });
    expect(ended).to.deep.equal(['timeout']);
    await until(() => held[0]?.closed === true, { what: 'the node’s call is closed' });
  });

  it('counts a client that leaves as cancelled, nobody’s failure, and cancels the node’s call', async () => {
    await send('/t.S/Hold', (req) => {
      clientGone = true;
      req.close(constants.NGHTTP2_CANCEL);
    });
    expect(await relayed).to.deep.include({ code: 1, outcome: 'cancelled' });
    expect(ended).to.deep.equal(['ok']);
    await until(() => held[0]?.closed === true, { what: 'the node’s call is closed' });
  });

  it('answers a node’s trailers-only answer in one HEADERS frame, its status and the rate together', async () => {
    how = 'ended';
    const seen = await send('/t.S/NotFound');
    expect(seen.body.length).to.equal(0);
    expect(seen.trailers).to.equal(undefined);
    expect(seen.headers).to.include({ 'grpc-status': '5', 'grpc-message': 'no%20such%20thing', 'ratelimit-remaining': '9' });
    expect(await relayed).to.deep.equal({ code: 5, outcome: 'chain_error', bytes: 0 });
  });

  it('relays no pseudo-header and no header of one hop', () => {
    expect(
      relayable({
        ':status': '200',
        'content-type': 'application/grpc',
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'content-length': '5',
        date: 'Thu, 01 Jan 2026 00:00:00 GMT',
        server: 'node',
        'grpc-status': '0',
        'x-custom': ['a', 'b'],
      }),
    ).to.deep.equal({ 'content-type': 'application/grpc', 'grpc-status': '0', 'x-custom': ['a', 'b'] });
  });
});
