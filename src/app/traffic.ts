// The traffic listener: HTTP chain calls and WebSocket upgrades on one port, both
// reading the server limits through `limits()` when they use them.

import type { Server } from 'node:http';
import type { ChainSet } from './chain-set.js';
import { HttpCalls } from '../transports/http/http-calls.js';
import { createTrafficHandler } from '../transports/http/traffic-handler.js';
import { ClientConnections } from '../transports/shared/client-connections.js';
import { createTrafficServer, listen, type OpenConnections, urlOf } from '../transports/shared/listeners.js';
import type { Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { Services } from './services.js';
import type { Tracing } from '../ops/trace/tracing.js';
import { WsGateway } from '../transports/ws/ws-gateway.js';
import type { CallParts } from './call-parts.js';
import type { LiveConfig } from './live-config.js';

export interface TrafficContext {
  readonly live: LiveConfig;
  readonly chains: ChainSet;
  readonly calls: CallParts;
  readonly services: Services;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly tracing: Tracing;
  /** True once the listeners stopped accepting. */
  readonly draining: () => boolean;
  /** Where the listener's connections are kept for a drain. */
  readonly open: OpenConnections;
}

export interface TrafficListener {
  readonly server: Server;
  readonly ws: WsGateway;
  /** Its public URL (server.publicUrl, else the address it is bound to). */
  readonly url: string;
}

export async function startTraffic(ctx: TrafficContext): Promise<TrafficListener> {
  const { live, chains, calls, metrics, logger, tracing, draining } = ctx;
  const { limits, trustedProxies } = live;
  const onRequest = createTrafficHandler({
    endpoints: () => chains.http(),
    calls: new HttpCalls({ identifier: calls.identifier, path: calls.path, limits }),
    metrics,
    logger,
    draining,
    limits,
    trustedProxies,
    tracing,
    usage: calls.usage,
  });
  const server = createTrafficServer(limits, onRequest, new ClientConnections(() => limits().maxConnectionsPerClient), ctx.open);
  const ws = new WsGateway({
    endpoints: () => chains.http(),
    runtime: (name) => chains.byName(name),
    identifier: calls.identifier,
    keys: calls.keyCache,
    store: ctx.services.bundle.keys,
    slots: ctx.services.bundle.slots,
    access: calls.access,
    path: calls.path,
    metrics,
    logger,
    now: ctx.now,
    draining,
    limits,
    trustedProxies,
    tracing,
    usage: calls.usage,
  });
  ws.attach(server);
  const sc = limits();
  const bound = await listen(server, sc.host, sc.port);
  return { server, ws, url: sc.publicUrl ?? urlOf(sc.host, bound.port) };
}
