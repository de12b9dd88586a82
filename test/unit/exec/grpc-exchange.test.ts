// The gRPC exchange (src/exec/exchanges/grpc-exchange.ts) against a real cleartext HTTP/2 server
// on loopback: a trailers-only answer is judged (and may move on), a first message over
// the size cap is refused before anything is relayed, a streaming answer is committed at
// its first message and settles with how its relay ended, and a call the deadline cut is
// the node's timeout while one the client left is nobody's failure.

import { expect } from 'chai';
import { constants, createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Sent } from '../../../src/exec/exchanges/exchange.js';
import { GrpcExchange, type GrpcAnswer } from '../../../src/exec/exchanges/grpc-exchange.js';
import { frameMessage } from '../../../src/grpc-wire/frames.js';
import type { GrpcCall, GrpcCodec, GrpcReply, Verdict } from '../../../src/plugin/contract.js';
import { CallAborted, NodeFailure, NodeThrottled } from '../../../src/pool/failures.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { chainConfig } from '../../support/chain.js';
import { until } from '../../support/until.js';
import { rejection } from '../../support/rejection.js';

const GRPC = { ':status': 200, 'content-type': 'application/grpc' } as const;

/** How the test node answers each method. */
function serve(stream: ServerHttp2Stream, path: string, held: ServerHttp2Stream[]): void {
  const trailersOnly = (code: number, message?: string): void =>
    stream.respond(
      { ...GRPC, 'grpc-status': String(code), ...(message === undefined ? {} : { 'grpc-message': message }) },
      { endStream: true },
    );
  switch (path) {
    case '/t.S/Found':
      return trailersOnly(0);
    case '/t.S/NotFound':
      return trailersOnly(5, 'no%20such%20thing');
    case '/t.S/Unavailable':
      return trailersOnly(14, 'syncing');
    case '/t.S/Exhausted':
      return trailersOnly(8);
    case '/t.S/Http503':
      stream.respond({ ':status': 503 }, { endStream: true });
      return;
    case '/t.S/Big':
      stream.respond(GRPC);
      stream.write(frameMessage(Buffer.alloc(1_000, 1)));
      held.push(stream);
      return;
    case '/t.S/Stream':
      stream.respond(GRPC, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.write(frameMessage(Buffer.from('first')));
      held.push(stream);
      return;
    default:
      // Hangs: never answers.
      held.push(stream);
  }
}

describe('gRPC exchange (src/exec/exchanges/grpc-exchange.ts)', () => {
  let server: Http2Server;
  let pool: NodePool;
  let node: PoolNode;
  const seen: Array<{ headers: IncomingHttpHeaders; body: Buffer }> = [];
  const held: ServerHttp2Stream[] = [];
  const judged: Array<[number, string]> = [];

  const codec: GrpcCodec<undefined> = {
    parse: (c) => ({ kind: 'grpc', method: c.path, meta: undefined }),
    judge(_call: GrpcCall<undefined>, reply: GrpcReply): Verdict {
      judged.push([reply.code, reply.message]);
      return reply.code === 14 ? 'node_failure' : reply.code === 8 ? 'throttled' : 'chain_error';
    },
  };
  const call = (method: string): GrpcCall => ({ kind: 'grpc', method, meta: undefined });
  const body = frameMessage(Buffer.from('request'));

  function exchange(over: { maxResponseBytes?: number; signal?: AbortSignal; clientGone?: () => boolean } = {}): GrpcExchange {
    return new GrpcExchange(
      codec,
      body,
      { 'content-type': 'application/grpc', te: 'trailers', 'x-custom': 'kept' },
      Date.now() + 5_000,
      over.maxResponseBytes ?? 4 * 1024 * 1024,
      over.signal ?? new AbortController().signal,
      over.clientGone ?? (() => false),
    );
  }

  beforeEach(async () => {
    seen.length = 0;
    judged.length = 0;
    server = createServer();
    server.on('stream', (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        seen.push({ headers, body: Buffer.concat(chunks) });
        serve(stream, String(headers[':path']), held);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    pool = new NodePool(await chainConfig([{ name: 'g', url: `http://127.0.0.1:${port}`, role: 'full' }]));
    node = pool.nodes[0] as PoolNode;
  });

  afterEach(async () => {
    for (const s of held.splice(0)) if (!s.destroyed) s.close(constants.NGHTTP2_CANCEL);
    await pool.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('sends the request’s framed message and metadata as they came, with the time left as grpc-timeout', async () => {
    await exchange().send(node, [call('/t.S/Found')], 1_000);
    expect(seen).to.have.length(1);
    const [{ headers, body: got }] = seen as [{ headers: IncomingHttpHeaders; body: Buffer }];
    expect(got.equals(body)).to.equal(true);
    expect(headers['x-custom']).to.equal('kept');
    expect(headers['grpc-timeout']).to.match(/^\d+m$/);
    expect(Number(String(headers['grpc-timeout']).slice(0, -1))).to.be.within(1, 5_000);
  });

  describe('trailers-only answers', () => {
    it('takes status OK as the answer without asking the plugin', async () => {
      const [sent] = await exchange().send(node, [call('/t.S/Found')], 1_000);
      expect(sent?.verdict).to.equal('ok');
      expect(sent?.settled).to.equal(undefined);
      expect(sent?.answer?.started.trailers?.['grpc-status']).to.equal('0');
      expect(judged).to.deep.equal([]);
    });

    it('has the plugin judge any other status, with its decoded message', async () => {
      const [sent] = await exchange().send(node, [call('/t.S/NotFound')], 1_000);
      expect(sent?.verdict).to.equal('chain_error');
      expect(judged).to.deep.equal([[5, 'no such thing']]);
    });

    it('throws for a status the plugin blames on the node, or takes for the node asking for less', async () => {
      expect(await rejection(exchange().send(node, [call('/t.S/Unavailable')], 1_000)))
        .to.be.instanceOf(NodeFailure)
        .with.property('reason', 'status');
      expect(await rejection(exchange().send(node, [call('/t.S/Exhausted')], 1_000))).to.be.instanceOf(NodeThrottled);
    });

    it('takes an HTTP status other than 200 for the node failing', async () => {
      expect(await rejection(exchange().send(node, [call('/t.S/Http503')], 1_000)))
        .to.be.instanceOf(NodeFailure)
        .with.property('reason', 'status');
    });
  });

  it('refuses a first message over the cap before anything is relayed, cancelling the node’s stream', async () => {
    const err = await rejection(exchange({ maxResponseBytes: 100 }).send(node, [call('/t.S/Big')], 1_000));
    expect(err).to.be.instanceOf(NodeFailure).with.property('reason', 'too-large');
    await until(() => held[0]?.closed === true, { what: 'the node sees its stream cancelled' });
    expect(held[0]?.rstCode).to.equal(constants.NGHTTP2_CANCEL);
  });

  it('commits to a streaming answer at its first message, and settles with how its relay ended', async () => {
    const [sent] = (await exchange().send(node, [call('/t.S/Stream')], 1_000)) as [Sent<GrpcAnswer>];
    expect(sent.verdict).to.equal('ok');
    expect(sent.sure).to.equal(true);
    const answer = sent.answer as GrpcAnswer;
    expect(answer.started.trailers).to.equal(undefined);
    expect(answer.started.first?.equals(frameMessage(Buffer.from('first')))).to.equal(true);
    // The transport relays the rest: the node's stream waits, paused, for it.
    const rest: Buffer[] = [];
    let trailers: IncomingHttpHeaders | undefined;
    answer.started.stream.on('data', (c: Buffer) => rest.push(c));
    answer.started.stream.on('trailers', (t) => {
      trailers = t;
    });
    answer.started.stream.resume();
    const stream = held[0] as ServerHttp2Stream;
    stream.end(frameMessage(Buffer.from('second')));
    await until(() => trailers !== undefined, { what: 'the answer ends' });
    expect(Buffer.concat(rest).equals(frameMessage(Buffer.from('second')))).to.equal(true);
    let outcome: string | undefined;
    void sent.settled?.then((o) => {
      outcome = o;
    });
    answer.end('failure');
    await until(() => outcome !== undefined, { what: 'the answer settles' });
    expect(outcome).to.equal('failure');
  });

  it('takes a call the deadline cut for the node timing out, and one its client left for nobody’s failure', async () => {
    const deadline = new AbortController();
    const pending = exchange({ signal: deadline.signal }).send(node, [call('/t.S/Hang')], 5_000);
    await until(() => held.length === 1, { what: 'the node has the call' });
    deadline.abort();
    expect(await rejection(pending))
      .to.be.instanceOf(NodeFailure)
      .with.property('reason', 'timeout');

    const left = new AbortController();
    const gone = exchange({ signal: left.signal, clientGone: () => true }).send(node, [call('/t.S/Hang')], 5_000);
    await until(() => held.length === 2, { what: 'the node has the second call' });
    left.abort();
    expect(await rejection(gone)).to.be.instanceOf(CallAborted);
  });
});
