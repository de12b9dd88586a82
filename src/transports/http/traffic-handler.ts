// The request listener for chain traffic: request id, endpoint lookup, CORS (the
// endpoint's origins: preflights answered without a key, pages from other origins
// refused, answers to allowed pages readable by them), then the HTTP calls
// (http-calls.ts), and the answer written once, straight to the Node response.
// It is a plain node:http listener, not a Koa app: Koa's context and finish tracking
// cost about as much per request as auth and limits together (npm run bench), and this
// path needs neither routing nor middleware. The admin listener and the dashboard are
// Koa apps.
// `createTrafficHandler` does no I/O; the endpoint table is read through a function
// so a reload can swap it.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerConfig } from '../../config/types.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { newOutcome, outcomeOf, recordRequest, requestIdOf, traceIdOf } from '../../exec/request-record.js';
import { errorText, restErrorText } from '../shared/answers.js';
import { allowOrigin, corsPolicy, isPreflight, preflightHeaders } from '../shared/cors.js';
import { clientAddress, type TrustedProxies } from '../../exec/client-address.js';
import type { EndpointTable } from '../shared/endpoints.js';
import { normalizePath } from '../shared/path.js';
import type { Logger } from '../../ops/log.js';
import type { Metrics } from '../../ops/metrics/metrics.js';
import type { UsageRollup } from '../../quota/usage-rollup.js';
import { Tracing } from '../../ops/trace/tracing.js';
import { HttpAnswer } from './http-answer.js';
import type { HttpCalls, HttpChain } from './http-calls.js';

/** An endpoint whose plugin declares no request headers of its own. */
const NO_HEADERS: readonly string[] = Object.freeze([]);

export interface TrafficDeps {
  readonly endpoints: () => EndpointTable<HttpChain>;
  readonly calls: HttpCalls;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /**
   * True once the listener stopped accepting: a request still arriving on a kept-alive
   * connection was sent before the client could know; it is served, and its answer closes
   * the connection.
   */
  readonly draining: () => boolean;
  /**
   * Server limits as they are now, read per request (a reload applies to the next): the
   * longest path, and server.cors (the origins of answers outside any endpoint, the
   * preflight's max age).
   */
  readonly limits: () => Pick<ServerConfig, 'maxPathLength' | 'cors'>;
  /** Proxies whose X-Forwarded-For names the client in the request log line. */
  readonly trustedProxies: () => TrustedProxies;
  /** Spans of requests to chain endpoints; off when absent. */
  readonly tracing?: Tracing;
  /** Usage history of each call (usage.*); absent when the store keeps none. */
  readonly usage?: UsageRollup;
}

/** An error answer in the REST error shape, for when no endpoint's own style applies. */
function errorAnswer(requestId: string, e: GatewayError, extra: readonly string[] = []): HttpAnswer {
  const out = new HttpAnswer();
  out.headers.push('x-request-id', requestId, ...extra);
  out.status = e.status;
  out.body = restErrorText(e);
  return out;
}

/** A page at an origin the list allows may read the answer. */
function readableBy(out: HttpAnswer, origin: string | undefined, origins: readonly string[]): void {
  if (origin !== undefined && !out.withholdCors && corsPolicy(origins).matches(origin)) allowOrigin(out.headers, origin);
}

/**
 * The answer to a CORS preflight: 204 with what the page may send, or 403 for an
 * origin the endpoint does not answer. `listed`: the endpoint names the origin (not
 * only `*`), the one case where a public page may reach a private network through it.
 */
function preflight(
  req: IncomingMessage,
  requestId: string,
  origin: string,
  allowed: boolean,
  listed: boolean,
  maxAgeSeconds: number,
  family: readonly string[],
): HttpAnswer {
  if (!allowed)
    return errorAnswer(requestId, new GatewayError('FORBIDDEN', { message: 'This endpoint does not answer pages from this origin' }));
  const out = new HttpAnswer();
  out.status = 204;
  const h = req.headers;
  out.headers.push(
    'x-request-id',
    requestId,
    ...preflightHeaders(
      origin,
      h['access-control-request-headers'],
      listed ? h['access-control-request-private-network'] : undefined,
      maxAgeSeconds,
      family,
    ),
  );
  return out;
}

export function createTrafficHandler(deps: TrafficDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { metrics, logger } = deps;
  const tracing = deps.tracing ?? Tracing.off;

  /** A refusal outside the calls; pages the origins allow (the endpoint's, else the server's) may read it. */
  const refuse = (
    res: ServerResponse,
    requestId: string,
    origin: string | undefined,
    origins: readonly string[],
    e: GatewayError,
    extra?: readonly string[],
  ): void => {
    const out = errorAnswer(requestId, e, extra);
    readableBy(out, origin, origins);
    if (deps.draining()) out.set('connection', 'close');
    out.send(res);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = performance.now();
    const requestId = requestIdOf(req.headers['x-request-id']);
    // The one header lookup CORS costs a request without it.
    const origin = req.headers.origin;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path: string;
    try {
      path = normalizePath(q < 0 ? url : url.slice(0, q), deps.limits().maxPathLength);
    } catch (err) {
      return refuse(res, requestId, origin, deps.limits().cors.origins, err as GatewayError);
    }
    const routed = deps.endpoints().match(req.headers.host, path);
    if (routed === undefined) return refuse(res, requestId, origin, deps.limits().cors.origins, new GatewayError('ENDPOINT_NOT_FOUND'));
    const chain = routed.target;
    const origins = chain.config.cors.origins;
    const allowed = origin !== undefined && corsPolicy(origins).matches(origin);
    // Preflights carry no key (browsers never send one on them): answered before any lookup.
    if (origin !== undefined && isPreflight(req.method, req.headers['access-control-request-method'])) {
      const listed = allowed && !corsPolicy(origins).any;
      const out = preflight(
        req,
        requestId,
        origin,
        allowed,
        listed,
        deps.limits().cors.maxAgeSeconds,
        chain.handler.corsHeaders ?? NO_HEADERS,
      );
      if (deps.draining()) out.set('connection', 'close');
      out.send(res);
      return;
    }
    const result = newOutcome();
    result.traceId = traceIdOf(req.headers.traceparent);
    if (tracing.on) result.span = tracing.request('http', chain.name, req.headers);
    let out = new HttpAnswer();
    out.headers.push('x-request-id', requestId);
    if (origin !== undefined && !allowed) {
      // A page of an origin this endpoint does not answer: refused before the key is looked up or anything charged.
      const e = new GatewayError('FORBIDDEN', { message: 'This endpoint does not answer pages from this origin' });
      result.outcome = outcomeOf(e);
      out.status = e.status;
      out.body = errorText(e, chain.handler.http.errorStyle, chain.rpc);
    } else {
      chain.load.inFlight++;
      try {
        await deps.calls.handle(req, q < 0 ? '' : url.slice(q + 1), chain, routed.rest, result, out);
      } catch (err) {
        // A bug, not a client's doing: answer 502 and log it.
        const e = isGatewayError(err) ? err : new GatewayError('UPSTREAM_FAILED', { cause: err });
        result.outcome = outcomeOf(e);
        out = errorAnswer(requestId, e);
        logger.error('request failed unexpectedly', { requestId, chain: chain.name, error: (err as Error).stack ?? String(err) });
      } finally {
        chain.load.inFlight--;
      }
      if (allowed && !out.withholdCors) allowOrigin(out.headers, origin);
    }
    // Answers finishing during a drain close their connection, so the drain ends.
    if (deps.draining()) out.set('connection', 'close');
    result.bytesOut = out.send(res);
    const logged = logger.enabled('info');
    recordRequest(
      metrics,
      logger,
      {
        requestId,
        chain: chain.name,
        transport: 'http',
        status: out.status,
        started,
        result,
        client: logged ? clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trustedProxies()) : undefined,
        userAgent: req.headers['user-agent'],
      },
      deps.usage,
    );
  };

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Only a failure to write the answer itself lands here: nothing more can be sent.
      logger.error('request could not be answered', { error: (err as Error).stack ?? String(err) });
      res.destroy();
    });
  };
}
