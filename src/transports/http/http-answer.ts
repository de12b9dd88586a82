// The answer to one HTTP request as the pipeline builds it: status, headers as a
// flat name/value list (what res.writeHead takes without copying) and a text body.
// Written once, by the app, straight to the Node response, always with `nosniff`: a
// node's answer relayed as JSON must never be read by a browser as HTML or script;
// and `Vary: Origin`, since CORS headers depend on it (no shared cache may give one
// page's answer to another's).

import type { ServerResponse } from 'node:http';

export class HttpAnswer {
  status = 200;
  /** Null: no body (204, or nothing decided yet). */
  body: string | null = null;
  type = 'application/json';
  readonly headers: string[] = [];
  /** Refused for the page's origin (a key's origins): no CORS headers, so the browser refuses it too. */
  withholdCors = false;

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

  /** Write the answer; returns the bytes of its body. */
  send(res: ServerResponse): number {
    const h = this.headers;
    const body = this.body;
    const bytes = body === null ? 0 : Buffer.byteLength(body);
    if (body !== null) h.push('content-type', this.type, 'content-length', String(bytes));
    h.push('x-content-type-options', 'nosniff', 'vary', 'origin');
    res.writeHead(this.status, h);
    res.end(body ?? undefined);
    return bytes;
  }
}
