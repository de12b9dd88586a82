// An HTTP client to one node: an undici Pool with keep-alive, per-attempt timeouts
// and a cap on how much of an answer is read, so one node cannot exhaust memory; and,
// for gRPC nodes, an HTTP/2 client made on first use (grpc-client.ts).
// It only moves bytes; what an answer means is the plugin's call.

import { Pool, type Dispatcher } from 'undici';
import type { GrpcUnaryReply, NodeClient, NodeRole, UpstreamRequest } from '../plugin.js';
import { GrpcClient } from './grpc-client.js';

export type UpstreamFailure = 'timeout' | 'connect' | 'too-large' | 'io';

export class UpstreamError extends Error {
  constructor(
    readonly kind: UpstreamFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'UpstreamError';
  }
}

export interface UpstreamReply {
  readonly status: number;
  readonly text: string;
  readonly contentType: string | undefined;
  /** Headers worth relaying to the client (lower-case names). */
  readonly relayHeaders: Readonly<Record<string, string>> | undefined;
}

export interface UpstreamOptions {
  readonly connections: number;
  readonly maxResponseBytes: number;
  /** Response headers relayed to clients besides content-type (lower-case). */
  readonly relayHeaders: readonly string[];
}

export const DEFAULT_UPSTREAM_OPTIONS: UpstreamOptions = {
  connections: 64,
  maxResponseBytes: 32 * 1024 * 1024,
  relayHeaders: ['grpc-metadata-x-cosmos-block-height'],
};

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
const JSON_HEADERS = { 'content-type': 'application/json' } as const;

function classify(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const code = (err as { code?: string }).code ?? '';
  if (TIMEOUT_CODES.has(code)) return new UpstreamError('timeout', 'node timed out', { cause: err });
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH') {
    return new UpstreamError('connect', 'node refused the connection', { cause: err });
  }
  return new UpstreamError('io', 'node connection failed', { cause: err });
}

export class UpstreamNode implements NodeClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly origin: string;
  private h2: GrpcClient | undefined;

  constructor(
    readonly name: string,
    readonly role: NodeRole,
    url: string,
    private readonly options: UpstreamOptions = DEFAULT_UPSTREAM_OPTIONS,
  ) {
    const u = new URL(url);
    this.basePath = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
    this.origin = u.origin;
    this.pool = new Pool(u.origin, { connections: options.connections, pipelining: 1, keepAliveTimeout: 30_000 });
  }

  /** POST a JSON body (a JSON-RPC item or batch) to the node's base path. */
  postJson(body: string, timeoutMs: number): Promise<UpstreamReply> {
    return this.send('POST', this.basePath === '' ? '/' : this.basePath, JSON_HEADERS, body, timeoutMs);
  }

  async request(req: UpstreamRequest, timeoutMs: number): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    return this.send(req.method, this.basePath + req.path, headers, req.body, timeoutMs);
  }

  async send(
    method: 'GET' | 'POST',
    path: string,
    headers: Readonly<Record<string, string>>,
    body: string | Buffer | undefined,
    timeoutMs: number,
  ): Promise<UpstreamReply> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({ method, path, headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    } catch (err) {
      throw classify(err);
    }
    const declared = Number(res.headers['content-length']);
    if (declared > this.options.maxResponseBytes) {
      res.body.destroy();
      throw new UpstreamError('too-large', `node answer of ${declared} bytes is over the cap`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > this.options.maxResponseBytes) {
          res.body.destroy();
          throw new UpstreamError('too-large', 'node answer is over the cap');
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      throw classify(err);
    }
    const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
    const ct = res.headers['content-type'];
    let relay: Record<string, string> | undefined;
    for (const name of this.options.relayHeaders) {
      const v = res.headers[name];
      if (typeof v === 'string') (relay ??= {})[name] = v;
    }
    return { status: res.statusCode, text, contentType: typeof ct === 'string' ? ct : undefined, relayHeaders: relay };
  }

  /** The node's HTTP/2 client for gRPC calls, connected on first use. */
  get grpc(): GrpcClient {
    return (this.h2 ??= new GrpcClient(this.origin));
  }

  grpcUnary(path: string, message: Buffer, metadata: Readonly<Record<string, string>>, timeoutMs: number): Promise<GrpcUnaryReply> {
    return this.grpc.unary(path, message, metadata, timeoutMs);
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.h2?.close()]);
  }

  destroy(): Promise<void> {
    return this.pool.destroy();
  }
}
