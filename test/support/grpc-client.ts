// gRPC calls for tests through a real @grpc/grpc-js client, messages as raw bytes (the
// gateway relays them unread): the status, its details, the trailing metadata, and
// the answer; and raw calls on a plain HTTP/2 session for what no gRPC client sends.

import * as grpc from '@grpc/grpc-js';
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import { decodeGrpcMessage } from '../../src/grpc-wire/status.js';

/** A method every devnet gRPC node answers. */
export const PARAMS = '/cosmos.auth.v1beta1.Query/Params';

/** Serializer and deserializer of raw messages. */
export const raw = (b: Buffer): Buffer => b;

export interface Reply {
  readonly code: number;
  readonly details: string;
  /** The trailers (of a refusal, or of an answer). */
  readonly metadata: Record<string, unknown>;
  readonly data: Buffer | undefined;
}

/** Metadata from a plain object; an array value adds the key once per value. */
export function metadata(md: Readonly<Record<string, string | readonly string[]>>): grpc.Metadata {
  const m = new grpc.Metadata();
  for (const [k, v] of Object.entries(md)) for (const one of typeof v === 'string' ? [v] : v) m.add(k, one);
  return m;
}

/** One unary call; a refusal is a reply too (its code), never a rejection. */
export function unary(
  client: grpc.Client,
  path: string,
  md: Readonly<Record<string, string | readonly string[]>>,
  request: Buffer = Buffer.alloc(0),
): Promise<Reply> {
  return new Promise((resolve) => {
    let trailing: Record<string, unknown> = {};
    const call = client.makeUnaryRequest(path, raw, raw, request, metadata(md), (err, res) => {
      if (err !== null) resolve({ code: err.code, details: err.details, metadata: err.metadata.getMap(), data: undefined });
      else resolve({ code: 0, details: '', metadata: trailing, data: res });
    });
    call.on('status', (s: grpc.StatusObject) => {
      trailing = s.metadata.getMap();
    });
  });
}

/** What a plain HTTP/2 client saw of one call: the status in the trailers, or in the headers of a trailers-only answer. */
export interface RawAnswer {
  readonly headers: IncomingHttpHeaders;
  readonly trailers: IncomingHttpHeaders | undefined;
  readonly body: Buffer;
  /** grpc-status, undefined when there is none (an HTTP refusal, a cut call). */
  readonly code: number | undefined;
  /** grpc-message, percent-decoded. */
  readonly details: string;
}

/**
 * One call on a plain HTTP/2 session, for what a gRPC client library would never send
 * (another method or content type, two messages, no end): `body` is written as it is,
 * and the request ended unless `end` is false.
 */
export function rawCall(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body: readonly Buffer[] = [],
  end = true,
): { stream: ClientHttp2Stream; answer: Promise<RawAnswer> } {
  const stream = session.request({ ':method': 'POST', 'content-type': 'application/grpc', te: 'trailers', ...headers });
  stream.on('error', () => undefined);
  const answer = new Promise<RawAnswer>((resolve) => {
    let got: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (got = h));
    stream.on('trailers', (t) => (trailers = t));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('close', () => {
      const status = trailers ?? got;
      const code = status['grpc-status'];
      resolve({
        headers: got,
        trailers,
        body: Buffer.concat(chunks),
        code: code === undefined ? undefined : Number(code),
        details: decodeGrpcMessage(status['grpc-message']),
      });
    });
  });
  for (const b of body) stream.write(b);
  if (end) stream.end();
  return { stream, answer };
}
