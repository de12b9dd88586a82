// gRPC calls for tests through a real @grpc/grpc-js client, messages as raw bytes (the
// gateway relays them unread): the status, its details, the trailing metadata, and
// the answer.

import * as grpc from '@grpc/grpc-js';

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
