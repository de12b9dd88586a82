// The gRPC listener, on the same key cache, call path and metrics as HTTP, reading the
// server limits through `limits()` when it uses them.

import type { ChainSet } from './chain-set.js';
import { GrpcListener } from '../transports/grpc/listener.js';
import { GrpcRelay } from '../transports/grpc/relay.js';
import { ClientConnections } from '../transports/shared/client-connections.js';
import type { Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { Tracing } from '../ops/trace/tracing.js';
import type { CallParts } from './call-parts.js';
import type { LiveConfig } from './live-config.js';

export interface GrpcContext {
  readonly live: LiveConfig;
  readonly chains: ChainSet;
  readonly calls: CallParts;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly tracing: Tracing;
  readonly draining: () => boolean;
}

export async function startGrpc(ctx: GrpcContext): Promise<GrpcListener> {
  const { limits, trustedProxies } = ctx.live;
  const relay = new GrpcRelay({
    identifier: ctx.calls.identifier,
    path: ctx.calls.path,
    limits: () => {
      const l = limits();
      return {
        maxBodyBytes: l.maxBodyBytes,
        maxResponseBytes: l.maxResponseBytes,
        requestTimeoutMs: l.requestTimeoutMs,
        requestReadTimeoutMs: l.headersTimeoutMs,
      };
    },
  });
  const listener = new GrpcListener({
    endpoints: () => ctx.chains.grpc(),
    relay,
    metrics: ctx.metrics,
    logger: ctx.logger,
    draining: ctx.draining,
    limits,
    perClient: new ClientConnections(() => limits().maxConnectionsPerClient),
    trustedProxies,
    tracing: ctx.tracing,
    usage: ctx.calls.usage,
  });
  const sc = limits();
  await listener.listen(sc.grpcHost, sc.grpcPort);
  return listener;
}
