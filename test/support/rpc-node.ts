// A tiny scriptable HTTP node on 127.0.0.1 for unit tests of the call path: it records
// every request (method, path, headers, body) and answers through a handler the test
// sets, by default as a JSON-RPC node answering each item with `answer(method, params)`
// under the item's own raw id. Answers can be held back and released, and the node can
// be stopped so its port refuses connections.

import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { memberRaw, splitArray } from '../../src/jsonrpc/raw-json.js';

export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** One JSON-RPC item's outcome: a result, an error object, or the raw item text to send as it is. */
export type ItemOutcome = { result: unknown } | { error: { code: number; message: string } } | { raw: string };

export type Handler = (req: Received) => Answer | undefined;

export interface RpcNode {
  readonly url: string;
  readonly received: Received[];
  /** How requests are answered; undefined: hang until released or closed. */
  handler: Handler;
  /** Hold every answer until `release()`. */
  hold: boolean;
  release(): void;
  /** Bodies of the requests received (probes included). */
  bodies(): string[];
  /** Every JSON-RPC method received, batch items included, in order. */
  methods(): string[];
  close(): Promise<void>;
}

function itemText(id: string, outcome: ItemOutcome): string {
  if ('raw' in outcome) return outcome.raw;
  if ('error' in outcome) return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(outcome.error)}}`;
  return `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(outcome.result)}}`;
}

/** A JSON-RPC handler: each item answered by `answer`, under its raw id; notifications get nothing. */
export function jsonRpcHandler(answer: (method: string, params: unknown, id: string) => ItemOutcome): Handler {
  const one = (raw: string): string | undefined => {
    const item = JSON.parse(raw) as { method: string; params?: unknown };
    const id = memberRaw(raw, 'id');
    if (id === undefined) return undefined;
    return itemText(id, answer(item.method, item.params, id));
  };
  return (req) => {
    const items = req.body.trimStart().startsWith('[') ? splitArray(req.body) : undefined;
    if (items === undefined) return { status: 200, body: one(req.body.trim()) ?? '' };
    const out = items.map(one).filter((t): t is string => t !== undefined);
    return { status: 200, body: `[${out.join(',')}]` };
  };
}

/** Answers every method with `"<node name>:<method>"`. */
export const echoNode = (name: string): Handler => jsonRpcHandler((method) => ({ result: `${name}:${method}` }));

/**
 * A JSON-RPC 1.0 node as Bitcoin Core is: an item without "jsonrpc":"2.0" is answered
 * `{"result","error","id"}` with one of them null (an item without id too, with no id),
 * a "2.0" item in 2.0 shape (its notifications get nothing).
 */
export function legacyRpcHandler(answer: (method: string, params: unknown) => ItemOutcome): Handler {
  const one = (raw: string): string | undefined => {
    const item = JSON.parse(raw) as { method: string; params?: unknown; jsonrpc?: unknown };
    const id = memberRaw(raw, 'id');
    const outcome = answer(item.method, item.params);
    if ('raw' in outcome) return outcome.raw;
    if (item.jsonrpc === '2.0') return id === undefined ? undefined : itemText(id, outcome);
    const idPart = id === undefined ? '' : `,"id":${id}`;
    return 'error' in outcome
      ? `{"result":null,"error":${JSON.stringify(outcome.error)}${idPart}}`
      : `{"result":${JSON.stringify(outcome.result)},"error":null${idPart}}`;
  };
  return (req) => {
    const items = req.body.trimStart().startsWith('[') ? splitArray(req.body) : undefined;
    if (items === undefined) return { status: 200, body: one(req.body.trim()) ?? '' };
    const out = items.map(one).filter((t): t is string => t !== undefined);
    return { status: 200, body: `[${out.join(',')}]` };
  };
}

/** A 1.0 node answering every method with `"<node name>:<method>"`. */
export const legacyEchoNode = (name: string): Handler => legacyRpcHandler((method) => ({ result: `${name}:${method}` }));

export function methodsOf(body: string): string[] {
  const items = body.trimStart().startsWith('[') ? (splitArray(body) ?? []) : [body];
  return items.map((i) => JSON.parse(i) as { method?: string }).map((i) => i.method ?? '');
}

export async function startRpcNode(handler: Handler, basePath = ''): Promise<RpcNode> {
  const received: Received[] = [];
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const respond = (res: ServerResponse, req: Received): void => {
    const a = node.handler(req);
    if (a === undefined) return; // hangs until the node closes
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(a.body);
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      received.push(r);
      if (node.hold) held.push(() => respond(res, r));
      else respond(res, r);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const node: RpcNode = {
    url: `http://127.0.0.1:${port}${basePath}`,
    received,
    handler,
    hold: false,
    release() {
      node.hold = false;
      for (const answer of held.splice(0)) answer();
    },
    bodies: () => received.map((r) => r.body),
    methods: () => received.flatMap((r) => (r.body === '' ? [] : methodsOf(r.body))),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return node;
}

/** A URL on 127.0.0.1 where nothing listens: connections are refused. */
export async function refusingUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
