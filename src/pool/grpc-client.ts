// The HTTP/2 (h2c) client to one gRPC node: one session, opened on first use and again
// after the node sends GOAWAY or the connection closes. It opens calls and reads
// statuses; what a status means is the plugin's call. Failures of the transport
// (refused, reset, no answer in time, not a gRPC answer) are NodeFailures.

import {
  connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import { frameMessage, splitMessages } from '../grpc-wire/frames.js';
import { formatGrpcTimeout, statusOf } from '../grpc-wire/status.js';
import type { GrpcNodeClient, GrpcUnaryReply } from '../plugin/contract.js';
import { CallAborted, NodeFailure } from './failures.js';

/** A call whose answer has begun: its headers, and its first data or its end. */
export interface StartedCall {
  readonly stream: ClientHttp2Stream;
  readonly headers: IncomingHttpHeaders;
  /** The first chunk of the answer's body (the stream is paused after it); undefined when none came. */
  readonly first: Buffer | undefined;
  /** Set when the answer ended before any data: its trailers, or the headers of a trailers-only answer. */
  readonly trailers: IncomingHttpHeaders | undefined;
}

const REFUSED = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET/;

function failureOf(err: unknown): NodeFailure {
  if (err instanceof NodeFailure) return err;
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  const text = `${e.code ?? ''} ${e.cause?.code ?? ''} ${e.message ?? ''}`;
  if (REFUSED.test(text)) return new NodeFailure('connect', 'node refused or reset the connection');
  return new NodeFailure('io', 'node connection failed');
}

export class GrpcClient implements GrpcNodeClient {
  private session: ClientHttp2Session | undefined;
  private readonly authority: string;
  private closed = false;
  /** Calls open on the node (health probes included). */
  active = 0;

  private readonly origin: string;

  /**
   * `url`: the node's URL; gRPC goes to its origin (h2c). `headers`: the node's own
   * (credentials), sent as metadata on every call over whatever the call carries.
   */
  constructor(
    url: string,
    private readonly headers: Readonly<Record<string, string>> = {},
  ) {
    const u = new URL(url);
    this.origin = u.origin;
    this.authority = u.host;
  }

  private current(): ClientHttp2Session {
    const s = this.session;
    if (s !== undefined && !s.closed && !s.destroyed) return s;
    const next = connect(this.origin);
    const forget = (): void => {
      if (this.session === next) this.session = undefined;
    };
    // Errors reach the streams on the session; the session is only forgotten.
    next.on('error', forget);
    next.on('goaway', forget);
    next.on('close', forget);
    this.session = next;
    return next;
  }

  /**
   * Send a call (`body`: the request's framed messages) and wait for the answer to
   * begin: its first data or its end. Rejects with a NodeFailure when the node refuses,
   * resets, sends no headers within `headersTimeoutMs`, or answers other than HTTP 200;
   * with CallAborted when `signal` aborts first (the node's stream is cancelled).
   */
  start(path: string, metadata: OutgoingHttpHeaders, body: Buffer, headersTimeoutMs: number, signal?: AbortSignal): Promise<StartedCall> {
    if (this.closed) return Promise.reject(new NodeFailure('connect', 'node client is closed'));
    if (signal?.aborted === true) return Promise.reject(new CallAborted());
    return new Promise<StartedCall>((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        stream = this.current().request(
          { ...metadata, ...this.headers, ':method': 'POST', ':scheme': 'http', ':authority': this.authority, ':path': path },
          { endStream: false },
        );
      } catch (err) {
        reject(failureOf(err));
        return;
      }
      this.active++;
      stream.once('close', () => this.active--);
      let headers: IncomingHttpHeaders | undefined;
      let settled = false;
      const onAbort = (): void => settle(new CallAborted());
      const settle = (err: Error | undefined, first?: Buffer, trailers?: IncomingHttpHeaders): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        stream.off('data', onData);
        if (err !== undefined) {
          if (!stream.destroyed) stream.close(constants.NGHTTP2_CANCEL);
          reject(err);
        } else resolve({ stream, headers: headers as IncomingHttpHeaders, first, trailers });
      };
      const timer = setTimeout(() => settle(new NodeFailure('timeout', 'node sent no answer in time')), headersTimeoutMs);
      const onData = (chunk: Buffer): void => {
        stream.pause();
        settle(undefined, chunk);
      };
      stream.on('error', (err) => settle(failureOf(err)));
      stream.on('response', (h) => {
        headers = h;
        const status = h[':status'];
        if (status !== 200) return settle(new NodeFailure('status', `node answered HTTP ${String(status)}`));
        const ct = h['content-type'];
        if (typeof ct !== 'string' || !ct.startsWith('application/grpc'))
          return settle(new NodeFailure('garbage', 'node answer is not gRPC'));
        clearTimeout(timer);
        stream.on('data', onData);
      });
      let trailers: IncomingHttpHeaders | undefined;
      stream.on('trailers', (t) => {
        trailers = t;
      });
      stream.on('end', () => {
        if (headers === undefined) return settle(new NodeFailure('io', 'node closed the call without an answer'));
        const t = trailers ?? headers;
        if (statusOf(t) === undefined) return settle(new NodeFailure('garbage', 'node ended the call without a gRPC status'));
        settle(undefined, undefined, t);
      });
      stream.on('close', () => settle(new NodeFailure('io', `node reset the call (code ${stream.rstCode ?? 'none'})`)));
      signal?.addEventListener('abort', onAbort);
      stream.end(body);
    });
  }

  /** One unary call (probes): the status, its message and the first response message. */
  async unary(path: string, message: Buffer, metadata: Readonly<Record<string, string>>, timeoutMs: number): Promise<GrpcUnaryReply> {
    const headers = { ...metadata, 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': formatGrpcTimeout(timeoutMs) };
    // One deadline for the whole call: the answer's rest gets what the start left of it.
    const deadline = Date.now() + timeoutMs;
    const started = await this.start(path, headers, frameMessage(message), timeoutMs);
    if (started.trailers !== undefined) {
      const s = statusOf(started.trailers) as { code: number; message: string };
      return { ...s, data: Buffer.alloc(0) };
    }
    const { stream } = started;
    const chunks: Buffer[] = started.first === undefined ? [] : [started.first];
    const rest = new Promise<IncomingHttpHeaders>((resolve, reject) => {
      let trailers: IncomingHttpHeaders | undefined;
      const timer = setTimeout(
        () => {
          stream.close(constants.NGHTTP2_CANCEL);
          reject(new NodeFailure('timeout', 'node did not finish the call in time'));
        },
        Math.max(1, deadline - Date.now()),
      );
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('trailers', (t) => {
        trailers = t;
      });
      stream.on('close', () => {
        clearTimeout(timer);
        if (trailers !== undefined && statusOf(trailers) !== undefined) resolve(trailers);
        else reject(new NodeFailure('io', 'node ended the call without a status'));
      });
      stream.resume();
    });
    const trailers = await rest;
    const s = statusOf(trailers) as { code: number; message: string };
    const messages = splitMessages(Buffer.concat(chunks));
    if (messages === undefined) throw new NodeFailure('garbage', 'node answer is not whole gRPC messages');
    return { ...s, data: messages[0]?.payload ?? Buffer.alloc(0) };
  }

  /** Sessions close after their calls end; `destroy` cuts them. */
  close(): Promise<void> {
    this.closed = true;
    const s = this.session;
    this.session = undefined;
    if (s === undefined || s.destroyed) return Promise.resolve();
    return new Promise((resolve) => s.close(() => resolve()));
  }
}
