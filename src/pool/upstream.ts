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

/**
 * Collects one answer straight from undici's dispatch callbacks: no response stream,
 * no async iterator, one promise per call. Stops reading past the size cap.
 */
class AnswerCollector implements Dispatcher.DispatchHandler {
  private status = 0;
  private contentType: string | undefined;
  private relay: Record<string, string> | undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private abort: ((err?: Error) => void) | undefined;
  private failed = false;

  constructor(
    private readonly resolve: (reply: UpstreamReply) => void,
    private readonly reject: (err: UpstreamError) => void,
    private readonly options: UpstreamOptions,
  ) {}

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
  }

  onHeaders(statusCode: number, headers: Buffer[]): boolean {
    // 1xx answers come before the real one.
    if (statusCode < 200) return true;
    this.status = statusCode;
    for (let i = 0; i < headers.length; i += 2) {
      const name = (headers[i] as Buffer).toString('latin1').toLowerCase();
      if (name === 'content-type') this.contentType = (headers[i + 1] as Buffer).toString('latin1');
      else if (name === 'content-length') {
        const declared = Number((headers[i + 1] as Buffer).toString('latin1'));
        if (declared > this.options.maxResponseBytes) {
          this.fail(new UpstreamError('too-large', `node answer of ${declared} bytes is over the cap`));
          return false;
        }
      } else if (this.options.relayHeaders.includes(name)) (this.relay ??= {})[name] = (headers[i + 1] as Buffer).toString('latin1');
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.size > this.options.maxResponseBytes) {
      this.fail(new UpstreamError('too-large', 'node answer is over the cap'));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.failed) return;
    const { chunks } = this;
    const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, this.size).toString('utf8');
    this.resolve({ status: this.status, text, contentType: this.contentType, relayHeaders: this.relay });
  }

  onError(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.reject(classify(err));
  }

  private fail(err: UpstreamError): void {
    if (this.failed) return;
    this.failed = true;
    this.reject(err);
    this.abort?.(err);
  }
}

export class UpstreamNode implements NodeClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly rootPath: string;
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
    this.rootPath = this.basePath === '' ? '/' : this.basePath;
    this.origin = u.origin;
    this.pool = new Pool(u.origin, { connections: options.connections, pipelining: 1, keepAliveTimeout: 30_000 });
  }

  /** POST a JSON body (a JSON-RPC item or batch) to the node's base path. */
  postJson(body: string, timeoutMs: number): Promise<UpstreamReply> {
    return this.send('POST', this.rootPath, JSON_HEADERS, body, timeoutMs);
  }

  async request(req: UpstreamRequest, timeoutMs: number): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    return this.send(req.method, this.basePath + req.path, headers, req.body, timeoutMs);
  }

  send(
    method: 'GET' | 'POST',
    path: string,
    headers: Readonly<Record<string, string>>,
    body: string | Buffer | undefined,
    timeoutMs: number,
  ): Promise<UpstreamReply> {
    return new Promise((resolve, reject) => {
      const handler = new AnswerCollector(resolve, reject, this.options);
      try {
        this.pool.dispatch({ method, path, headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs }, handler);
      } catch (err) {
        reject(classify(err));
      }
    });
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
