// One gRPC call through the gateway once its chain endpoint is known, in the order of
// the HTTP pipeline: key (metadata `apikey`, removed at once) → request → key lookup →
// chain permission → plugin.parseGrpc → method and archive permission → admission →
// nodes in turn until one answers → the answer relayed as it streams, trailers last.
// Messages are never decoded: bytes pass through between their boundaries.

import { constants, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { extractKey } from '../auth/extract.js';
import type { KeyCache } from '../auth/key-cache.js';
import type { KeyRecord } from '../auth/key-store.js';
import { admitCall, chainRefusal, routeCall } from '../call-access.js';
import type { ChainRuntime } from '../chain-runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Call, ChainHandler, Routing, Verdict } from '../plugin.js';
import { Attempts } from '../pool/attempts.js';
import { ARCHIVE_FALLBACK } from '../pool/forwarder.js';
import { CallAborted, type StartedCall } from '../pool/grpc-client.js';
import { NodeFailure, NodeThrottled, type PoolNode } from '../pool/pool-node.js';
import type { Admission } from '../quota/admission.js';
import type { Limiter } from '../quota/limiter.js';
import type { Metrics } from '../metrics/metrics.js';
import { outcomeOf, type RequestOutcome } from '../request-record.js';
import { MessageScanner, PREFIX_BYTES } from './frames.js';
import {
  formatGrpcTimeout,
  grpcCodeName,
  GRPC_DEADLINE_EXCEEDED,
  parseGrpcTimeout,
  refusalHeaders,
  statusOf,
  statusTrailers,
} from './status.js';

export interface GrpcRelayDeps {
  readonly keys: KeyCache;
  readonly limiter: Limiter;
  /** Read per call, so a reload's new tiers apply at once. */
  readonly tiers: () => Readonly<Record<string, TierConfig>>;
  readonly metrics: Metrics;
  readonly maxBodyBytes: number;
  /** Largest message a node may answer with; a larger one counts as the node failing. */
  readonly maxResponseBytes: number;
  /** Bound of a call, every retry and the whole answer stream included (grpc-timeout may shorten it). */
  readonly requestTimeoutMs: number;
  /** Time a client has to send its whole request. */
  readonly requestReadTimeoutMs: number;
  /** The clock of limits and usage days (tests move it); deadlines use real time. */
  readonly now: () => number;
  touch(keyId: string, at: number): void;
}

/** Request headers that belong to one hop, or to the gateway, never to the node. */
const NOT_FORWARDED = new Set([
  'apikey',
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
/** Answer headers and trailers not relayed to the client. */
const NOT_RELAYED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'server']);
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

function relayable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.charCodeAt(0) === 58 || NOT_RELAYED.has(k) || v === undefined) continue;
    out[k] = v;
  }
  return out;
}

function rateMetadata(admission: Admission | undefined): Record<string, string> | undefined {
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

/** Answer a refusal as a trailers-only response; ask the client to stop sending (RST_STREAM NO_ERROR). */
export function refuse(stream: ServerHttp2Stream, err: GatewayError, extra?: Readonly<Record<string, string>>): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(refusalHeaders(err, extra), { endStream: true });
  if (!stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
}

export class GrpcRelay {
  constructor(private readonly deps: GrpcRelayDeps) {}

  /**
   * Handle one call to the end; `result` is filled in for metrics and the log, and the
   * returned number is the gRPC status the client was given (or CANCELLED = 1 when it left).
   */
  async handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, chain: ChainRuntime, result: RequestOutcome): Promise<number> {
    const { deps } = this;
    const fail = (e: GatewayError, extra?: Readonly<Record<string, string>>): number => {
      result.outcome = outcomeOf(e);
      refuse(stream, e, extra);
      return e.grpcCode;
    };
    let key: string | undefined;
    let keyError: GatewayError | undefined;
    try {
      key = extractKey(headers.apikey, '').key;
    } catch (err) {
      const e = err as GatewayError;
      keyError = e.code === 'MISSING_KEY' ? new GatewayError('MISSING_KEY', { message: MISSING_KEY_MESSAGE }) : e;
    }
    // From here on nothing can forward the key: it is gone from the headers.
    delete headers.apikey;
    const clientMs = parseGrpcTimeout(headers['grpc-timeout']);
    const deadline = Date.now() + Math.min(clientMs ?? Infinity, deps.requestTimeoutMs);

    const read = await readRequest(stream, deps.maxBodyBytes, Math.min(deps.requestReadTimeoutMs, Math.max(1, deadline - Date.now())));
    if (read === 'gone') {
      result.outcome = 'cancelled';
      return 1;
    }
    if ('error' in read) return fail(read.error);

    let record: KeyRecord | undefined;
    if (keyError === undefined) {
      try {
        record = await deps.keys.lookup(key as string);
      } catch (err) {
        keyError = err as GatewayError;
      }
    }
    if (keyError !== undefined || record === undefined) return fail(keyError ?? new GatewayError('INVALID_KEY'));
    result.key = record;
    deps.touch(record.id, deps.now());

    const tier = deps.tiers()[record.tier];
    const forbidden = chainRefusal(record, tier, chain.name);
    if (forbidden !== undefined || tier === undefined) return fail(forbidden ?? new GatewayError('FORBIDDEN'));
    const handler = chain.handler as Required<Pick<ChainHandler, 'parseGrpc' | 'judgeGrpc'>> & ChainHandler;
    let call: Call;
    try {
      const compressed = read.body[0] === 1;
      call = handler.parseGrpc({
        path: headers[':path'] as string,
        metadata: headers,
        message: compressed ? undefined : read.body.subarray(PREFIX_BYTES),
      });
    } catch (err) {
      return fail(isGatewayError(err) ? err : new GatewayError('INVALID_REQUEST', { cause: err }));
    }
    const routing = routeCall(chain, record, tier, call, deps.metrics);
    if (isGatewayError(routing)) return fail(routing);
    result.label = routing.label;
    const { admission, refusal } = await admitCall(deps.limiter, deps.metrics, chain.name, record, tier, routing.cost);
    if (refusal !== undefined) return fail(refusal, rateMetadata(admission));

    const status = await new Forward(stream, chain, handler, call, routing, read.body, forwardable(headers), deadline, deps, result).run(
      rateMetadata(admission),
    );
    if (status !== 0 && status !== 1) deps.limiter.countErrors(record.id, chain.name, 1);
    return status;
  }
}

/** One call's attempts on nodes and the relay of the answer that wins. */
class Forward {
  private readonly attempts: Attempts;
  private readonly abort = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private gone = false;

  constructor(
    private readonly client: ServerHttp2Stream,
    private readonly chain: ChainRuntime,
    private readonly handler: Required<Pick<ChainHandler, 'judgeGrpc'>>,
    private readonly call: Call,
    private readonly routing: Routing,
    private readonly body: Buffer,
    private readonly metadata: OutgoingHttpHeaders,
    deadline: number,
    private readonly deps: GrpcRelayDeps,
    private readonly result: RequestOutcome,
  ) {
    this.attempts = new Attempts(chain.pool, deadline);
    this.timer = setTimeout(() => this.abort.abort(), Math.max(1, deadline - Date.now()));
    // A client that cancels (RST_STREAM) or drops the connection: stop, and cancel the node's call.
    client.once('close', () => {
      if (client.rstCode !== constants.NGHTTP2_NO_ERROR || !client.writableFinished) {
        this.gone = true;
        this.abort.abort();
      }
    });
  }

  async run(rate: Record<string, string> | undefined): Promise<number> {
    try {
      return await this.attemptAll(rate);
    } finally {
      clearTimeout(this.timer);
      this.result.attempts = this.attempts.count;
    }
  }

  private cancelled(): number {
    this.result.outcome = 'cancelled';
    return 1;
  }

  private refuse(e: GatewayError): number {
    this.result.outcome = outcomeOf(e);
    refuse(this.client, e);
    return e.grpcCode;
  }

  private async attemptAll(rate: Record<string, string> | undefined): Promise<number> {
    const { chain, attempts } = this;
    const observer = chain.forwarder.observer;
    let route = this.routing;
    let pruned: StartedCall | undefined;
    for (;;) {
      if (this.gone) return this.cancelled();
      const node = attempts.next(route);
      if (node === undefined) {
        // With no archive node left, a full node's pruned answer is the best answer there is.
        if (pruned !== undefined) return this.answerEnded(pruned, 'chain-error', rate);
        return this.refuse(this.abort.signal.aborted ? new GatewayError('UPSTREAM_TIMEOUT') : attempts.error());
      }
      const started = performance.now();
      let answer: { call: StartedCall; verdict: Verdict } | undefined;
      try {
        answer = await node.call(() => this.attempt(node));
      } catch (err) {
        chain.forwarder.attemptFailed(node, attempts, err, started);
        continue;
      }
      if (answer === undefined) return this.cancelled();
      const seconds = (performance.now() - started) / 1000;
      node.observeLatency(seconds * 1000);
      this.result.node = node.name;
      if (answer.verdict === 'pruned' && node.role === 'full') {
        observer.upstream?.(chain.pool, node, 'pruned', seconds);
        observer.retry?.(chain.pool, 'pruned');
        pruned = answer.call;
        route = ARCHIVE_FALLBACK;
        continue;
      }
      if (answer.call.trailers !== undefined) {
        observer.upstream?.(chain.pool, node, answer.verdict === 'ok' ? 'ok' : 'chain-error', seconds);
        return this.answerEnded(answer.call, answer.verdict, rate);
      }
      return this.relay(node, answer.call, rate, started);
    }
  }

  /**
   * One node's attempt, inside its breaker: throws for answers that blame the node (the
   * deadline passing counts as the node timing out); undefined when the client left.
   */
  private async attempt(node: PoolNode): Promise<{ call: StartedCall; verdict: Verdict } | undefined> {
    const headers = { ...this.metadata, 'grpc-timeout': formatGrpcTimeout(this.attempts.remaining()) };
    let call: StartedCall;
    try {
      call = await node.upstream.grpc.start(this.call.method, headers, this.body, this.attempts.timeoutFor(), this.abort.signal);
    } catch (err) {
      if (!(err instanceof CallAborted)) throw err;
      if (this.gone) return undefined;
      throw new NodeFailure('timeout', 'node did not answer before the deadline');
    }
    if (call.trailers === undefined) {
      // The first message must fit the cap before anything reaches the client.
      if (call.first !== undefined && !new MessageScanner(this.deps.maxResponseBytes).push(call.first)) {
        call.stream.close(constants.NGHTTP2_CANCEL);
        throw new NodeFailure('too-large', 'node answered a message over the cap');
      }
      return { call, verdict: 'ok' };
    }
    const status = statusOf(call.trailers) as { code: number; message: string };
    const verdict = status.code === 0 ? 'ok' : this.handler.judgeGrpc(this.call, status);
    if (verdict === 'node-failure') throw new NodeFailure('status', `node answered ${grpcCodeName(status.code)}`);
    if (verdict === 'throttled') throw new NodeThrottled();
    return { call, verdict };
  }

  /** A node's answer that ended before any message: relayed as one trailers-only response. */
  private answerEnded(call: StartedCall, verdict: Verdict, rate: Record<string, string> | undefined): number {
    const t = call.trailers as IncomingHttpHeaders;
    const code = (statusOf(t) as { code: number }).code;
    this.result.outcome =
      code === 0 ? 'ok' : verdict === 'ok' || verdict === 'chain-error' || verdict === 'pruned' ? 'chain_error' : 'upstream_failed';
    if (this.client.destroyed || this.client.closed) return this.cancelled();
    this.client.respond({ ...relayable(call.headers), ...relayable(t), ...rate, ':status': 200 }, { endStream: true });
    return code;
  }

  /** Stream the answer to the client as it arrives (backpressure both ways), then its trailers. */
  private relay(node: PoolNode, call: StartedCall, rate: Record<string, string> | undefined, started: number): Promise<number> {
    const { client, chain } = this;
    const upstream = call.stream;
    const scanner = new MessageScanner(this.deps.maxResponseBytes);
    return new Promise<number>((resolve) => {
      let trailers: IncomingHttpHeaders | undefined;
      let final: OutgoingHttpHeaders | undefined;
      let failure: 'failure' | 'timeout' | undefined;
      let settled = false;
      const finish = (t: OutgoingHttpHeaders, outcome: 'failure' | 'timeout' | undefined): void => {
        if (final !== undefined) return;
        final = t;
        failure = outcome;
        this.abort.signal.removeEventListener('abort', onAbort);
        if (!upstream.destroyed && !upstream.readableEnded) upstream.close(constants.NGHTTP2_CANCEL);
        if (!client.destroyed && !client.closed) client.end();
        else done();
      };
      const done = (): void => {
        if (settled) return;
        settled = true;
        if (!upstream.destroyed && !upstream.readableEnded) upstream.close(constants.NGHTTP2_CANCEL);
        const status = statusOf(final ?? {}) ?? { code: 1, message: '' };
        const code = status.code;
        const verdict = code === 0 ? 'ok' : this.handler.judgeGrpc(this.call, status);
        // A client leaving is not the node's doing.
        const outcome = this.gone
          ? 'ok'
          : (failure ?? (verdict === 'ok' ? 'ok' : verdict === 'chain-error' || verdict === 'pruned' ? 'chain-error' : 'failure'));
        chain.forwarder.observer.upstream?.(chain.pool, node, outcome, (performance.now() - started) / 1000);
        if (this.gone) this.cancelled();
        else if (failure === 'timeout') this.result.outcome = 'upstream_timeout';
        else this.result.outcome = code === 0 ? 'ok' : outcome === 'chain-error' ? 'chain_error' : 'upstream_failed';
        resolve(this.gone ? 1 : code);
      };
      const onAbort = (): void => {
        if (this.gone) finish({ 'grpc-status': '1' }, undefined);
        else finish(statusTrailers(GRPC_DEADLINE_EXCEEDED, 'Deadline exceeded while relaying the answer'), 'timeout');
      };
      const write = (chunk: Buffer): void => {
        if (!scanner.push(chunk)) {
          finish(statusTrailers(new GatewayError('UPSTREAM_FAILED').grpcCode, 'Node answered a message over the size cap'), 'failure');
          return;
        }
        if (!client.write(chunk)) upstream.pause();
      };
      client.respond({ ...relayable(call.headers), ...rate, ':status': 200 }, { waitForTrailers: true });
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
        else finish(statusTrailers(14, 'Node ended the call without a status'), 'failure');
      });
      upstream.on('close', () => finish(statusTrailers(14, 'Node reset the call'), 'failure'));
      this.abort.signal.addEventListener('abort', onAbort);
      if (call.first !== undefined) write(call.first);
      upstream.resume();
    });
  }
}
