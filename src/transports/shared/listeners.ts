// Opening and closing the gateway's node:http listeners: bind and report the address,
// answer requests Node's own parser refuses in the error table's shape, and the
// listener's limits read where Node uses them, so a reload changes them in place.

import { createServer, type RequestListener, type Server } from 'node:http';
import { Server as NetServer, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ServerConfig } from '../../config/types.js';
import { GatewayError } from '../../errors.js';
import type { ClientConnections } from './client-connections.js';
import { refuseSocket } from './raw-refusal.js';

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

/**
 * A traffic listener's open connections, so a drain can close each one only when it is
 * safe (drainConnections). WebSocket upgrades leave the set: the WebSocket side closes them.
 */
export class OpenConnections {
  readonly sockets = new Set<Socket>();

  attach(server: Server): void {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('upgrade', (_req: unknown, socket: Duplex) => this.sockets.delete(socket as Socket));
  }
}

/**
 * Stop taking connections: the listening socket is closed and nothing else. Node's own
 * server.close() also destroys every connection its parser sees idle, which at full load
 * includes connections whose next request is already in the socket's buffer (sent, never
 * answered). Resolves once the last connection is gone.
 */
export function stopAccepting(server: Server): Promise<void> {
  return new Promise((resolve) => {
    NetServer.prototype.close.call(server, () => resolve());
  });
}

/**
 * After stopAccepting: every request a connection brings is answered with `connection:
 * close` (the handler sees the drain), which ends that connection right after its
 * answer. A connection that brings nothing — no response in progress, not a byte read —
 * for `graceMs` is half-closed (FIN) and read until the client closes its side, so a
 * request crossing the FIN is never met with a reset; a client that kept its connection
 * busy never sees this. Returns the stop of the watch.
 */
export function drainConnections(open: OpenConnections, graceMs: number): () => void {
  const quiet = new Map<Socket, { bytes: number; since: number }>();
  const check = (): void => {
    const now = Date.now();
    for (const socket of open.sockets) {
      if (!socket.writable) continue;
      const bytes = socket.bytesRead;
      const seen = quiet.get(socket);
      // A response in progress (Node's own mark on the socket) or bytes since the last look: not idle.
      if ((socket as { _httpMessage?: unknown })._httpMessage != null) quiet.set(socket, { bytes, since: now });
      else if (graceMs === 0) socket.end();
      else if (seen === undefined || seen.bytes !== bytes) quiet.set(socket, { bytes, since: now });
      else if (now - seen.since >= graceMs) socket.end();
    }
    for (const socket of quiet.keys()) if (!open.sockets.has(socket)) quiet.delete(socket);
  };
  check();
  const timer = setInterval(check, Math.max(10, Math.floor(graceMs / 5)));
  return () => clearInterval(timer);
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

/**
 * A setting Node reads from the server object each time it needs it (a connection's
 * accept, a response's keep-alive, the periodic check of slow requests): read from
 * `value()` then, so a reload applies to the next use without telling the listener.
 */
export function readAtUse(server: NetServer, name: string, value: () => number): void {
  Object.defineProperty(server, name, { get: value, enumerable: true, configurable: true });
}

/** The limits of a traffic listener, as it reads them. */
export type TrafficLimits = Pick<
  ServerConfig,
  'maxHeaderBytes' | 'keepAliveTimeoutMs' | 'headersTimeoutMs' | 'requestTimeoutMs' | 'maxConnections'
>;

/** `limits()` is read at use; only maxHeaderBytes is taken at start (Node's parser is made with it). */
export function createTrafficServer(
  limits: () => TrafficLimits,
  onRequest: RequestListener,
  perClient: ClientConnections,
  open: OpenConnections,
): Server {
  const server = createServer({ maxHeaderSize: limits().maxHeaderBytes }, onRequest);
  readAtUse(server, 'keepAliveTimeout', () => limits().keepAliveTimeoutMs);
  readAtUse(server, 'headersTimeout', () => limits().headersTimeoutMs);
  // The whole request, body included, must arrive within the client deadline.
  readAtUse(server, 'requestTimeout', () => limits().requestTimeoutMs + limits().headersTimeoutMs);
  readAtUse(server, 'maxConnections', () => limits().maxConnections);
  perClient.attach(server);
  open.attach(server);
  server.on('clientError', answerClientError);
  return server;
}
