// One simulated node of an HTTP family: an HTTP server speaking its family's protocol
// (JSON-RPC over POST and WebSocket, plain HTTP routes, subscriptions), recording every
// request it receives, with faults that tests and the control server switch on and off
// at run time (latency, errors, hangs, bad bodies, a stalled head, down).

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { memberRaw, splitArray } from '../jsonrpc/raw-json.js';
import { admit } from './credentials.js';
import type { DevRequest, Feed, HttpFamily, NodeProtocol, NodeSetup, RpcOutcome } from './family.js';
import { DevnetNodeBase } from './node-base.js';

/** After a stall, at most this many missed blocks are pushed to subscribers. */
const MAX_CATCH_UP = 64;

/** A client's WebSocket to this node and the subscriptions it holds. */
interface DevSocket {
  readonly ws: WebSocket;
  readonly subs: Map<string, { readonly feed: Feed; readonly notification: string }>;
}
const ID_MEMBER = /"id":(-?\d+(\.\d+)?|"(?:[^"\\]|\\.)*"|null)/;
const WRONG_ID = (text: string): string => text.replace(ID_MEMBER, '"id":"not-your-call"');

function rpcText(id: string, outcome: RpcOutcome): string {
  const idText = outcome.id ?? id;
  if ('error' in outcome) return `{"jsonrpc":"2.0","id":${idText},"error":${JSON.stringify(outcome.error)}}`;
  return `{"jsonrpc":"2.0","id":${idText},"result":${JSON.stringify(outcome.result ?? null)}}`;
}

export class DevnetNodeServer extends DevnetNodeBase {
  private server: Server | undefined;
  private readonly hung = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private port: number;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly wsConns = new Set<DevSocket>();
  /** The last height pushed to subscribers. */
  private pushed: number;
  private readonly host: string;
  private readonly protocol: NodeProtocol;

  constructor(
    setup: NodeSetup,
    private readonly impl: HttpFamily,
  ) {
    super(setup);
    this.host = setup.host;
    this.port = setup.port;
    this.pushed = setup.chain.height();
    this.protocol = impl.node(this);
    setup.chain.onBlocks(() => this.push());
  }

  async listen(): Promise<void> {
    const server = createServer((req, res) => this.onRequest(req, res));
    server.keepAliveTimeout = 5_000;
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head));
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.url = `http://${this.host}:${this.port}`;
    this.server = server;
  }

  protected releaseHung(): void {
    for (const res of this.hung) res.destroy();
    this.hung.clear();
  }

  protected async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    this.releaseHung();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** WebSocket at the JSON-RPC path: calls answered as over HTTP, plus the family's subscriptions. */
  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const target = admit(this.credentials, req.url ?? '/', req.headers);
    if (target === undefined) {
      this.record({ method: 'WS', path: req.url ?? '/', headers: { ...req.headers }, body: '', at: this.now() });
      socket.end('HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const path = target.split('?')[0] as string;
    if (!this.impl.rpcPath(path)) {
      socket.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const conn: DevSocket = { ws, subs: new Map() };
      this.wsConns.add(conn);
      ws.on('close', () => this.wsConns.delete(conn));
      ws.on('error', () => undefined);
      ws.on('message', (data) => {
        const text = (data as Buffer).toString('utf8');
        this.record({ method: 'WS', path: req.url ?? '/', headers: { ...req.headers }, body: text, at: this.now() });
        if (this.faults.hang === true) return;
        const delay = this.faults.latencyMs ?? 0;
        if (delay > 0) setTimeout(() => void this.wsAnswer(conn, text), delay);
        else void this.wsAnswer(conn, text);
      });
    });
  }

  private async wsAnswer(conn: DevSocket, text: string): Promise<void> {
    const send = (t: string): void => {
      if (t !== '' && conn.ws.readyState === conn.ws.OPEN) conn.ws.send(t);
    };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return send('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}');
    }
    const subs = this.protocol.subscriptions;
    const v = value as { method?: unknown; params?: unknown } | null;
    if (subs !== undefined && v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.method === 'string') {
      const id = memberRaw(text.trim(), 'id') ?? 'null';
      const opened = subs.open(v.method, v.params);
      if (opened !== undefined) {
        if ('error' in opened) return send(rpcText(id, { error: opened.error }));
        const subId = `0x${randomBytes(16).toString('hex')}`;
        conn.subs.set(subId, opened);
        return send(rpcText(id, { result: subId }));
      }
      if (subs.closers.has(v.method)) {
        const target = Array.isArray(v.params) ? (v.params as unknown[])[0] : undefined;
        return send(rpcText(id, { result: typeof target === 'string' && conn.subs.delete(target) }));
      }
    }
    send(this.misbehave(await this.jsonRpc(text)));
  }

  /** New heights reached: every subscription pushes what its feed has for each of them. */
  private push(): void {
    const h = this.height();
    // A stalled node has nothing new; a down one has no subscribers left to tell.
    if (h <= this.pushed) return;
    if (this.server === undefined) {
      this.pushed = h;
      return;
    }
    const from = Math.max(this.pushed + 1, h - MAX_CATCH_UP + 1);
    this.pushed = h;
    for (const conn of this.wsConns) {
      for (const [subId, sub] of conn.subs) {
        for (let x = from; x <= h; x++) {
          for (const item of sub.feed(x)) {
            conn.ws.send(
              `{"jsonrpc":"2.0","method":"${sub.notification}","params":{"subscription":"${subId}","result":${JSON.stringify(item)}}}`,
            );
          }
        }
      }
    }
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      this.record({ method: req.method ?? 'GET', path: req.url ?? '/', headers: { ...req.headers }, body, at: this.now() });
      // A provider's node refuses calls without its credentials; the rest is answered below its base path.
      const path = admit(this.credentials, req.url ?? '/', req.headers);
      if (path === undefined) return this.send(res, 401, '{"error":"devnet: this node requires credentials"}');
      const delay = this.faults.latencyMs ?? 0;
      if (delay > 0) setTimeout(() => void this.answer(req, res, path, body), delay);
      else void this.answer(req, res, path, body);
    });
  }

  private async answer(req: IncomingMessage, res: ServerResponse, path: string, body: string): Promise<void> {
    const f = this.faults;
    if (this.holdBack(() => void this.answer(req, res, path, body))) return;
    if (f.hang === true) {
      this.hung.add(res);
      res.on('close', () => this.hung.delete(res));
      return;
    }
    if (f.status !== undefined) return this.send(res, f.status, `{"error":"devnet fault: HTTP ${f.status}"}`);
    if (f.html === true) return this.send(res, 200, '<html><body><h1>502 Bad Gateway</h1></body></html>', 'text/html');
    if (f.errorRate !== undefined && Math.random() < f.errorRate) {
      return this.send(res, 500, '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}');
    }
    const q = path.indexOf('?');
    const pathname = q < 0 ? path : path.slice(0, q);
    const request: DevRequest = {
      method: req.method ?? 'GET',
      path: pathname,
      query: new URLSearchParams(q < 0 ? '' : path.slice(q + 1)),
      headers: req.headers,
      body,
    };
    let status = 200;
    let text: string;
    let headers: Readonly<Record<string, string>> | undefined;
    if (request.method === 'POST' && this.impl.rpcPath(pathname)) {
      text = this.misbehave(await this.jsonRpc(body));
    } else {
      const a = await this.protocol.http?.(request);
      if (a === undefined) {
        status = 404;
        text = '{"error":"not found"}';
      } else {
        status = a.status;
        text = a.body;
        headers = a.headers;
      }
    }
    if (f.truncated === true) text = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
    this.send(res, status, text, 'application/json', headers);
  }

  /** The JSON-RPC faults: foreign ids, reordered or short batches, huge answers. */
  private misbehave(text: string): string {
    const f = this.faults;
    if (f.hugeBody === true) return `{"jsonrpc":"2.0","id":1,"result":"0x${'a'.repeat(1_000_000)}"}`;
    const items = text.startsWith('[') ? splitArray(text) : undefined;
    if (items !== undefined) {
      if (f.reorderBatch === true) items.reverse();
      if (f.shortBatch === true) items.pop();
      if (f.wrongId === true) for (let i = 0; i < items.length; i++) items[i] = WRONG_ID(items[i] as string);
      return `[${items.join(',')}]`;
    }
    return f.wrongId === true ? WRONG_ID(text) : text;
  }

  private send(
    res: ServerResponse,
    status: number,
    body: string,
    type = 'application/json',
    headers?: Readonly<Record<string, string>>,
  ): void {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
    res.end(body);
  }

  /** A JSON-RPC body, single or batch, answered with every id echoed byte for byte. */
  private async jsonRpc(body: string): Promise<string> {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}';
    }
    if (Array.isArray(value)) {
      const raws = splitArray(body) ?? [];
      if (value.length === 0) return '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"empty batch"}}';
      const answers = await Promise.all(value.map((item, i) => this.item(item, raws[i] ?? '')));
      return `[${answers.filter((t) => t !== undefined).join(',')}]`;
    }
    return (await this.item(value, body.trim())) ?? '';
  }

  private async item(value: unknown, raw: string): Promise<string | undefined> {
    if (value === null || typeof value !== 'object') return rpcText('null', { error: { code: -32600, message: 'invalid request' } });
    const v = value as { id?: unknown; method?: unknown; params?: unknown };
    const id = 'id' in v ? (memberRaw(raw, 'id') ?? 'null') : undefined;
    if (typeof v.method !== 'string') return rpcText(id ?? 'null', { error: { code: -32600, message: 'invalid request' } });
    let outcome: RpcOutcome | undefined;
    try {
      outcome = await this.protocol.rpc(v.method, v.params);
    } catch (err) {
      outcome = { error: { code: -32602, message: `invalid params: ${(err as Error).message}` } };
    }
    outcome ??= { error: { code: -32601, message: `the method ${v.method} does not exist/is not available` } };
    // Notifications get no answer (CometBFT's fixed ids still answer).
    if (id === undefined && outcome.id === undefined) return undefined;
    return rpcText(id ?? 'null', outcome);
  }
}
