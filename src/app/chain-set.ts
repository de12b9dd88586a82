// The chain endpoints being served: their runtimes by name, and the route tables of
// the listeners that serve them (the traffic listener for endpoints whose plugin reads
// HTTP, the gRPC listener for those that read gRPC). A reload swaps the set at once:
// unchanged endpoints keep their runtime, changed ones get a new one (keeping their
// nodes' health and breakers when the nodes are the same), and a changed server limit
// that runtimes hold rebuilds them all.

import { createChainRuntime, type ChainRuntime, type RuntimeOptions } from '../chain/runtime.js';
import type { ChainConfig, GatewayConfig } from '../config/types.js';
import { isGrpcChain, type GrpcChain } from '../transports/grpc/relay.js';
import { isHttpChain, type HttpChain } from '../transports/http/http-calls.js';
import type { EndpointInfo } from '../admin/dashboard/account-api.js';
import { EndpointTable } from '../transports/shared/endpoints.js';
import type { Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import { loadedPlugin } from '../plugin/loader.js';

export type CacheStores = RuntimeOptions['caches'];

export function chainRuntimes(config: GatewayConfig, metrics: Metrics, logger: Logger, options: RuntimeOptions): ChainRuntime[] {
  return Object.values(config.chains).map((c) => createChainRuntime(c, loadedPlugin(c.plugin), metrics, logger, options));
}

/** Limits a chain runtime holds (its plugin's JSON limits, its nodes' answer cap): a change rebuilds every runtime. */
function runtimeLimitsChanged(a: RuntimeOptions, b: RuntimeOptions): boolean {
  return JSON.stringify(a.json) !== JSON.stringify(b.json) || a.maxResponseBytes !== b.maxResponseBytes;
}

function sameConfig(a: ChainConfig, b: ChainConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class ChainSet {
  private list: ChainRuntime[] = [];
  private names = new Map<string, ChainRuntime>();
  private httpTable = new EndpointTable<HttpChain>([]);
  private grpcTable = new EndpointTable<GrpcChain>([]);

  constructor(
    chains: ChainRuntime[],
    /** What the runtimes were built with. */
    private options: RuntimeOptions,
  ) {
    this.set(chains);
  }

  /** Disagreements between nodes, kept across reloads (GET /health/disputes). */
  get disputes(): RuntimeOptions['disputes'] {
    return this.options.disputes;
  }

  get all(): readonly ChainRuntime[] {
    return this.list;
  }

  byName(name: string): ChainRuntime | undefined {
    return this.names.get(name);
  }

  http(): EndpointTable<HttpChain> {
    return this.httpTable;
  }

  grpc(): EndpointTable<GrpcChain> {
    return this.grpcTable;
  }

  private set(chains: ChainRuntime[]): void {
    this.list = chains;
    this.names = new Map(chains.map((c) => [c.name, c]));
    const route = <T extends ChainRuntime>(rt: T): { path: string | undefined; host: string | undefined; target: T } => ({
      path: rt.config.route.path,
      host: rt.config.route.host,
      target: rt,
    });
    this.httpTable = new EndpointTable(chains.filter(isHttpChain).map(route));
    // gRPC calls are routed by :authority alone: their paths are /package.Service/Method.
    this.grpcTable = new EndpointTable(chains.filter(isGrpcChain).map((rt) => ({ ...route(rt), path: undefined })));
  }

  /**
   * Swap in the chain endpoints of `next`; returns the runtimes retired, each with its
   * successor (undefined when the endpoint is gone), for the caller to close.
   */
  replace(next: GatewayConfig, metrics: Metrics, logger: Logger, options: RuntimeOptions): Array<[ChainRuntime, ChainRuntime | undefined]> {
    const rebuildAll = runtimeLimitsChanged(this.options, options);
    this.options = options;
    const previous = this.names;
    const chains = Object.values(next.chains).map((c) => {
      const old = previous.get(c.name);
      if (old !== undefined && !rebuildAll && sameConfig(old.config, c)) return old;
      const rt = createChainRuntime(c, loadedPlugin(c.plugin), metrics, logger, options, rebuildAll ? undefined : old);
      if (options.probes) rt.prober.start();
      return rt;
    });
    this.set(chains);
    return [...previous.values()].filter((old) => !chains.includes(old)).map((old) => [old, this.names.get(old.name)]);
  }
}

/** Every chain endpoint's public URL, in config order: gRPC ones with the :authority to send, WebSocket-serving ones with their ws:// URL. */
export function endpointInfo(chains: readonly ChainRuntime[], trafficUrl: string, grpcAddress: string): EndpointInfo[] {
  return chains.map((c) => {
    const { host, path } = c.config.route;
    const base = { chain: c.name, plugin: c.config.plugin, archiveOnly: c.config.archiveOnly, sample: c.handler.sample };
    if (!isHttpChain(c)) {
      const url = `grpc://${grpcAddress}`;
      return host === undefined ? { ...base, url } : { ...base, url, authority: host };
    }
    const url = `${host !== undefined ? `http://${host}` : trafficUrl}${path ?? ''}`;
    return c.subscriptions === undefined ? { ...base, url } : { ...base, url, ws: url.replace(/^http/, 'ws') };
  });
}
