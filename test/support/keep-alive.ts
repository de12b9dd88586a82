// A kept-alive HTTP/1.1 connection on a raw socket, one request at a time, that says
// exactly how it ended: a clean close (the server's FIN, after its last answer) or a
// reset, and whether any request was left without an answer.

import { connect, type Socket } from 'node:net';

export interface KeptAnswer {
  readonly status: number;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export class KeepAliveConnection {
  private buffer = Buffer.alloc(0);
  private waiting: { resolve(a: KeptAnswer): void; reject(err: Error): void } | undefined;
  /** The server closed its side (FIN) — a clean close when nothing was waiting. */
  ended = false;
  /** A socket error (ECONNRESET …): never expected. */
  error: Error | undefined;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.parse();
    });
    socket.on('end', () => {
      this.ended = true;
      this.waiting?.reject(new Error('the server closed the connection without answering'));
      this.waiting = undefined;
    });
    socket.on('error', (err) => {
      this.error = err;
      this.waiting?.reject(err);
      this.waiting = undefined;
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static open(port: number): Promise<KeepAliveConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new KeepAliveConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  /** POST a JSON body; settles with the answer, or rejects when the connection ends first. */
  post(path: string, body: string, headers: Readonly<Record<string, string>>): Promise<KeptAnswer> {
    if (this.waiting !== undefined) return Promise.reject(new Error('one request at a time'));
    if (this.ended || this.error !== undefined) return Promise.reject(new Error('connection is closed'));
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(
        `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`,
      );
    });
  }

  end(): void {
    this.socket.end();
  }

  private parse(): void {
    const split = this.buffer.indexOf('\r\n\r\n');
    if (split < 0 || this.waiting === undefined) return;
    const head = this.buffer.subarray(0, split).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (this.buffer.length < split + 4 + length) return;
    const body = this.buffer.subarray(split + 4, split + 4 + length).toString('utf8');
    this.buffer = this.buffer.subarray(split + 4 + length);
    const w = this.waiting;
    this.waiting = undefined;
    w.resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0), headers, body });
  }
}
