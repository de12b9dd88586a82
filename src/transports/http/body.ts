// Reading a request body with a hard cap: an honest Content-Length over the cap is
// refused before a byte is read; a body that grows past it is cut off at the cap.

import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../../errors.js';

const EMPTY = Buffer.alloc(0);

export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    return Promise.reject(new GatewayError('BODY_TOO_LARGE'));
  }
  if (declared === '0' || (declared === undefined && req.headers['transfer-encoding'] === undefined)) {
    return Promise.resolve(EMPTY);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        // Stop reading; the connection closes after the 413 is sent.
        req.pause();
        reject(new GatewayError('BODY_TOO_LARGE'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      // The request is over: its listeners go with it, no need to take them off.
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(new GatewayError('INVALID_REQUEST', { message: 'Request body could not be read', cause: err }));
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
