// One gRPC call through the gateway once its chain endpoint is known, in the order of
// the HTTP pipeline: key (metadata `apikey`, removed at once) → request → key lookup →
// chain permission → plugin.parseGrpc → method and archive permission → admission →
// nodes in turn until one answers and its answer relayed as it streams (forward.ts).
// Messages are never decoded: bytes pass through between their boundaries.

import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { extractKey } from '../auth/extract.js';
import type { KeyCache } from '../auth/key-cache.js';
import { hashKey } from '../auth/key-format.js';
import type { KeyRecord } from '../auth/key-store.js';
import type { CallAccess } from '../calls/access.js';
import { outcomeOf, type RequestOutcome } from '../calls/request-record.js';
import type { ChainRuntime } from '../chain-runtime.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Call, ChainHandler } from '../plugin.js';
import type { Admission } from '../quota/admission.js';
import { Forward } from './forward.js';
import { MessageScanner, PREFIX_BYTES } from './frames.js';
import { parseGrpcTimeout, refuse } from './status.js';

export interface GrpcRelayDeps {
  readonly keys: KeyCache;
  /** Permissions and admission, the same as every other transport's. */
  readonly access: CallAccess;
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
        const hash = hashKey(key as string);
        record = (deps.keys.peekHash(hash) ?? (await deps.keys.lookupHash(hash))).record;
      } catch (err) {
        keyError = err as GatewayError;
      }
    }
    if (keyError !== undefined || record === undefined) return fail(keyError ?? new GatewayError('INVALID_KEY'));
    result.key = record;
    deps.touch(record.id, deps.now());

    const tier = deps.access.tierFor(record, chain);
    if (isGatewayError(tier)) return fail(tier);
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
    const routing = deps.access.route(chain, record, tier, call);
    if (isGatewayError(routing)) return fail(routing);
    result.label = routing.label;
    const admitted = await deps.access.admit(chain, record, tier, routing.cost);
    if (isGatewayError(admitted)) return fail(admitted);
    const admission = admitted.admission;
    if (admitted.error !== undefined) return fail(admitted.error, rateMetadata(admission));

    const status = await new Forward(stream, chain, handler, call, routing, read.body, forwardable(headers), deadline, deps, result).run(
      rateMetadata(admission),
    );
    if (status !== 0 && status !== 1) deps.access.countErrors(record.id, chain.name, 1);
    return status;
  }
}
