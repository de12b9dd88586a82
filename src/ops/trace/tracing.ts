// OpenTelemetry traces over OTLP/HTTP, made with the OpenTelemetry SDK (a tracer
// provider, a batch span processor, the OTLP/HTTP exporter) from `tracing:` in config.
// Off while no endpoint is set: `on` is false, transports never ask for a span, and a
// request costs one boolean test. A client's W3C traceparent (and tracestate) is
// continued; exports that fail are counted and logged when they start and stop failing.

import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, SpanKind, defaultTextMapGetter, type Context, type Tracer } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TracingConfig } from '../../config/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { packageRoot } from '../../package-root.js';
import { ATTR, RequestSpan } from './request-span.js';

/** A bound on each export, and on the flush at shutdown: a collector that is away never holds a stop. */
const EXPORT_TIMEOUT_MS = 10_000;
const SHUTDOWN_WAIT_MS = 5_000;

/** What tracing tells the rest of the gateway: spans exported or not (metrics, logs). */
export interface ExportEvents {
  exported(spans: number, ok: boolean, error: Error | undefined): void;
}

/** The exporter, with every batch's result told to `events`. */
class ObservedExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly events: ExportEvents,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      this.events.exported(spans.length, result.code === ExportResultCode.SUCCESS, result.error);
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

interface Parts {
  readonly provider: BasicTracerProvider;
  readonly tracer: Tracer;
  readonly propagator: W3CTraceContextPropagator;
}

export class Tracing {
  /** No endpoint: nothing is made, ever. */
  static readonly off = new Tracing(undefined);

  /** Read on the hot path: when false, no span, context or header is made for a request. */
  readonly on: boolean;

  private constructor(private readonly parts: Parts | undefined) {
    this.on = parts !== undefined;
  }

  static start(config: TracingConfig, version: string, events: ExportEvents): Tracing {
    if (config.endpoint === undefined) return Tracing.off;
    const exporter = new OTLPTraceExporter({ url: config.endpoint, headers: { ...config.headers }, timeoutMillis: EXPORT_TIMEOUT_MS });
    const root = config.sampleRatio >= 1 ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(config.sampleRatio);
    const provider = new BasicTracerProvider({
      resource: defaultResource().merge(
        resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: version }),
      ),
      // A client that sends a traceparent decides whether its trace is recorded.
      sampler: new ParentBasedSampler({ root }),
      spanProcessors: [
        new BatchSpanProcessor(new ObservedExporter(exporter, events), {
          scheduledDelayMillis: config.exportIntervalMs,
          exportTimeoutMillis: EXPORT_TIMEOUT_MS,
        }),
      ],
    });
    return new Tracing({ provider, tracer: provider.getTracer('noderouter', version), propagator: new W3CTraceContextPropagator() });
  }

  /** A request's span, continuing the client's traceparent when its headers carry one. */
  request(transport: 'http' | 'grpc', chain: string, headers: IncomingHttpHeaders): RequestSpan {
    return this.begin(transport, chain, this.parent(headers));
  }

  /** A WebSocket connection's message spans: each continues the traceparent its upgrade carried. */
  messages(headers: IncomingHttpHeaders): (chain: string) => RequestSpan {
    const parent = this.parent(headers);
    return (chain) => this.begin('ws', chain, parent);
  }

  private parent(headers: IncomingHttpHeaders): Context {
    const p = this.running();
    return headers.traceparent === undefined ? ROOT_CONTEXT : p.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
  }

  private begin(transport: 'http' | 'ws' | 'grpc', chain: string, parent: Context): RequestSpan {
    const { tracer, propagator } = this.running();
    const span = tracer.startSpan(
      chain,
      { kind: SpanKind.SERVER, attributes: { [ATTR.chain]: chain, [ATTR.transport]: transport } },
      parent,
    );
    return new RequestSpan(tracer, propagator, span, chain);
  }

  private running(): Parts {
    if (this.parts === undefined) throw new Error('tracing is off: check Tracing.on before asking for a span');
    return this.parts;
  }

  /** Send every ended span now (tests; the provider also sends them every exportIntervalMs). A failed export is counted, not thrown. */
  async flush(): Promise<void> {
    await this.parts?.provider.forceFlush().catch(() => undefined);
  }

  /** At stop: the spans still queued are sent, for a few seconds at most. */
  async shutdown(): Promise<void> {
    if (this.parts === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_WAIT_MS).unref();
    });
    await Promise.race([this.parts.provider.shutdown().catch(() => undefined), waited]);
    clearTimeout(timer);
  }
}

/**
 * The gateway's tracing from config: exported spans counted, and a warning when exports
 * start failing and a note when they work again (not one line per failed batch).
 */
export function startTracing(config: TracingConfig, metrics: Metrics, logger: Logger): Tracing {
  if (config.endpoint === undefined) return Tracing.off;
  const { version } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  let failing = false;
  const tracing = Tracing.start(config, version, {
    exported(spans, ok, error) {
      metrics.traceSpans.inc({ result: ok ? 'ok' : 'failed' }, spans);
      if (ok === !failing) return;
      failing = !ok;
      if (failing) logger.warn('spans could not be exported', { event: 'tracing', ok, error: error?.message });
      else logger.info('spans are exported again', { event: 'tracing', ok });
    },
  });
  // The collector's address without its path or query (which may carry a token).
  logger.info('traces exported over OTLP/HTTP', { event: 'tracing', collector: new URL(config.endpoint).origin });
  return tracing;
}
