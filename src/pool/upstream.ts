// An HTTP client to one node: an undici Pool with keep-alive, an overall deadline per
// attempt and a cap on how much of an answer is read, so one node cannot exhaust
// memory or hold a call by trickling bytes. Every request goes below the node URL's
// base path and carries its query and headers (providers put tokens there).
// It only moves bytes; what an answer means is the plugin's call.

import { Pool, type Dispatcher } from 'undici';
import type { HttpNodeClient, UpstreamRequest } from '../plugin/contract.js';
import { CallAborted, NodeFailure, type Cancel } from './failures.js';

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
  /** Response headers relayed to clients besides content-type (lower-case; the plugin names them). */
  readonly relayHeaders: readonly string[];
}

export const DEFAULT_UPSTREAM_OPTIONS: UpstreamOptions = {
  connections: 64,
  maxResponseBytes: 32 * 1024 * 1024,
  relayHeaders: [],
};

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
/**
 * undici's headersTimeout and bodyTimeout are idle timeouts: a node sending a byte
 * every few seconds never trips them. Every call also has a deadline, checked by one
 * shared sweep (no timer per call) and on every chunk.
 */
const DEADLINE_SWEEP_MS = 50;
const open = new Set<AnswerCollector>();
let sweeper: NodeJS.Timeout | undefined;

function sweep(): void {
  const now = performance.now();
  for (const c of open) if (now >= c.deadline) c.expire();
  if (open.size === 0 && sweeper !== undefined) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

function watch(c: AnswerCollector): void {
  open.add(c);
  sweeper ??= setInterval(sweep, DEADLINE_SWEEP_MS).unref();
}
const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/** A query parameter's name as a server reads it ('+' a space, percent-decoded). */
function paramName(part: string): string {
  const eq = part.indexOf('=');
  const raw = (eq < 0 ? part : part.slice(0, eq)).replace(/\+/g, ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function classify(err: unknown): NodeFailure {
  if (err instanceof NodeFailure) return err;
  const code = (err as { code?: string }).code ?? '';
  if (TIMEOUT_CODES.has(code)) return new NodeFailure('timeout', 'node timed out', { cause: err });
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH') {
    return new NodeFailure('connect', 'node refused the connection', { cause: err });
  }
  return new NodeFailure('io', 'node connection failed', { cause: err });
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
  private settled = false;

  constructor(
    private readonly resolve: (reply: UpstreamReply) => void,
    private readonly reject: (err: Error) => void,
    private readonly options: UpstreamOptions,
    /** performance.now() by which the whole answer must be in. */
    readonly deadline: number,
    /** Counts the node's requests in flight: one from now until this settles. */
    private readonly node: { active: number },
  ) {
    node.active++;
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    // Past the deadline while queued for a connection: never sent.
    if (this.settled) abort(new NodeFailure('timeout', 'node timed out'));
  }

  /** The deadline passed: fail the call and drop the connection (a trickle ends here). */
  expire(): void {
    this.fail(new NodeFailure('timeout', 'node answer not complete by the attempt deadline'));
  }

  /** The gateway gave up on the call (a hedge that lost): nobody's failure. */
  cancel(): void {
    this.fail(new CallAborted());
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
          this.fail(new NodeFailure('too-large', `node answer of ${declared} bytes is over the cap`));
          return false;
        }
      } else if (this.options.relayHeaders.includes(name)) (this.relay ??= {})[name] = (headers[i + 1] as Buffer).toString('latin1');
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (performance.now() >= this.deadline) {
      this.expire();
      return false;
    }
    this.size += chunk.length;
    if (this.size > this.options.maxResponseBytes) {
      this.fail(new NodeFailure('too-large', 'node answer is over the cap'));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    open.delete(this);
    if (this.settled) return;
    this.settled = true;
    this.node.active--;
    const { chunks } = this;
    const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, this.size).toString('utf8');
    this.resolve({ status: this.status, text, contentType: this.contentType, relayHeaders: this.relay });
  }

  onError(err: Error): void {
    open.delete(this);
    if (this.settled) return;
    this.settled = true;
    this.node.active--;
    this.reject(classify(err));
  }

  private fail(err: Error): void {
    open.delete(this);
    if (this.settled) return;
    this.settled = true;
    this.node.active--;
    this.reject(err);
    this.abort?.(err);
  }
}

export class UpstreamNode implements HttpNodeClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  /** The node URL's query without '?' ('' when none): a provider's token, kept on every call. */
  private readonly query: string;
  /** Names of that query's parameters: a client's parameters of these names are dropped. */
  private readonly queryNames: ReadonlySet<string> | undefined;
  private readonly rootPath: string;
  /** The node's own headers (credentials), sent on every call over anything a call carries. */
  private readonly headers: Readonly<Record<string, string>> | undefined;
  private readonly jsonHeaders: Readonly<Record<string, string>>;
  /** Requests to the node not yet answered (health probes included). */
  active = 0;

  constructor(
    url: string,
    private readonly options: UpstreamOptions = DEFAULT_UPSTREAM_OPTIONS,
    headers: Readonly<Record<string, string>> = {},
  ) {
    const u = new URL(url);
    this.basePath = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
    this.query = u.search.slice(1);
    this.queryNames = this.query === '' ? undefined : new Set(new URLSearchParams(this.query).keys());
    this.rootPath = `${this.basePath === '' ? '/' : this.basePath}${this.query === '' ? '' : `?${this.query}`}`;
    this.headers = Object.keys(headers).length === 0 ? undefined : headers;
    this.jsonHeaders = this.headers === undefined ? JSON_HEADERS : { ...this.headers, ...JSON_HEADERS };
    this.pool = new Pool(u.origin, { connections: options.connections, pipelining: 1, keepAliveTimeout: 30_000 });
  }

  /** POST a JSON body (a JSON-RPC item or batch) to the node's base path; `extra`: headers besides content-type (a traceparent). */
  postJson(body: string, timeoutMs: number, cancel?: Cancel, extra?: Readonly<Record<string, string>>): Promise<UpstreamReply> {
    return this.send(
      'POST',
      this.rootPath,
      extra === undefined ? this.jsonHeaders : { ...extra, ...this.jsonHeaders },
      body,
      timeoutMs,
      cancel,
    );
  }

  /** A passthrough request (and probes), below the node's base path, with the node's query. */
  request(req: UpstreamRequest, timeoutMs: number, cancel?: Cancel): Promise<UpstreamReply> {
    let headers = req.headers ?? {};
    if (req.body !== undefined && headers['content-type'] === undefined) headers = { ...headers, 'content-type': 'application/json' };
    if (this.headers !== undefined) headers = { ...headers, ...this.headers };
    return this.send(req.method, this.pathOf(req.path), headers, req.body, timeoutMs, cancel);
  }

  /** `path` (with its query) below the base path, the node's query appended; a client's parameter of the same name is dropped. */
  private pathOf(path: string): string {
    if (this.queryNames === undefined) return this.basePath + path;
    const q = path.indexOf('?');
    if (q < 0) return `${this.basePath}${path}?${this.query}`;
    const names = this.queryNames;
    const kept = path
      .slice(q + 1)
      .split('&')
      .filter((part) => part !== '' && !names.has(paramName(part)));
    return `${this.basePath}${path.slice(0, q)}?${kept.length === 0 ? '' : `${kept.join('&')}&`}${this.query}`;
  }

  private send(
    method: 'GET' | 'POST',
    path: string,
    headers: Readonly<Record<string, string>>,
    body: string | Buffer | undefined,
    timeoutMs: number,
    cancel?: Cancel,
  ): Promise<UpstreamReply> {
    return new Promise((resolve, reject) => {
      const handler = new AnswerCollector(resolve, reject, this.options, performance.now() + timeoutMs, this);
      watch(handler);
      cancel?.bind(handler);
      try {
        this.pool.dispatch({ method, path, headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs }, handler);
      } catch (err) {
        open.delete(handler);
        handler.onError(err as Error);
      }
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  destroy(): Promise<void> {
    return this.pool.destroy();
  }
}
