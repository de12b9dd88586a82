// The request listener for chain traffic: request id, endpoint lookup, then the
// pipeline, and the answer written once, straight to the Node response. It is a plain
// node:http listener, not a Koa app: Koa's context and finish tracking cost about as
// much per request as auth and limits together (npm run bench), and this path needs
// neither routing nor middleware. The admin listener and the dashboard are Koa apps.
// `createTrafficHandler` does no I/O; the endpoint table is read through a function
// so a reload can swap it.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChainRuntime } from '../chain-runtime.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { restErrorText } from './answers.js';
import type { EndpointTable } from './endpoints.js';
import { HttpAnswer } from './http-answer.js';
import { normalizePath } from './path.js';
import { newOutcome, outcomeOf, recordRequest, requestIdOf } from '../calls/request-record.js';
import type { Pipeline } from './pipeline.js';

export interface TrafficDeps {
  readonly endpoints: () => EndpointTable<ChainRuntime>;
  readonly pipeline: Pipeline;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** True while shutting down: requests still arriving on kept-alive connections get 503. */
  readonly draining: () => boolean;
  /** Longest request path accepted (config may change on reload). */
  readonly maxPathLength: () => number;
}

/** An error answer in the REST error shape, for when no endpoint's own style applies. */
function errorAnswer(requestId: string, e: GatewayError, extra: readonly string[] = []): HttpAnswer {
  const out = new HttpAnswer();
  out.headers.push('x-request-id', requestId, ...extra);
  out.status = e.status;
  out.body = restErrorText(e);
  return out;
}

/** A refusal before any chain endpoint is involved. */
function refuse(res: ServerResponse, requestId: string, e: GatewayError, extra?: readonly string[]): void {
  errorAnswer(requestId, e, extra).send(res);
}

export function createTrafficHandler(deps: TrafficDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { metrics, logger } = deps;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = performance.now();
    const requestId = requestIdOf(req.headers['x-request-id']);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path: string;
    try {
      path = normalizePath(q < 0 ? url : url.slice(0, q), deps.maxPathLength());
    } catch (err) {
      return refuse(res, requestId, err as GatewayError);
    }
    const routed = deps.endpoints().match(req.headers.host, path);
    if (routed === undefined) return refuse(res, requestId, new GatewayError('ENDPOINT_NOT_FOUND'));
    if (deps.draining()) {
      return refuse(res, requestId, new GatewayError('UNAVAILABLE', { message: 'Gateway is shutting down' }), [
        'connection',
        'close',
        'retry-after',
        '1',
      ]);
    }
    const chain = routed.target;
    const result = newOutcome();
    let out = new HttpAnswer();
    out.headers.push('x-request-id', requestId);
    chain.load.inFlight++;
    try {
      await deps.pipeline.handle(req, q < 0 ? '' : url.slice(q + 1), chain, routed.rest, result, out);
    } catch (err) {
      // A bug, not a client's doing: answer 502 and log it.
      const e = isGatewayError(err) ? err : new GatewayError('UPSTREAM_FAILED', { cause: err });
      result.outcome = outcomeOf(e);
      out = errorAnswer(requestId, e);
      logger.error('request failed unexpectedly', { requestId, chain: chain.name, error: (err as Error).stack ?? String(err) });
    } finally {
      chain.load.inFlight--;
    }
    // Answers finishing during a drain close their connection, so the drain ends.
    if (deps.draining()) out.set('connection', 'close');
    out.send(res);
    recordRequest(metrics, logger, { requestId, chain: chain.name, transport: 'http', status: out.status, started, result });
  };

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Only a failure to write the answer itself lands here: nothing more can be sent.
      logger.error('request could not be answered', { error: (err as Error).stack ?? String(err) });
      res.destroy();
    });
  };
}
