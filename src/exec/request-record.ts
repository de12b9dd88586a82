// What one client request came to, and its record: the request counter, the duration
// histogram, the request log line and, per call, usage history (call-usage.ts). Every
// transport (HTTP, WebSocket, gRPC) records its requests here, labelled by transport,
// so they read alike in Grafana, logs and usage.

import { randomUUID } from 'node:crypto';
import type { KeyRecord } from '../auth/key-store.js';
import type { ErrorCode, GatewayError } from '../errors.js';
import { USER_AGENT_MAX, type Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { UsageRollup } from '../quota/usage-rollup.js';
import type { ForwardTrace } from './attempts/attempts.js';
import { recordUsage, type CallsTrace } from './call-usage.js';
import { errorOutcome, type ClientOutcome } from './outcome.js';

/** What one request came to, filled in along its way. */
export interface RequestOutcome extends ForwardTrace, CallsTrace {
  label: string;
  outcome: ClientOutcome;
  key: KeyRecord | undefined;
  /** The response cache's part (undefined: nothing was cacheable). */
  cache: 'HIT' | 'MISS' | undefined;
  /** The request's W3C trace id: the client's traceparent's, or the one tracing gave it. */
  traceId: string | undefined;
  /** Bytes of the request body (message) read, and of the answer body sent. */
  bytesIn: number;
  bytesOut: number;
}

/** Request ids a client may choose; any other is replaced, so logs never carry its bytes. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `x-request-id` when it is a plain token, else a fresh one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

export function newOutcome(): RequestOutcome {
  return {
    label: 'other',
    outcome: 'ok',
    key: undefined,
    node: undefined,
    attempts: 0,
    cache: undefined,
    traceId: undefined,
    bytesIn: 0,
    bytesOut: 0,
    span: undefined,
    results: undefined,
    routed: undefined,
    refusedLabels: undefined,
    invalidCalls: 0,
    charged: 0,
  };
}

/** version-traceid-parentid-flags; an all-zero trace or parent id is invalid (W3C Trace Context). */
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-|$)/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_PARENT = '0'.repeat(16);

/** The trace id of a client's `traceparent` header, when it is a valid one (version ff is invalid). */
export function traceIdOf(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string' || header.length < 55) return undefined;
  const m = TRACEPARENT.exec(header);
  if (m === null || header.startsWith('ff') || m[1] === ZERO_TRACE || m[2] === ZERO_PARENT) return undefined;
  return m[1];
}

/** A User-Agent as the log line keeps it. */
export function userAgentOf(header: string | undefined): string | undefined {
  return header === undefined || header.length <= USER_AGENT_MAX ? header : header.slice(0, USER_AGENT_MAX);
}

export function outcomeOf(err: GatewayError): Lowercase<ErrorCode> {
  return errorOutcome(err.code);
}

export interface RequestRecord {
  readonly requestId: string;
  readonly chain: string;
  readonly transport: 'http' | 'ws' | 'grpc';
  /** HTTP status, or for gRPC the status code the call ended with; absent for WebSocket messages. */
  readonly status: number | undefined;
  /** performance.now() when the request arrived. */
  readonly started: number;
  readonly result: RequestOutcome;
  /** The client's address (client-address.ts), and its User-Agent. */
  readonly client: string | undefined;
  readonly userAgent: string | undefined;
}

/** `usage`: where its calls' usage history goes; absent when none is kept. */
export function recordRequest(metrics: Metrics, logger: Logger, r: RequestRecord, usage?: UsageRollup): void {
  const { result } = r;
  const seconds = (performance.now() - r.started) / 1000;
  metrics.observeRequest(r.chain, result.label, result.outcome, r.transport, seconds);
  if (usage !== undefined) recordUsage(usage, result, r, seconds * 1000);
  if (result.span !== undefined) {
    result.span.end({
      transport: r.transport,
      requestId: r.requestId,
      label: result.label,
      outcome: result.outcome,
      keyId: result.key?.id,
      tier: result.key?.tier,
      cache: result.cache,
      status: r.status,
      attempts: result.attempts,
    });
  }
  if (!logger.enabled('info')) return;
  logger.request({
    requestId: r.requestId,
    transport: r.transport === 'http' ? undefined : r.transport,
    chain: r.chain,
    method: result.label,
    node: result.node,
    attempts: result.attempts,
    status: r.status,
    outcome: result.outcome,
    ms: Math.round(seconds * 1e4) / 10,
    key: result.key?.prefix,
    keyId: result.key?.id,
    client: r.client,
    userAgent: userAgentOf(r.userAgent),
    bytesIn: result.bytesIn,
    bytesOut: result.bytesOut,
    cache: result.cache === undefined ? undefined : result.cache === 'HIT' ? 'hit' : 'miss',
    // The span's trace when tracing is on (it continues the client's), else the client's traceparent's.
    traceId: result.span?.traceId ?? result.traceId,
  });
}
