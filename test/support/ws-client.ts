// A small JSON-RPC client over a real `ws` WebSocket for tests: calls matched to
// answers by id, notifications kept in arrival order, the close code, and the HTTP
// answer of a refused upgrade.

import WebSocket from 'ws';
import { memberRaw, splitArray } from '../../src/jsonrpc/raw-json.js';
import { untilDefined } from './until.js';

export interface Answer {
  /** The answer's text as the gateway sent it. */
  readonly raw: string;
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error?: { code: number; message: string };
}

export interface Note {
  readonly method: string;
  readonly params: { subscription: string; result: unknown };
}

export interface Refusal {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

export function wsUrl(httpUrl: string): string {
  return httpUrl.replace(/^http/, 'ws');
}

/** The HTTP answer of an upgrade the gateway refuses. */
export function refusal(url: string, headers: Record<string, string> = {}): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('open', () => {
      ws.close();
      reject(new Error('the upgrade was accepted'));
    });
    ws.on('error', () => undefined);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
  });
}

export class RpcSocket {
  readonly notes: Note[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly waiting = new Map<string, (a: Answer) => void>();
  private nextId = 1;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const text = (data as Buffer).toString();
      const v = JSON.parse(text) as Answer | Answer[] | Note;
      if (!Array.isArray(v) && 'method' in v) {
        this.notes.push(v);
        return;
      }
      const first = Array.isArray(v) ? (splitArray(text)?.[0] ?? '') : text;
      const key = memberRaw(first, 'id') ?? 'null';
      const w = this.waiting.get(key);
      if (w !== undefined) {
        this.waiting.delete(key);
        w(Object.assign(v, { raw: text }));
      }
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  static open(url: string, options: WebSocket.ClientOptions = {}): Promise<RpcSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, options);
      ws.once('open', () => resolve(new RpcSocket(ws)));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused with ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  /** Send raw text; resolves with the answer whose (first) id is the raw JSON `id`. */
  send(text: string, id: string): Promise<Answer & Answer[]> {
    return new Promise((resolve) => {
      this.waiting.set(id, resolve as (a: Answer) => void);
      this.ws.send(text);
    });
  }

  call(method: string, params: unknown[] = []): Promise<Answer> {
    const id = this.nextId++;
    return this.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }), String(id));
  }

  /** The next notification of a subscription at or after position `from`. */
  async note(subscription: unknown, from = 0): Promise<{ note: Note; index: number }> {
    const find = (): number | undefined => {
      const index = this.notes.findIndex((n, i) => i >= from && n.params.subscription === subscription);
      return index >= 0 ? index : undefined;
    };
    const index = await untilDefined(find, { what: `a notification of ${String(subscription)} arrives`, timeoutMs: 15_000 });
    return { note: this.notes[index] as Note, index };
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close();
    return this.closed;
  }
}
