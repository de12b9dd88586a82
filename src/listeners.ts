// Opening and closing the gateway's node:http listeners: bind and report the address,
// answer requests Node's own parser refuses in the error table's shape, and the
// settings a reload may change on a listener that is already open.

import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ServerConfig } from './config/types.js';
import { GatewayError } from './errors.js';
import type { ClientConnections } from './ingress/client-connections.js';
import { refuseSocket } from './ingress/raw-refusal.js';

export function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

export function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Requests Node's parser refuses never reach a handler (oversized headers, CR/LF in a
 * header, conflicting lengths): answer them in the error table's shape and close.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const overflow = err.code === 'HPE_HEADER_OVERFLOW';
  refuseSocket(
    socket,
    new GatewayError(overflow ? 'HEADERS_TOO_LARGE' : 'INVALID_REQUEST', overflow ? {} : { message: 'Malformed HTTP request' }),
  );
}

/** The timeouts and caps of a traffic listener that a reload can change in place (maxHeaderBytes only at start). */
export function applyTrafficLimits(server: Server, sc: ServerConfig): void {
  server.keepAliveTimeout = sc.keepAliveTimeoutMs;
  server.headersTimeout = sc.headersTimeoutMs;
  // The whole request, body included, must arrive within the client deadline.
  server.requestTimeout = sc.requestTimeoutMs + sc.headersTimeoutMs;
  server.maxConnections = sc.maxConnections;
}

export function createTrafficServer(sc: ServerConfig, onRequest: RequestListener, perClient: ClientConnections): Server {
  const server = createServer({ maxHeaderSize: sc.maxHeaderBytes }, onRequest);
  applyTrafficLimits(server, sc);
  perClient.attach(server);
  server.on('clientError', answerClientError);
  return server;
}
