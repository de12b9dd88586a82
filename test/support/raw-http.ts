// Sending bytes no HTTP client would send (bad headers, conflicting lengths) and
// reading back the status line and body.

import { connect } from 'node:net';

export interface RawResponse {
  readonly status: number;
  readonly head: string;
  readonly body: string;
}

export function rawRequest(url: string, bytes: string | Buffer, waitMs = 2_000): Promise<RawResponse> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.end(), waitMs);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(text.slice(0, split));
      // One answer is all we want: stop reading once its body is complete.
      if (split >= 0 && length !== null && Buffer.byteLength(text.slice(split + 4), 'latin1') >= Number(length[1])) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, body: split < 0 ? '' : text.slice(split + 4) });
    });
    socket.write(bytes);
  });
}
