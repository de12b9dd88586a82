// Relaying a node's gRPC answer to the client once the call path has committed to it:
// a trailers-only answer in one HEADERS frame, or a stream passed through as the node
// sends it, with backpressure both ways, each message held to the size cap, and the
// node's trailers last. The deadline and a client's cancel stop it, the node's call
// included. It tells the exchange how the node ended, for the node's metrics and breaker.

import { constants, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { GrpcAnswer } from '../../exec/exchanges/grpc-exchange.js';
import type { ClientOutcome, UpstreamOutcome } from '../../exec/outcome.js';
import { GRPC_DEADLINE_EXCEEDED, GRPC_UNAVAILABLE } from '../../grpc-wire/codes.js';
import { MessageScanner } from '../../grpc-wire/frames.js';
import { statusOf, statusTrailers } from '../../grpc-wire/status.js';
import type { GrpcCall, GrpcCodec, Verdict } from '../../plugin/contract.js';

/** Answer headers and trailers not relayed to the client. */
const NOT_RELAYED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'server']);

export function relayable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.charCodeAt(0) === 58 || NOT_RELAYED.has(k) || v === undefined) continue;
    out[k] = v;
  }
  return out;
}

/** How a relayed call ended: the gRPC status the client got, the request's outcome, and the bytes of messages relayed. */
export interface Relayed {
  readonly code: number;
  readonly outcome: ClientOutcome;
  readonly bytes: number;
}

export interface RelayContext {
  readonly client: ServerHttp2Stream;
  readonly codec: GrpcCodec<unknown>;
  readonly call: GrpcCall;
  readonly maxResponseBytes: number;
  /** Aborts when the client leaves or the deadline passes. */
  readonly signal: AbortSignal;
  readonly clientGone: () => boolean;
  /** RateLimit-* metadata for the answer's headers. */
  readonly rate: Readonly<Record<string, string>> | undefined;
}

function outcomeOfVerdict(code: number, verdict: Verdict): ClientOutcome {
  if (code === 0) return 'ok';
  return verdict === 'ok' || verdict === 'chain_error' || verdict === 'pruned' ? 'chain_error' : 'upstream_failed';
}

/** A node's answer that ended before any message: one trailers-only response. */
export function relayEnded(ctx: RelayContext, answer: GrpcAnswer, verdict: Verdict): Relayed {
  const t = answer.started.trailers as IncomingHttpHeaders;
  const code = (statusOf(t) as { code: number }).code;
  const { client } = ctx;
  if (client.destroyed || client.closed) return { code: 1, outcome: 'cancelled', bytes: 0 };
  client.respond({ ...relayable(answer.started.headers), ...relayable(t), ...ctx.rate, ':status': 200 }, { endStream: true });
  return { code, outcome: outcomeOfVerdict(code, verdict), bytes: 0 };
}

/** Stream the answer to the client as it arrives (backpressure both ways), then its trailers. */
export function relayStream(ctx: RelayContext, answer: GrpcAnswer): Promise<Relayed> {
  const { client } = ctx;
  const upstream = answer.started.stream;
  const scanner = new MessageScanner(ctx.maxResponseBytes);
  return new Promise<Relayed>((resolve) => {
    let trailers: IncomingHttpHeaders | undefined;
    let final: OutgoingHttpHeaders | undefined;
    let failure: 'failure' | 'timeout' | undefined;
    let settled = false;
    let bytes = 0;
    const finish = (t: OutgoingHttpHeaders, outcome: 'failure' | 'timeout' | undefined): void => {
      if (final !== undefined) return;
      final = t;
      failure = outcome;
      ctx.signal.removeEventListener('abort', onAbort);
      if (!upstream.destroyed && !upstream.readableEnded) upstream.close(constants.NGHTTP2_CANCEL);
      if (!client.destroyed && !client.closed) client.end();
      else done();
    };
    const done = (): void => {
      if (settled) return;
      settled = true;
      if (!upstream.destroyed && !upstream.readableEnded) upstream.close(constants.NGHTTP2_CANCEL);
      const status = statusOf(final ?? {}) ?? { code: 1, message: '' };
      const gone = ctx.clientGone();
      const verdict: Verdict = status.code === 0 ? 'ok' : ctx.codec.judge(ctx.call, { kind: 'grpc', ...status });
      // A client leaving is not the node's doing.
      const upstreamOutcome: UpstreamOutcome = gone
        ? 'ok'
        : (failure ?? (verdict === 'ok' ? 'ok' : verdict === 'chain_error' || verdict === 'pruned' ? 'chain_error' : 'failure'));
      answer.end(upstreamOutcome);
      if (gone) resolve({ code: 1, outcome: 'cancelled', bytes });
      else if (failure === 'timeout') resolve({ code: status.code, outcome: 'upstream_timeout', bytes });
      else
        resolve({
          code: status.code,
          outcome: upstreamOutcome === 'failure' ? 'upstream_failed' : outcomeOfVerdict(status.code, verdict),
          bytes,
        });
    };
    const onAbort = (): void => {
      if (ctx.clientGone()) finish({ 'grpc-status': '1' }, undefined);
      else finish(statusTrailers(GRPC_DEADLINE_EXCEEDED, 'Deadline exceeded while relaying the answer'), 'timeout');
    };
    const write = (chunk: Buffer): void => {
      if (!scanner.push(chunk)) {
        finish(statusTrailers(GRPC_UNAVAILABLE, 'Node answered a message over the size cap'), 'failure');
        return;
      }
      bytes += chunk.length;
      if (!client.write(chunk)) upstream.pause();
    };
    client.respond({ ...relayable(answer.started.headers), ...ctx.rate, ':status': 200 }, { waitForTrailers: true });
    client.on('wantTrailers', () => {
      if (final !== undefined && !client.destroyed) client.sendTrailers(relayable(final as IncomingHttpHeaders));
    });
    client.on('drain', () => upstream.resume());
    client.on('close', done);
    upstream.on('trailers', (t) => {
      trailers = t;
    });
    upstream.on('data', write);
    upstream.on('end', () => {
      if (trailers !== undefined && statusOf(trailers) !== undefined) finish(trailers, undefined);
      else finish(statusTrailers(GRPC_UNAVAILABLE, 'Node ended the call without a status'), 'failure');
    });
    upstream.on('close', () => finish(statusTrailers(GRPC_UNAVAILABLE, 'Node reset the call'), 'failure'));
    ctx.signal.addEventListener('abort', onAbort);
    if (answer.started.first !== undefined) write(answer.started.first);
    upstream.resume();
  });
}
