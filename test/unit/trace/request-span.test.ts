// A request's span and its attempts' spans (src/ops/trace/request-span.ts), made by the
// OpenTelemetry SDK's own tracer and kept by its in-memory exporter: what a request's
// span is named and carries, which outcomes and verdicts mark a span failed, and the
// traceparent an attempt sends its node.

import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { expect } from 'chai';
import { ATTR, RequestSpan, type RequestEnd } from '../../../src/ops/trace/request-span.js';

const END: RequestEnd = {
  transport: 'http',
  requestId: 'req-1',
  label: 'eth_call',
  outcome: 'ok',
  keyId: 'key-1',
  tier: 'growth',
  cache: undefined,
  status: 200,
  attempts: 1,
};

describe('request and attempt spans (src/ops/trace/request-span.ts)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('test');

  const request = (chain = 'l1'): RequestSpan =>
    new RequestSpan(tracer, new W3CTraceContextPropagator(), tracer.startSpan(chain, { kind: SpanKind.SERVER }), chain);
  const finished = (): ReadableSpan[] => exporter.getFinishedSpans();
  const named = (name: string): ReadableSpan => {
    const span = finished().find((s) => s.name === name);
    if (span === undefined)
      throw new Error(
        `no span ${name} among ${finished()
          .map((s) => s.name)
          .join(', ')}`,
      );
    return span;
  };

  afterEach(() => exporter.reset());
  after(() => provider.shutdown());

  it('names the span by chain and method and carries what the request came to, the key by id', () => {
    const r = request();
    r.end({ ...END, cache: 'HIT' });
    const span = named('l1 eth_call');
    expect(span.attributes).to.deep.equal({
      [ATTR.method]: 'eth_call',
      [ATTR.outcome]: 'ok',
      [ATTR.requestId]: 'req-1',
      [ATTR.attempts]: 1,
      [ATTR.keyId]: 'key-1',
      [ATTR.tier]: 'growth',
      [ATTR.cache]: 'hit',
      [ATTR.httpStatus]: 200,
    });
    expect(span.status.code).to.equal(SpanStatusCode.UNSET);
    expect(r.traceId).to.equal(span.spanContext().traceId);
  });

  it('leaves out what a refused request never had, and puts a gRPC status under its own name', () => {
    request('hub-grpc').end({
      ...END,
      transport: 'grpc',
      label: '/cosmos.auth.v1beta1.Query/Params',
      keyId: undefined,
      tier: undefined,
      status: 7,
    });
    const span = named('hub-grpc /cosmos.auth.v1beta1.Query/Params');
    expect(span.attributes).to.not.have.any.keys(ATTR.keyId, ATTR.tier, ATTR.cache, ATTR.httpStatus);
    expect(span.attributes[ATTR.grpcStatus]).to.equal(7);
    request().end({ ...END, cache: 'MISS', status: undefined });
    expect(named('l1 eth_call').attributes)
      .to.include({ [ATTR.cache]: 'miss' })
      .and.not.have.any.keys(ATTR.httpStatus, ATTR.grpcStatus);
  });

  it('marks the span failed for the gateway’s and its nodes’ failures only, not for a client’s mistake or a chain’s error', () => {
    const statuses: Record<string, SpanStatusCode> = {};
    for (const outcome of [
      'upstream_failed',
      'upstream_timeout',
      'no_healthy_node',
      'unavailable',
      'rate_limited',
      'invalid',
      'chain_error',
      'ok',
    ]) {
      request(outcome).end({ ...END, label: 'm', outcome });
      const span = named(`${outcome} m`);
      statuses[outcome] = span.status.code;
      if (span.status.code === SpanStatusCode.ERROR) expect(span.status.message).to.equal(outcome);
    }
    const { ERROR: e, UNSET: u } = SpanStatusCode;
    expect(statuses).to.deep.equal({
      upstream_failed: e,
      upstream_timeout: e,
      no_healthy_node: e,
      unavailable: e,
      rate_limited: u,
      invalid: u,
      chain_error: u,
      ok: u,
    });
  });

  it('makes each attempt a client span under the request, whose traceparent names the attempt', () => {
    const r = request();
    const first = r.attempt('l1-full-1', 'full', false);
    const hedge = r.attempt('l1-full-2', 'full', true);
    first.end('timeout');
    hedge.end('ok');
    r.end(END);
    const parent = named('l1 eth_call').spanContext();
    const a = named('attempt l1-full-1');
    const b = named('attempt l1-full-2');
    for (const [span, attempt] of [
      [a, first],
      [b, hedge],
    ] as const) {
      expect(span.kind).to.equal(SpanKind.CLIENT);
      expect(span.parentSpanContext?.spanId).to.equal(parent.spanId);
      const { traceId, spanId } = span.spanContext();
      expect(traceId).to.equal(parent.traceId);
      expect(attempt.headers).to.deep.equal({ traceparent: `00-${traceId}-${spanId}-01` });
    }
    expect(a.attributes).to.deep.equal({ [ATTR.node]: 'l1-full-1', [ATTR.role]: 'full', [ATTR.hedge]: false, [ATTR.verdict]: 'timeout' });
    expect(b.attributes).to.include({ [ATTR.hedge]: true, [ATTR.verdict]: 'ok' });
    expect([a.status, b.status]).to.deep.equal([{ code: SpanStatusCode.ERROR, message: 'timeout' }, { code: SpanStatusCode.UNSET }]);
  });

  it('blames the node only for a failure or a timeout: a chain error, a pruned node or a cancelled hedge is not its fault', () => {
    const r = request();
    for (const verdict of ['failure', 'timeout', 'chain_error', 'pruned', 'throttled', 'cancelled'])
      r.attempt(verdict, 'full', false).end(verdict);
    const failed = finished()
      .filter((s) => s.status.code === SpanStatusCode.ERROR)
      .map((s) => s.name);
    expect(failed).to.deep.equal(['attempt failure', 'attempt timeout']);
  });

  it('continues the client’s trace and passes its tracestate on to every node', () => {
    const propagator = new W3CTraceContextPropagator();
    const client = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=opaque' };
    const parent = propagator.extract(ROOT_CONTEXT, client, defaultTextMapGetter);
    const r = new RequestSpan(tracer, propagator, tracer.startSpan('l1', { kind: SpanKind.SERVER }, parent), 'l1');
    const attempt = r.attempt('l1-full-1', 'full', false);
    expect(r.traceId).to.equal('0af7651916cd43dd8448eb211c80319c');
    expect(attempt.headers.tracestate).to.equal('vendor=opaque');
    expect(attempt.headers.traceparent).to.match(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    attempt.end('ok');
    r.end(END);
    expect(named('l1 eth_call').parentSpanContext?.spanId).to.equal('b7ad6b7169203331');
  });
});
