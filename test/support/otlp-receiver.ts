// A local OTLP/HTTP trace receiver for tests: a node:http server on 127.0.0.1 that takes
// POST /v1/traces in OTLP's JSON encoding (what @opentelemetry/exporter-trace-otlp-http
// sends) and keeps every span with its resource's service name, attributes flattened.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  /** 2 server, 3 client. */
  readonly kind: number;
  /** 0 unset, 1 ok, 2 error. */
  readonly status: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number };
  attributes?: OtlpAttribute[];
}
interface OtlpRequest {
  resourceSpans: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
}

function flat(attrs: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attrs ?? []) {
    out[key] = value.stringValue ?? value.boolValue ?? (value.intValue === undefined ? (value.doubleValue ?? '') : Number(value.intValue));
  }
  return out;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Headers of every export request (a collector's credentials arrive here). */
  readonly requests: Array<Readonly<Record<string, string | string[] | undefined>>> = [];
  /** Answer exports with this status (a collector that is down or refuses). */
  status = 200;
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        this.requests.push({ ...req.headers });
        if (this.status !== 200) {
          res.writeHead(this.status, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpRequest;
        for (const rs of body.resourceSpans) {
          const service = String(flat(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              this.spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId === undefined || s.parentSpanId === '' ? undefined : s.parentSpanId,
                name: s.name,
                kind: s.kind,
                status: s.status?.code ?? 0,
                attributes: flat(s.attributes),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
  }

  /** Spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /** The children of a span. */
  children(span: ReceivedSpan): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === span.traceId && s.parentSpanId === span.spanId);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }
}
