// One gRPC call through the gateway once its chain endpoint is known: the key from
// metadata `apikey` (checked, and removed, before the message is read) → the request
// message → plugin's codec → the call path with a gRPC exchange (nodes in turn until
// one answers, committed at the first byte) → the answer relayed as it streams
// (answer-relay.ts). Messages are never decoded: bytes pass between their boundaries.

import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { constants } from 'node:http2';
import type { ChainRuntime } from '../../chain/runtime.js';
import type { Principal } from '../../exec/principal.js';
import type { CallPath } from '../../exec/call-path.js';
import { GrpcExchange } from '../../exec/exchanges/grpc-exchange.js';
import type { Identifier } from '../../exec/identify.js';
import { RestrictedError } from '../../exec/restrict.js';
import { outcomeOf, type RequestOutcome } from '../../exec/request-record.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { MessageScanner, PREFIX_BYTES } from '../../grpc-wire/frames.js';
import { parseGrpcTimeout, refuse } from '../../grpc-wire/status.js';
import type { GrpcCall, GrpcCodec } from '../../plugin/contract.js';
import type { Admission } from '../../quota/admission.js';
import { relayEnded, relayStream, type RelayContext } from './answer-relay.js';

/** A chain endpoint the gRPC listener serves: its plugin reads gRPC calls. */
export type GrpcChain = ChainRuntime & { readonly handler: { readonly grpc: GrpcCodec<unknown> } };

export function isGrpcChain(rt: ChainRuntime): rt is GrpcChain {
  return rt.handler.grpc !== undefined;
}

/** Limits read per call, so a reload applies them at once. */
export interface GrpcLimits {
  readonly maxBodyBytes: number;
  /** Largest message a node may answer with; a larger one counts as the node failing. */
  readonly maxResponseBytes: number;
  /** Bound of a call, every retry and the whole answer stream included (grpc-timeout may shorten it). */
  readonly requestTimeoutMs: number;
  /** Time a client has to send its whole request. */
  readonly requestReadTimeoutMs: number;
}

export interface GrpcRelayDeps {
  readonly identifier: Identifier;
  readonly path: CallPath;
  readonly limits: () => GrpcLimits;
}

/** Request headers that belong to one hop, or to the gateway, or are a customer's credentials: never sent to a node. */
const NOT_FORWARDED = new Set([
  'apikey',
  'apikey-bin',
  'authorization',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'te',
  'content-length',
  'grpc-timeout',
  'http2-settings',
]);
const MISSING_KEY_MESSAGE = 'API key required: send metadata "apikey"';

type ReadResult = { body: Buffer } | { error: GatewayError } | 'gone';

function forwardable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.charCodeAt(0) === 58 || NOT_FORWARDED.has(k) || v === undefined) continue;
    out[k] = v;
  }
  out.te = 'trailers';
  return out;
}

function rateMetadata(admission: Admission | undefined): Readonly<Record<string, string>> | undefined {
  const h = admission?.headers;
  if (h === undefined) return undefined;
  return { 'ratelimit-limit': String(h.limit), 'ratelimit-remaining': String(h.remaining), 'ratelimit-reset': String(h.reset) };
}

/** Read the request (one message, then END_STREAM), bounded in size and time. */
function readRequest(stream: ServerHttp2Stream, maxBytes: number, timeoutMs: number): Promise<ReadResult> {
  return new Promise((resolve) => {
    const scanner = new MessageScanner(maxBytes - PREFIX_BYTES);
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (r: ReadResult): void => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onClose);
      if (r !== 'gone' && 'error' in r) stream.pause();
      resolve(r);
    };
    const streaming = (): ReadResult => ({
      error: new GatewayError('METHOD_NOT_FOUND', {
        message: 'Client-streaming and bidirectional calls are not relayed: send one request message and end the stream',
      }),
    });
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes || !scanner.push(chunk)) {
        return done({ error: new GatewayError('BODY_TOO_LARGE', { message: `Request message over ${maxBytes} bytes` }) });
      }
      if (scanner.started > 1) return done(streaming());
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      if (scanner.started !== 1 || !scanner.atBoundary) {
        return done({ error: new GatewayError('INVALID_REQUEST', { message: 'A call carries exactly one whole request message' }) });
      }
      done({ body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size) });
    };
    const onClose = (): void => done('gone');
    const timer = setTimeout(() => {
      // One whole message and no end: the client waits for answers before it ends (bidi).
      if (scanner.started === 1 && scanner.atBoundary) return done(streaming());
      done({ error: new GatewayError('INVALID_REQUEST', { message: 'The request was not sent in time' }) });
    }, timeoutMs);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('close', onClose);
  });
}

export class GrpcRelay {
  constructor(private readonly deps: GrpcRelayDeps) {}

  /**
   * Handle one call to the end; `trace` is filled in for metrics and the log, and the
   * returned number is the gRPC status the client was given (or CANCELLED = 1 when it left).
   */
  async handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, chain: GrpcChain, trace: RequestOutcome): Promise<number> {
    const { deps } = this;
    const fail = (e: GatewayError, extra?: Readonly<Record<string, string>>): number => {
      trace.outcome = outcomeOf(e);
      refuse(stream, e, extra);
      return e.grpcCode;
    };
    // An auth failure (401) ends its connection (GOAWAY: calls in flight on it finish): a key
    // guesser pays a new connection per guess. Any other refusal (a key not permitted here,
    // the key store away) keeps it: the client did nothing a new connection would change.
    const refuseKey = (e: GatewayError): number => {
      const code = fail(e);
      stream.session?.close();
      return code;
    };
    if (headers.apikey === undefined) return refuseKey(new GatewayError('MISSING_KEY', { message: MISSING_KEY_MESSAGE }));
    let who = deps.identifier.identify(chain, { headers, socket: stream.session?.socket }, '', 'grpc');
    // From here on nothing can forward the key: it is gone from the headers.
    delete headers.apikey;
    if (who instanceof Promise) who = await who;
    if (who instanceof RestrictedError) trace.key = who.key;
    if (isGatewayError(who)) return who.status === 401 ? refuseKey(who) : fail(who);
    const { principal } = who;
    trace.key = principal.record;

    const limits = deps.limits();
    const clientMs = parseGrpcTimeout(headers['grpc-timeout']);
    const deadline = Date.now() + Math.min(clientMs ?? Infinity, limits.requestTimeoutMs);
    const read = await readRequest(stream, limits.maxBodyBytes, Math.min(limits.requestReadTimeoutMs, Math.max(1, deadline - Date.now())));
    if (read === 'gone') {
      trace.outcome = 'cancelled';
      return 1;
    }
    // A keyed request that becomes no call is charged like one (CallPath.refused): 8 RESOURCE_EXHAUSTED when flooding.
    const charged = async (e: GatewayError): Promise<number> => {
      const c = await deps.path.refused(chain, principal, 'invalid', trace);
      return fail(c.error ?? e, rateMetadata(c.admission));
    };
    if ('error' in read) return charged(read.error);
    trace.bytesIn = read.body.length;

    let call: GrpcCall;
    try {
      const compressed = read.body[0] === 1;
      const message = compressed ? undefined : read.body.subarray(PREFIX_BYTES);
      call = chain.handler.grpc.parse({ path: headers[':path'] as string, metadata: headers, message });
    } catch (err) {
      return charged(isGatewayError(err) ? err : new GatewayError('INVALID_REQUEST', { cause: err }));
    }
    return this.forward(stream, chain, principal, call, read.body, forwardable(headers), deadline, limits, trace);
  }

  private async forward(
    client: ServerHttp2Stream,
    chain: GrpcChain,
    principal: Principal,
    call: GrpcCall,
    body: Buffer,
    metadata: OutgoingHttpHeaders,
    deadline: number,
    limits: GrpcLimits,
    trace: RequestOutcome,
  ): Promise<number> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), Math.max(1, deadline - Date.now()));
    let gone = false;
    // A client that cancels (RST_STREAM) or drops the connection: stop, and cancel the node's call.
    client.once('close', () => {
      if (client.rstCode !== constants.NGHTTP2_NO_ERROR || !client.writableFinished) {
        gone = true;
        abort.abort();
      }
    });
    const codec = chain.handler.grpc;
    const clientGone = (): boolean => gone;
    try {
      const exchange = new GrpcExchange(codec, body, metadata, deadline, limits.maxResponseBytes, abort.signal, clientGone);
      const run = await this.deps.path.run({ chain, principal, calls: [call], exchange, deadline, trace });
      const rate = rateMetadata(run.admission);
      const r = run.results[0];
      if (gone) {
        trace.outcome = 'cancelled';
        return 1;
      }
      if (r === undefined || isGatewayError(r) || r.answer === undefined) {
        const e = r !== undefined && isGatewayError(r) ? r : new GatewayError('UPSTREAM_FAILED');
        trace.outcome = outcomeOf(e);
        refuse(client, e, rate);
        return e.grpcCode;
      }
      const ctx: RelayContext = { client, codec, call, maxResponseBytes: limits.maxResponseBytes, signal: abort.signal, clientGone, rate };
      const relayed = r.answer.started.trailers !== undefined ? relayEnded(ctx, r.answer, r.verdict) : await relayStream(ctx, r.answer);
      trace.outcome = relayed.outcome;
      trace.bytesOut = relayed.bytes;
      return relayed.code;
    } finally {
      clearTimeout(timer);
    }
  }
}
