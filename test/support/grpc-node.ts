// A tiny scriptable gRPC node (cleartext HTTP/2) on 127.0.0.1 for unit tests of the gRPC
// transport, and a scripted gRPC family to put in front of it. The node records each
// call (path, metadata, the request bytes as they came) and answers through a handler
// the test sets: messages then a status, a trailers-only status, or nothing (held open
// until the client or the node goes). The family reads no message: it routes every
// method the same way and judges answers by their status alone.

import {
  constants,
  createServer,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { frameMessage } from '../../src/grpc-wire/frames.js';
import { encodeGrpcMessage } from '../../src/grpc-wire/status.js';
import { definePlugin, type ChainPlugin, type GrpcCall, type InboundGrpcCall } from '../../src/sdk/index.js';

export interface GrpcReceived {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The request as it came: framed messages. */
  readonly body: Buffer;
  /** The node's side of the call, to see whether it was cancelled. */
  readonly stream: ServerHttp2Stream;
}

/** Messages (unframed) then a status; no messages: a trailers-only answer; 'hold': no answer at all (a promise: the answer once it settles). */
export type GrpcNodeAnswer = { readonly messages?: readonly string[]; readonly status: number; readonly message?: string } | 'hold';

export interface GrpcNode {
  readonly url: string;
  readonly received: GrpcReceived[];
  handler: (call: GrpcReceived) => GrpcNodeAnswer | Promise<GrpcNodeAnswer>;
  close(): Promise<void>;
}

const GRPC = { ':status': 200, 'content-type': 'application/grpc' } as const;

/** Answers every call with one message naming the node and the method, status OK. */
export const echoGrpc =
  (name: string) =>
  (call: GrpcReceived): GrpcNodeAnswer => ({ messages: [`${name}:${call.path}`], status: 0 });

export async function startGrpcNode(handler: GrpcNode['handler']): Promise<GrpcNode> {
  const server: Http2Server = createServer();
  const sessions = new Set<ServerHttp2Session>();
  const received: GrpcReceived[] = [];
  server.on('session', (s: ServerHttp2Session) => {
    sessions.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', async () => {
      const call: GrpcReceived = { path: String(headers[':path']), headers, body: Buffer.concat(chunks), stream };
      received.push(call);
      const a = await node.handler(call);
      if (a === 'hold' || stream.closed) return;
      const status = {
        'grpc-status': String(a.status),
        ...(a.message === undefined ? {} : { 'grpc-message': encodeGrpcMessage(a.message) }),
      };
      if (a.messages === undefined || a.messages.length === 0) {
        stream.respond({ ...GRPC, ...status }, { endStream: true });
        return;
      }
      stream.respond(GRPC, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers(status));
      for (const m of a.messages.slice(0, -1)) stream.write(frameMessage(Buffer.from(m)));
      stream.end(frameMessage(Buffer.from(a.messages[a.messages.length - 1] as string)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const node: GrpcNode = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    handler,
    async close() {
      for (const r of received) if (!r.stream.closed) r.stream.close(constants.NGHTTP2_CANCEL);
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return node;
}

/**
 * A gRPC family that routes every method alike (ordinary, cost 1, labelled by its path)
 * and judges a status as most families do: OK ok, UNAVAILABLE the node failing,
 * RESOURCE_EXHAUSTED the node throttling, anything else the chain's answer. `parse`
 * replaces its reading of a call (to refuse one); every call it is handed is kept in `seen`.
 */
export function scriptedGrpcPlugin(
  options: { parse?: (call: InboundGrpcCall) => GrpcCall<undefined>; seen?: InboundGrpcCall[] } = {},
): ChainPlugin<undefined> {
  return definePlugin<undefined>({
    name: 'scripted-grpc',
    contract: 2,
    create() {
      return {
        grpc: {
          parse(call) {
            options.seen?.push(call);
            return options.parse?.(call) ?? { kind: 'grpc', method: call.path, meta: undefined };
          },
          judge: (_call, reply) =>
            reply.code === 0 ? 'ok' : reply.code === 14 ? 'node_failure' : reply.code === 8 ? 'throttled' : 'chain_error',
        },
        classify: (call) => ({ archive: false, cost: 1, label: call.method }),
        probe: () => Promise.resolve({ height: 100 }),
      };
    },
  });
}
