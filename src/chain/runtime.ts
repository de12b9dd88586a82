// Everything one chain endpoint needs at run time, built from its config and plugin:
// the plugin's handler, the node pool, its health prober, the exchanges of the kinds of
// call its codecs make, its response cache and WebSocket subscription hub, wired to
// metrics and logs. Built whole before it serves; closed whole when replaced.

import type { ChainConfig, GatewayConfig, ServerConfig } from '../config/types.js';
import type { Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { ChainHandler, ChainPlugin, JsonLimits } from '../plugin/contract.js';
import { DEFAULT_UPSTREAM_OPTIONS } from '../pool/upstream.js';
import type { CacheStore } from '../cache/cache-store.js';
import { ResponseCache } from '../cache/response-cache.js';
import type { ForwardObserver } from '../exec/exchanges/exchange.js';
import { chainRpc, JsonRpcExchange, type AnswerChecks, type RpcWriter } from '../exec/exchanges/jsonrpc-exchange.js';
import { Hedger } from '../exec/attempts/hedge.js';
import { ChainConsensus } from '../exec/policies/consensus.js';
import { composeStages, type ChainStages } from '../exec/stages/policy-stages.js';
import { DisputeLog } from '../exec/policies/disputes.js';
import { Accepted, NodeStates } from '../exec/policies/node-state.js';
import { PassthroughExchange } from '../exec/exchanges/passthrough-exchange.js';
import { HealthProber } from '../pool/health.js';
import { NodePool, type PoolEvents } from '../pool/pool.js';
import { SubscriptionHub } from '../subscriptions/hub.js';

/** What chain runtimes share: server limits (from `server:` in config) and cache stores. */
export interface RuntimeOptions {
  readonly json: JsonLimits;
  readonly maxResponseBytes: number;
  readonly caches: { readonly memory: CacheStore; readonly redis: CacheStore | undefined };
  /** False in a cluster's worker: its pools take the health the primary's probers decide. */
  readonly probes: boolean;
  /** Told after every probe round (a cluster's primary sends the pool's health to the workers). */
  readonly judged?: (pool: NodePool) => void;
  /** Disagreements between nodes on calls checked by agreement, for every chain (GET /health/disputes). */
  readonly disputes: DisputeLog;
}

/** `maxBatch`: the largest batch any tier allows (the JSON-RPC parser stops counting past it). */
export function runtimeOptions(
  server: ServerConfig,
  caches: RuntimeOptions['caches'],
  maxBatch = Infinity,
  probing: Pick<RuntimeOptions, 'probes' | 'judged'> = { probes: true },
  disputes: DisputeLog = new DisputeLog(),
): RuntimeOptions {
  return {
    disputes,
    json: { maxDepth: server.maxJsonDepth, maxMethodLength: server.maxMethodLength, maxBatch },
    maxResponseBytes: server.maxResponseBytes,
    caches,
    ...probing,
  };
}

export interface ChainRuntime {
  readonly name: string;
  readonly config: ChainConfig;
  readonly handler: ChainHandler;
  readonly pool: NodePool;
  readonly prober: HealthProber;
  /** Upstream metrics of every attempt on this endpoint's nodes. */
  readonly observer: ForwardObserver;
  /** JSON-RPC items to nodes; undefined when the plugin has no JSON-RPC codec. */
  readonly jsonrpc: JsonRpcExchange | undefined;
  /** The JSON-RPC dialect of the plugin's codec: every JSON-RPC answer the gateway writes itself on this endpoint. */
  readonly rpc: RpcWriter;
  /** Passthrough requests to nodes; undefined when the plugin has no passthrough codec. */
  readonly passthrough: PassthroughExchange | undefined;
  /** Undefined when the endpoint's cache is off. */
  readonly cache: ResponseCache | undefined;
  /** Node subscriptions of WebSocket clients; undefined when the plugin has no pub/sub. */
  readonly subscriptions: SubscriptionHub | undefined;
  /** Hedged reads of this endpoint. */
  readonly hedger: Hedger;
  /** Node state (filters) of this endpoint's clients, by the gateway's ids. */
  readonly states: NodeStates;
  /** Nodes that accepted recent submits, by submit id: reads of them go there first. */
  readonly accepted: Accepted;
  /** N-of-M agreement on the methods the chain lists; undefined when off. */
  readonly consensus: ChainConsensus | undefined;
  /** The policy stages this chain's calls may take, composed from its plugin and config. */
  readonly stages: ChainStages;
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
  const handler = plugin.create({ chain: config.name, options: config.options, limits: limits.json, verify: config.verify });
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
    ejected(p, node) {
      metrics.ejections.inc({ chain: p.chain, node: node.name });
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
  const upstream = {
    ...DEFAULT_UPSTREAM_OPTIONS,
    maxResponseBytes: limits.maxResponseBytes,
    relayHeaders: handler.passthrough?.relayHeaders ?? [],
  };
  const pool = new NodePool(config, events, upstream, adopt);
  if (adopt !== undefined) pool.refreshView();
  const store = config.cache === 'memory' ? limits.caches.memory : config.cache === 'redis' ? limits.caches.redis : undefined;
  const cache =
    store === undefined
      ? undefined
      : new ResponseCache(config.name, store, {
          lookup: (chain, hit) => metrics.cacheLookups.add(1, chain, hit ? 'hit' : 'miss'),
          coalesced: (chain) => metrics.coalesced.inc({ chain }),
        });
  const observer: ForwardObserver = {
    upstream(node, outcome, seconds) {
      metrics.upstream.add(1, config.name, node.name, outcome);
      metrics.upstreamDuration.record(seconds, config.name, node.name);
    },
    retry(reason) {
      metrics.retries.inc({ chain: config.name, reason });
    },
  };
  const jsonrpc = handler.jsonrpc;
  const subscriptions =
    jsonrpc?.subscriptions === undefined
      ? undefined
      : new SubscriptionHub(pool, jsonrpc, jsonrpc.subscriptions, {
          timeoutMs: config.attemptTimeoutMs,
          maxMessageBytes: limits.maxResponseBytes,
          observer,
          events: {
            moved: (result) => metrics.subscriptionMoves.inc({ chain: config.name, result }),
            delivered: (count) => metrics.wsNotifications.inc({ chain: config.name }, count),
          },
        });
  const checks: AnswerChecks = {
    mode: config.verify,
    checked(node, method, result) {
      metrics.answerChecks.inc({ chain: config.name, node: node.name, method, result });
    },
  };
  const prober = new HealthProber(pool, handler, {
    checked: (_p, node, result) => checks.checked(node, 'probe', result),
    probed(p, node, ok) {
      metrics.probes.inc({ chain: p.chain, node: node.name, result: ok ? 'ok' : 'failed' });
    },
    mismatch(p, node, m) {
      logger.warn('node disagrees with its chain endpoint', {
        event: 'node_mismatch',
        chain: p.chain,
        node: node.name,
        kind: m.kind,
        said: m.said,
        detail: m.text,
      });
    },
    detected(p, node) {
      logger.info('node role detected', { event: 'node_role', chain: p.chain, node: node.name, role: node.role });
    },
    judged(p) {
      // Only heads the round believed (nodes in rotation) can tell the cache of a reorg.
      if (cache !== undefined) for (const n of p.nodes) if (n.inRotation) cache.observeHead(n.head, n.headHash);
      // Subscriptions leave nodes that lag or left rotation as soon as a round says so.
      subscriptions?.check();
      limits.judged?.(p);
    },
  });
  if (config.consensus !== undefined && handler.agreement === undefined) {
    logger.warn('consensus is configured but the plugin cannot compare answers: no call is checked', {
      event: 'consensus',
      chain: config.name,
      plugin: config.plugin,
    });
  }
  const consensus =
    config.consensus === undefined || handler.agreement === undefined
      ? undefined
      : new ChainConsensus(config.name, config.consensus, handler.agreement, pool, limits.disputes);
  return {
    name: config.name,
    config,
    handler,
    consensus,
    stages: composeStages(handler, consensus),
    pool,
    prober,
    observer,
    jsonrpc: jsonrpc === undefined ? undefined : new JsonRpcExchange(jsonrpc, () => pool.view, checks),
    rpc: chainRpc(jsonrpc),
    passthrough: handler.passthrough === undefined ? undefined : new PassthroughExchange(handler.passthrough),
    cache,
    subscriptions,
    hedger: new Hedger(config.hedge, {
      sent: () => metrics.hedges.inc({ chain: config.name, result: 'sent' }),
      won: () => metrics.hedges.inc({ chain: config.name, result: 'won' }),
    }),
    states: previous?.states ?? new NodeStates(jsonrpc?.state),
    accepted: previous?.accepted ?? new Accepted(),
    load: { inFlight: 0 },
  };
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

/** The largest batch any tier of the config allows. */
export function largestBatch(config: GatewayConfig): number {
  let max = 1;
  for (const t of Object.values(config.tiers)) max = Math.max(max, t.maxBatch);
  return max;
}
