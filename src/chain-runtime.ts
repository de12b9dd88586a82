// Everything one chain endpoint needs at run time, built from its config and plugin:
// the plugin's handler, the node pool, its health prober and its forwarder, wired to
// metrics and logs. Built whole before it serves; closed whole when replaced.

import type { ChainConfig, ServerConfig } from './config/types.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics/metrics.js';
import type { ChainHandler, ChainPlugin, JsonLimits } from './plugin.js';
import { DEFAULT_UPSTREAM_OPTIONS } from './pool/upstream.js';
import type { CacheStore } from './cache/cache-store.js';
import { ResponseCache } from './cache/response-cache.js';
import { Forwarder } from './pool/forwarder.js';
import { HealthProber } from './pool/health.js';
import { NodePool, type PoolEvents } from './pool/pool.js';
import { SubscriptionHub } from './ws/subscription-hub.js';

/** What chain runtimes share: server limits (from `server:` in config) and cache stores. */
export interface RuntimeOptions {
  readonly json: JsonLimits;
  readonly maxResponseBytes: number;
  /** The clock of key validity and backoffs (tests move it). */
  readonly now: () => number;
  readonly caches: { readonly memory: CacheStore; readonly redis: CacheStore | undefined };
}

export function runtimeOptions(server: ServerConfig, caches: RuntimeOptions['caches'], now: () => number = Date.now): RuntimeOptions {
  return {
    json: { maxDepth: server.maxJsonDepth, maxMethodLength: server.maxMethodLength },
    maxResponseBytes: server.maxResponseBytes,
    now,
    caches,
  };
}

export interface ChainRuntime {
  readonly name: string;
  readonly config: ChainConfig;
  readonly handler: ChainHandler;
  readonly pool: NodePool;
  readonly prober: HealthProber;
  readonly forwarder: Forwarder;
  /** Undefined when the endpoint's cache is off. */
  readonly cache: ResponseCache | undefined;
  /** Node subscriptions of WebSocket clients; undefined when the plugin serves no WebSocket. */
  readonly subscriptions: SubscriptionHub | undefined;
  /** Requests being answered right now (the in-flight gauge reads it). */
  readonly load: { inFlight: number };
}

/** Same nodes and breakers: a reload may keep the live nodes with their state. */
export function sameNodes(a: ChainConfig, b: ChainConfig): boolean {
  return JSON.stringify([a.nodes, a.breaker]) === JSON.stringify([b.nodes, b.breaker]);
}

export function createChainRuntime(
  config: ChainConfig,
  plugin: ChainPlugin,
  metrics: Metrics,
  logger: Logger,
  limits: RuntimeOptions,
  previous?: ChainRuntime,
): ChainRuntime {
  const handler = plugin.create({ chain: config.name, options: config.options, limits: limits.json });
  if (config.transport === 'grpc' && (handler.parseGrpc === undefined || handler.judgeGrpc === undefined)) {
    throw new Error(`plugin "${config.plugin}" declares transport "grpc" but its handler lacks parseGrpc or judgeGrpc`);
  }
  const adopt = previous !== undefined && sameNodes(previous.config, config) ? previous.pool.nodes : undefined;
  const events: PoolEvents = {
    rotation(p, node, inRotation, reason) {
      metrics.transitions.inc({ chain: p.chain, node: node.name, to: inRotation ? 'in' : 'out' });
      logger[inRotation ? 'info' : 'warn'](inRotation ? 'node back in rotation' : 'node out of rotation', {
        event: 'node_rotation',
        chain: p.chain,
        node: node.name,
        inRotation,
        reason,
        head: node.head,
        lag: node.lag,
      });
    },
    breaker(p, node, state) {
      metrics.breakerTransitions.inc({ chain: p.chain, node: node.name, state });
      logger[state === 'open' ? 'warn' : 'info']('circuit breaker changed', {
        event: 'breaker',
        chain: p.chain,
        node: node.name,
        state,
      });
    },
  };
  const pool = new NodePool(config, events, { ...DEFAULT_UPSTREAM_OPTIONS, maxResponseBytes: limits.maxResponseBytes }, adopt);
  if (adopt !== undefined) pool.refreshView();
  const store = config.cache === 'memory' ? limits.caches.memory : config.cache === 'redis' ? limits.caches.redis : undefined;
  const cache =
    store === undefined
      ? undefined
      : new ResponseCache(config.name, store, {
          lookup: (chain, hit) => metrics.cacheLookups.add(1, chain, hit ? 'hit' : 'miss'),
          coalesced: (chain) => metrics.coalesced.inc({ chain }),
        });
  const subscriptions =
    handler.websocket === undefined
      ? undefined
      : new SubscriptionHub(
          pool,
          handler,
          {
            timeoutMs: config.attemptTimeoutMs,
            maxMessageBytes: limits.maxResponseBytes,
            events: {
              moved: (result) => metrics.subscriptionMoves.inc({ chain: config.name, result }),
              delivered: (count) => metrics.wsNotifications.inc({ chain: config.name }, count),
            },
          },
          limits.now,
        );
  const prober = new HealthProber(pool, handler, {
    probed(p, node, ok) {
      metrics.probes.inc({ chain: p.chain, node: node.name, result: ok ? 'ok' : 'failed' });
      if (ok) cache?.observeHead(node.head, node.headHash);
    },
    // Subscriptions leave nodes that lag or left rotation as soon as a round says so.
    judged: () => subscriptions?.check(),
  });
  const forwarder = new Forwarder(pool, handler, {
    upstream(p, node, outcome, seconds) {
      metrics.upstream.add(1, p.chain, node.name, outcome);
      metrics.upstreamDuration.record(seconds, p.chain, node.name);
    },
    retry(p, reason) {
      metrics.retries.inc({ chain: p.chain, reason });
    },
  });
  return { name: config.name, config, handler, pool, prober, forwarder, cache, subscriptions, load: { inFlight: 0 } };
}

/**
 * Stop probing; hand the WebSocket subscriptions to the successor (or let their
 * clients go); close the nodes unless the successor adopted them.
 */
export async function closeChainRuntime(rt: ChainRuntime, successor?: ChainRuntime): Promise<void> {
  rt.prober.stop();
  if (rt.subscriptions !== undefined) {
    if (successor?.subscriptions !== undefined) rt.subscriptions.handOver(successor.subscriptions);
    else rt.subscriptions.close(1001, successor === undefined ? 'Endpoint closed' : 'Endpoint no longer serves WebSocket');
  }
  if (successor !== undefined && successor.pool.nodes === rt.pool.nodes) return;
  await rt.pool.close();
}
