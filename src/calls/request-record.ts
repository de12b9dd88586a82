// What one client request came to, and its record: the request counter, the duration
// histogram and the request log line. Every transport (HTTP, WebSocket, gRPC) records
// its requests here, labelled by transport, so they read alike in Grafana and logs.

import { randomUUID } from 'node:crypto';
import type { KeyRecord } from '../auth/key-store.js';
import type { GatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ForwardTrace } from '../pool/forwarder.js';

/** What one request came to, filled in along its way. */
export interface RequestOutcome extends ForwardTrace {
  label: string;
  outcome: string;
  key: KeyRecord | undefined;
}

/** Request ids a client may choose; any other is replaced, so logs never carry its bytes. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `x-request-id` when it is a plain token, else a fresh one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

export function newOutcome(): RequestOutcome {
  return { label: 'other', outcome: 'ok', key: undefined, node: undefined, attempts: 0 };
}

export function outcomeOf(err: GatewayError): string {
  return err.code.toLowerCase();
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
}

export function recordRequest(metrics: Metrics, logger: Logger, r: RequestRecord): void {
  const { result } = r;
  const seconds = (performance.now() - r.started) / 1000;
  metrics.observeRequest(r.chain, result.label, result.outcome, r.transport, seconds);
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
  });
}
