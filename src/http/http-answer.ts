// The answer to one HTTP request as the pipeline builds it: status, headers as a
// flat name/value list (what res.writeHead takes without copying) and a text body.
// Written once, by the app, straight to the Node response.

import type { ServerResponse } from 'node:http';

export class HttpAnswer {
  status = 200;
  /** Null: no body (204, or nothing decided yet). */
  body: string | null = null;
  type = 'application/json';
  readonly headers: string[] = [];

  /** Set a header (lower-case name), replacing an earlier value of the same name. */
  set(name: string, value: string): void {
    const h = this.headers;
    for (let i = 0; i < h.length; i += 2) {
      if (h[i] === name) {
        h[i + 1] = value;
        return;
      }
    }
    h.push(name, value);
  }

  send(res: ServerResponse): void {
    const h = this.headers;
    const body = this.body;
    if (body !== null) h.push('content-type', this.type, 'content-length', String(Buffer.byteLength(body)));
    res.writeHead(this.status, h);
    res.end(body ?? undefined);
  }
}
