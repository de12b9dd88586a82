// What one client request came to, and its record: the request counter and duration
// histogram, and the request log line. Every transport (HTTP, gRPC) records requests
// the same way, labelled by its transport.

import type { KeyRecord } from './auth/key-store.js';
import type { GatewayError } from './errors.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics/metrics.js';
import type { ForwardTrace } from './pool/forwarder.js';

/** What one request came to, for metrics and the request log. */
export interface RequestOutcome extends ForwardTrace {
  label: string;
  outcome: string;
  key: KeyRecord | undefined;
}

export function outcomeOf(err: GatewayError): string {
  return err.code.toLowerCase();
}

export interface RequestRecord {
  readonly requestId: string;
  readonly chain: string;
  readonly transport: 'http' | 'grpc';
  /** HTTP status, or for gRPC the status code the call ended with. */
  readonly status: number;
  /** performance.now() when the request arrived. */
  readonly started: number;
  readonly result: RequestOutcome;
}

export function recordRequest(metrics: Metrics, logger: Logger, r: RequestRecord): void {
  const { result } = r;
  const seconds = (performance.now() - r.started) / 1000;
  metrics.requests.inc({ chain: r.chain, method: result.label, outcome: result.outcome, transport: r.transport });
  metrics.duration.observe({ chain: r.chain, method: result.label, outcome: result.outcome }, seconds);
  if (!logger.enabled('info')) return;
  logger.info('request', {
    requestId: r.requestId,
    chain: r.chain,
    transport: r.transport === 'http' ? undefined : r.transport,
    method: result.label,
    node: result.node,
    attempts: result.attempts,
    status: r.status,
    outcome: result.outcome,
    ms: Math.round(seconds * 1e4) / 10,
    key: result.key?.prefix,
    keyId: result.key?.id,
  });
}
