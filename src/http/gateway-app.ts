// The Koa app for chain traffic: request id, endpoint lookup, then the pipeline.
// `createGatewayApp` does no I/O, so tests can drive `app.callback()` directly.
// The endpoint table is read through a function so a reload can swap it.

import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import type { ChainRuntime } from '../chain-runtime.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { restErrorText } from './answers.js';
import type { EndpointTable } from './endpoints.js';
import { normalizePath } from './path.js';
import { recordRequest } from '../request-record.js';
import { outcomeOf, type Pipeline, type RequestOutcome } from './pipeline.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface GatewayAppDeps {
  readonly endpoints: () => EndpointTable<ChainRuntime>;
  readonly pipeline: Pipeline;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** True while shutting down: requests still arriving on kept-alive connections get 503. */
  readonly draining: () => boolean;
  /** Longest request path accepted (config may change on reload). */
  readonly maxPathLength: () => number;
}

export function createGatewayApp(deps: GatewayAppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  app.proxy = false;
  const { metrics, logger } = deps;

  app.use(async (ctx) => {
    const started = performance.now();
    const given = ctx.req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    ctx.set('x-request-id', requestId);
    let path: string;
    try {
      path = normalizePath(ctx.path, deps.maxPathLength());
    } catch (err) {
      const e = err as GatewayError;
      ctx.status = e.status;
      ctx.type = 'application/json';
      ctx.body = restErrorText(e);
      return;
    }
    const routed = deps.endpoints().match(ctx.req.headers.host, path);
    if (routed === undefined) {
      const e = new GatewayError('ENDPOINT_NOT_FOUND');
      ctx.status = e.status;
      ctx.type = 'application/json';
      ctx.body = restErrorText(e);
      return;
    }
    if (deps.draining()) {
      const e = new GatewayError('UNAVAILABLE', { message: 'Gateway is shutting down' });
      ctx.status = e.status;
      ctx.set('connection', 'close');
      ctx.set('retry-after', '1');
      ctx.type = 'application/json';
      ctx.body = restErrorText(e);
      return;
    }
    const chain = routed.target;
    const result: RequestOutcome = { label: 'other', outcome: 'ok', key: undefined, node: undefined, attempts: 0 };
    const gauge = metrics.inFlight.labels(chain.name);
    gauge.inc();
    try {
      await deps.pipeline.handle(ctx, chain, routed.rest, result);
    } catch (err) {
      // A bug, not a client's doing: answer 502 in the endpoint's style and log it.
      const e = isGatewayError(err) ? err : new GatewayError('UPSTREAM_FAILED', { cause: err });
      result.outcome = outcomeOf(e);
      ctx.status = e.status;
      ctx.type = 'application/json';
      ctx.body = restErrorText(e);
      logger.error('request failed unexpectedly', { requestId, chain: chain.name, error: (err as Error).stack ?? String(err) });
    } finally {
      // Answers finishing during a drain close their connection, so the drain ends.
      if (deps.draining()) ctx.set('connection', 'close');
      gauge.dec();
      recordRequest(metrics, logger, { requestId, chain: chain.name, transport: 'http', status: ctx.status, started, result });
    }
  });
  return app;
}
