// The gRPC listener: one cleartext HTTP/2 (h2c) server. Each call is checked for
// gRPC's shape (POST, application/grpc, a /package.Service/Method path), routed to a
// chain endpoint by its :authority host (the gRPC chain without route.host takes the
// rest), and handed to the relay; every call is counted and logged like HTTP requests.
// close() sends GOAWAY, lets calls in flight finish within a bound, then cuts them.

import {
  constants,
  createServer,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { ServerConfig } from '../../config/types.js';
import { GatewayError } from '../../errors.js';
import { newOutcome, outcomeOf, recordRequest, requestIdOf, traceIdOf } from '../../exec/request-record.js';
import { refuse } from '../../grpc-wire/status.js';
import { clientAddress, type TrustedProxies } from '../../exec/client-address.js';
import type { EndpointTable } from '../shared/endpoints.js';
import type { Logger } from '../../ops/log.js';
import type { Metrics } from '../../ops/metrics/metrics.js';
import type { UsageRollup } from '../../quota/usage-rollup.js';
import type { ClientConnections } from '../shared/client-connections.js';
import { readAtUse } from '../shared/listeners.js';
import { Tracing } from '../../ops/trace/tracing.js';
import type { GrpcChain, GrpcRelay } from './relay.js';

/** `/package.Service/Method`: the only paths gRPC clients send. */
const GRPC_PATH = /^\/[A-Za-z_][A-Za-z0-9_.]*\/[A-Za-z_][A-Za-z0-9_]*$/;

export type GrpcListenerLimits = Pick<
  ServerConfig,
  'maxPathLength' | 'maxHeaderBytes' | 'maxConnections' | 'grpcMaxConcurrentStreams' | 'keepAliveTimeoutMs'
>;

export interface GrpcListenerDeps {
  /** gRPC chain endpoints by host; read per call so a reload can swap it. */
  readonly endpoints: () => EndpointTable<GrpcChain>;
  readonly relay: GrpcRelay;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** True while shutting down: calls still arriving on open sessions get UNAVAILABLE. */
  readonly draining: () => boolean;
  /**
   * Server limits as they are now, each read when it is used, so a reload applies to the
   * next connection, session or call: maxConnections as a connection arrives,
   * grpcMaxConcurrentStreams (SETTINGS_MAX_CONCURRENT_STREAMS: more calls on one connection
   * are refused by HTTP/2) before its session is made, keepAliveTimeoutMs (a session
   * without a call this long is closed) as it opens, maxPathLength per call. Only
   * maxHeaderBytes is taken at start, as the traffic listener's is.
   */
  readonly limits: () => GrpcListenerLimits;
  /** Connections per client address. */
  readonly perClient: ClientConnections;
  /** Proxies whose x-forwarded-for names the client in request log lines. */
  readonly trustedProxies: () => TrustedProxies;
  /** Spans of calls; off when absent. */
  readonly tracing?: Tracing;
  /** Usage history of each call (usage.*); absent when the store keeps none. */
  readonly usage?: UsageRollup;
}

export class GrpcListener {
  private readonly server: Http2Server;
  private readonly sessions = new Set<ServerHttp2Session>();
  /** host:port the listener is bound to. */
  address = '';

  constructor(private readonly deps: GrpcListenerDeps) {
    const atStart = deps.limits();
    this.server = createServer({
      settings: { maxHeaderListSize: atStart.maxHeaderBytes, maxConcurrentStreams: atStart.grpcMaxConcurrentStreams },
      // Floods of malformed frames or of streams refused over the cap end the connection.
      maxSessionInvalidFrames: 100,
      maxSessionRejectedStreams: 100,
    });
    readAtUse(this.server, 'maxConnections', () => deps.limits().maxConnections);
    // Ahead of HTTP/2's own listener, which makes the session and sends its first SETTINGS from the server's.
    this.server.prependListener('connection', () =>
      this.server.updateSettings({ maxConcurrentStreams: deps.limits().grpcMaxConcurrentStreams }),
    );
    deps.perClient.attach(this.server);
    this.server.on('session', (session: ServerHttp2Session) => {
      this.sessions.add(session);
      session.setTimeout(deps.limits().keepAliveTimeoutMs, () => session.close());
      session.on('error', () => undefined);
      session.on('close', () => this.sessions.delete(session));
    });
    this.server.on('stream', (stream, headers) => void this.onStream(stream, headers));
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const a = this.server.address() as AddressInfo;
        this.address = `${host.includes(':') ? `[${host}]` : host}:${a.port}`;
        resolve(a);
      });
    });
  }

  private async onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    stream.on('error', () => undefined);
    const { deps } = this;
    const started = performance.now();
    // Not gRPC at all: answered in HTTP, as the gRPC spec says.
    if (headers[':method'] !== 'POST') {
      stream.respond({ ':status': 405, allow: 'POST' }, { endStream: true });
      return;
    }
    const ct = headers['content-type'];
    if (typeof ct !== 'string' || !/^application\/grpc(?:$|[+;])/.test(ct)) {
      stream.respond({ ':status': 415, accept: 'application/grpc' }, { endStream: true });
      stream.close(constants.NGHTTP2_NO_ERROR);
      return;
    }
    const path = headers[':path'] ?? '';
    if (path.length > deps.limits().maxPathLength || !GRPC_PATH.test(path)) {
      refuse(stream, new GatewayError('METHOD_NOT_FOUND', { message: 'Not a gRPC method path (/package.Service/Method)' }));
      return;
    }
    const routed = deps.endpoints().match(headers[':authority'] ?? headers.host, '/');
    if (routed === undefined) {
      refuse(stream, new GatewayError('ENDPOINT_NOT_FOUND', { message: 'No gRPC chain endpoint for this authority' }));
      return;
    }
    const chain = routed.target;
    const requestId = requestIdOf(headers['x-request-id']);
    const result = newOutcome();
    result.traceId = traceIdOf(headers.traceparent);
    // Read now: a stream that has ended is no longer attached to its session.
    const peer = stream.session?.socket?.remoteAddress;
    const tracing = deps.tracing ?? Tracing.off;
    if (tracing.on) result.span = tracing.request('grpc', chain.name, headers);
    let status = 0;
    chain.load.inFlight++;
    try {
      if (deps.draining()) {
        const e = new GatewayError('UNAVAILABLE', { message: 'Gateway is shutting down' });
        result.outcome = outcomeOf(e);
        status = e.grpcCode;
        refuse(stream, e, { 'retry-after': '1' });
      } else {
        status = await deps.relay.handle(stream, headers, chain, result);
      }
    } catch (err) {
      // A bug, not a client's doing: answer UNAVAILABLE and log it.
      const e = new GatewayError('UPSTREAM_FAILED', { cause: err });
      result.outcome = outcomeOf(e);
      status = e.grpcCode;
      refuse(stream, e);
      if (!stream.destroyed && stream.headersSent && !stream.closed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
      deps.logger.error('gRPC call failed unexpectedly', { requestId, chain: chain.name, error: (err as Error).stack ?? String(err) });
    } finally {
      chain.load.inFlight--;
      const logged = deps.logger.enabled('info');
      recordRequest(
        deps.metrics,
        deps.logger,
        {
          requestId,
          chain: chain.name,
          transport: 'grpc',
          status,
          started,
          result,
          client: logged ? clientAddress(peer, headers['x-forwarded-for'], deps.trustedProxies()) : undefined,
          userAgent: headers['user-agent'],
        },
        deps.usage,
      );
    }
  }

  /** GOAWAY to every session; calls in flight get `timeoutMs` to finish, then sessions are cut. */
  async close(timeoutMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sessions) s.close();
    const cut = setTimeout(() => {
      for (const s of this.sessions) s.destroy();
    }, timeoutMs);
    await closed;
    clearTimeout(cut);
  }
}
