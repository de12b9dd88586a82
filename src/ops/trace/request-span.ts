// One request's span and its attempts' child spans, when tracing is on: the request
// span carries what the request came to (chain, method label, key id — never the key —,
// tier, outcome, cache result); each attempt on a node is a child span (node, role,
// verdict, whether it was the hedge) whose context goes to the node as `traceparent`.
// Nothing here is reached while tracing is off: the call path only asks for a span.

import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapSetter,
  trace,
  type Context,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import { ATTR_HTTP_RESPONSE_STATUS_CODE } from '@opentelemetry/semantic-conventions';

/** Attribute names, one place: dashboards and queries of the collector read these. */
export const ATTR = {
  chain: 'noderouter.chain',
  transport: 'noderouter.transport',
  method: 'noderouter.method',
  keyId: 'noderouter.key_id',
  tier: 'noderouter.tier',
  outcome: 'noderouter.outcome',
  cache: 'noderouter.cache',
  requestId: 'noderouter.request_id',
  attempts: 'noderouter.attempts',
  node: 'noderouter.node',
  role: 'noderouter.node.role',
  verdict: 'noderouter.verdict',
  hedge: 'noderouter.hedge',
  httpStatus: ATTR_HTTP_RESPONSE_STATUS_CODE,
  /** Not in the stable conventions yet: the name the incubating ones give. */
  grpcStatus: 'rpc.grpc.status_code',
} as const;

/** Outcomes that are the gateway's or its nodes' failure (the error ratio alert's set): the span's status is ERROR. */
const FAILED = new Set(['upstream_failed', 'upstream_timeout', 'no_healthy_node', 'unavailable']);
/** Attempt verdicts that blame the node. */
const ATTEMPT_FAILED = new Set(['failure', 'timeout']);

/** What a request came to, as its span is closed with. */
export interface RequestEnd {
  readonly transport: 'http' | 'ws' | 'grpc';
  readonly requestId: string;
  readonly label: string;
  readonly outcome: string;
  readonly keyId: string | undefined;
  readonly tier: string | undefined;
  readonly cache: 'HIT' | 'MISS' | undefined;
  readonly status: number | undefined;
  readonly attempts: number;
}

/** One attempt's span; `headers` carry its context to the node (traceparent, and the client's tracestate). */
export class AttemptSpan {
  constructor(
    private readonly span: Span,
    readonly headers: Readonly<Record<string, string>>,
  ) {}

  /** How the attempt ended: the node's verdict on the answer (ok, chain_error, pruned …) or the failure (failure, timeout, throttled, cancelled). */
  end(verdict: string): void {
    this.span.setAttribute(ATTR.verdict, verdict);
    if (ATTEMPT_FAILED.has(verdict)) this.span.setStatus({ code: SpanStatusCode.ERROR, message: verdict });
    this.span.end();
  }
}

export class RequestSpan {
  private context: Context | undefined;

  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: TextMapPropagator,
    private readonly span: Span,
    private readonly chain: string,
  ) {}

  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  /** A child span for one attempt on `node`; `hedge`: the second attempt sent while the first was still out. */
  attempt(node: string, role: string, hedge: boolean): AttemptSpan {
    this.context ??= trace.setSpan(ROOT_CONTEXT, this.span);
    const span = this.tracer.startSpan(
      `attempt ${node}`,
      { kind: SpanKind.CLIENT, attributes: { [ATTR.node]: node, [ATTR.role]: role, [ATTR.hedge]: hedge } },
      this.context,
    );
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
    return new AttemptSpan(span, headers);
  }

  end(r: RequestEnd): void {
    const { span } = this;
    span.updateName(`${this.chain} ${r.label}`);
    span.setAttribute(ATTR.method, r.label);
    span.setAttribute(ATTR.outcome, r.outcome);
    span.setAttribute(ATTR.requestId, r.requestId);
    span.setAttribute(ATTR.attempts, r.attempts);
    if (r.keyId !== undefined) span.setAttribute(ATTR.keyId, r.keyId);
    if (r.tier !== undefined) span.setAttribute(ATTR.tier, r.tier);
    if (r.cache !== undefined) span.setAttribute(ATTR.cache, r.cache === 'HIT' ? 'hit' : 'miss');
    if (r.status !== undefined) span.setAttribute(r.transport === 'grpc' ? ATTR.grpcStatus : ATTR.httpStatus, r.status);
    if (FAILED.has(r.outcome)) span.setStatus({ code: SpanStatusCode.ERROR, message: r.outcome });
    span.end();
  }
}
