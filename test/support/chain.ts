// Real chain runtimes for unit tests of the call path: a chain's config read by the real
// config reader (so defaults are the shipped ones), a runtime made by
// createChainRuntime, keys and tiers as the key store would hold them, a real memory
// limiter (its admissions recorded), and a scripted plugin whose routing of each method
// the test states as data, speaking JSON-RPC 2.0 or (`dialect: '1.0'`) 1.0 as Bitcoin
// Core does.

import { tierConfig } from './tiers.js';
import { ALL_PERMITTED, type KeyPermissions, type KeyRecord } from '../../src/auth/key-store.js';
import { MemoryCacheStore } from '../../src/cache/cache-store.js';
import { closeChainRuntime, createChainRuntime, runtimeOptions, type ChainRuntime } from '../../src/chain/runtime.js';
import { parseConfig } from '../../src/config/load.js';
import type { ChainConfig, ServerConfig, TierConfig } from '../../src/config/types.js';
import { CallAccess } from '../../src/exec/access.js';
import type { Principal } from '../../src/exec/principal.js';
import { CallPath, type OwnCalls, type RunResult } from '../../src/exec/call-path.js';
import { newOutcome, type RequestOutcome } from '../../src/exec/request-record.js';
import { silentLogger } from '../../src/ops/log.js';
import { Metrics } from '../../src/ops/metrics/metrics.js';
import type { Admission } from '../../src/quota/admission.js';
import { MemoryLimiter, type Limiter } from '../../src/quota/limiter.js';
import {
  definePlugin,
  jsonRpcVerdict,
  parseJsonRpcBody,
  type ChainPlugin,
  type JsonRpcCall,
  type JsonRpcCodec,
  type Routing,
} from '../../src/sdk/index.js';

export interface NodeSpec {
  readonly name: string;
  readonly url: string;
  readonly role: 'full' | 'archive';
  readonly weight?: number;
  readonly priority?: number;
}

/** A chain endpoint's config as the config reader makes it; `extra` is YAML under the chain (indented 4). */
export async function chainConfig(nodes: readonly NodeSpec[], extra = ''): Promise<ChainConfig> {
  const list = nodes
    .map((n) => `      - { name: ${n.name}, url: "${n.url}", role: ${n.role}, weight: ${n.weight ?? 1}, priority: ${n.priority ?? 0} }`)
    .join('\n');
  const text = `tiers: { t: {} }\nchains:\n  c:\n    plugin: evm\n    route: { path: /c }\n${extra}\n    nodes:\n${list}\n`;
  const config = await parseConfig(text, '/test.yaml', {});
  return config.chains.c as ChainConfig;
}

/** A tier that limits nothing and may read archive state. */
export function tier(over: Partial<TierConfig> = {}): TierConfig {
  return tierConfig({ name: 't', archive: true, wsConnections: 10, ...over });
}

let keys = 0;

export function keyRecord(permissions: Partial<KeyPermissions> = {}): KeyRecord {
  const id = `key-${++keys}`;
  return {
    id,
    hash: `hash-${id}`,
    prefix: 'nrk_test',
    account: 'acct',
    tier: 't',
    label: '',
    permissions: { ...ALL_PERMITTED, ...permissions },
    createdAt: '2026-01-01T00:00:00.000Z',
    lastUsedAt: undefined,
    revokedAt: undefined,
    expiresAt: undefined,
    rotatedAt: undefined,
    retired: [],
  };
}

/** The pruned-state words of the scripted plugin's nodes. */
export const PRUNED = /missing trie node/;

/**
 * A JSON-RPC family whose routing is stated per method by the test (any other method:
 * ordinary, cost 1, labelled by its name); answers judged as EVM nodes' are. `extra`
 * may give it the 1.0 dialect (`{ dialect: '1.0' }`), which its parser reads too.
 */
export function scriptedPlugin(
  routes: Readonly<Record<string, Partial<Routing>>> = {},
  extra: Pick<JsonRpcCodec<undefined>, 'fixedReplyIds' | 'subscriptions' | 'dialect' | 'state'> = {},
): ChainPlugin<undefined> {
  return definePlugin<undefined>({
    name: 'scripted',
    contract: 2,
    create(ctx) {
      const jsonrpc: JsonRpcCodec<undefined> = {
        parse: (text) => parseJsonRpcBody(text, ctx.limits, { dialect: extra.dialect }),
        judge: (_call, reply) => jsonRpcVerdict(reply, PRUNED),
        ...extra,
      };
      return {
        jsonrpc,
        http: { errorStyle: 'jsonrpc', parse: (req) => jsonrpc.parse(req.body.toString()) },
        passthrough: {
          judge: (_call, r) => (r.status === 429 ? 'throttled' : r.status >= 500 ? 'node_failure' : r.status >= 400 ? 'chain_error' : 'ok'),
          relayHeaders: ['x-node-height'],
        },
        classify: (call) => ({ archive: false, cost: 1, label: call.method, ...routes[call.method] }),
        probe: () => Promise.resolve({ height: 100 }),
      };
    },
  });
}

/** The shipped server limits, as the config reader makes them (a config needs a chain to be valid). */
export async function serverConfig(): Promise<ServerConfig> {
  const text = `tiers: { t: {} }\nchains:\n  c: { plugin: evm, route: { path: /c }, nodes: [{ name: n, url: "http://127.0.0.1:1", role: full }] }\n`;
  return (await parseConfig(text, '/test.yaml', {})).server;
}

export interface Bench {
  readonly rt: ChainRuntime;
  readonly metrics: Metrics;
  readonly limiter: MemoryLimiter;
  /** The cost of every admission asked of the limiter, in order. */
  readonly admits: number[];
  /** Every charge after a call (node work past what admission took), in order. */
  readonly charges: number[];
  /** Who may call what, on the bench's limiter and tiers (the tier of `principal()`). */
  readonly access: CallAccess;
  readonly path: CallPath;
  principal(t?: Partial<TierConfig>, permissions?: Partial<KeyPermissions>): Principal;
  /** JSON-RPC calls as the chain's own codec reads them. */
  calls(body: string): JsonRpcCall[];
  run(principal: Principal, body: string, own?: OwnCalls<JsonRpcCall, string>): Promise<RunResult<string> & { trace: RequestOutcome }>;
  close(): Promise<void>;
}

/** A chain runtime with the call path in front of it, as the gateway wires them. */
export async function bench(config: ChainConfig, plugin: ChainPlugin<undefined>): Promise<Bench> {
  const metrics = new Metrics();
  const caches = { memory: new MemoryCacheStore(1 << 20, 1 << 16), redis: undefined };
  const server = await serverConfig();
  const rt = createChainRuntime(config, plugin, metrics, silentLogger, runtimeOptions(server, caches));
  const limiter = await MemoryLimiter.open(undefined);
  const admits: number[] = [];
  const charges: number[] = [];
  const tiers: Record<string, TierConfig> = {};
  const recording: Limiter = {
    admit(keyId, t, cost, chain): Admission | Promise<Admission> {
      admits.push(cost);
      return limiter.admit(keyId, t, cost, chain);
    },
    charge(payer, t, cost, chain): void {
      charges.push(cost);
      limiter.charge(payer, t, cost, chain);
    },
    countErrors: (keyId, chain, errors) => limiter.countErrors(keyId, chain, errors),
    chargeRefused: (payer, t, cost, chain, as) => limiter.chargeRefused(payer, t, cost, chain, as),
    throttle: (bucket, perHour, burst) => limiter.throttle(bucket, perHour, burst),
    usage: (keyId, since) => limiter.usage(keyId, since),
    close: () => limiter.close(),
  };
  const access = new CallAccess({ limiter: recording, tiers: () => tiers, metrics });
  const path = new CallPath(access, metrics);
  const calls = (body: string): JsonRpcCall[] =>
    (rt.handler.jsonrpc?.parse(body).items ?? []).filter((i): i is JsonRpcCall => i.kind === 'jsonrpc');
  return {
    rt,
    metrics,
    limiter,
    admits,
    charges,
    access,
    path,
    principal(t = {}, permissions = {}) {
      const tierConfig = tier(t);
      tiers.t = tierConfig;
      return { record: keyRecord(permissions), tier: tierConfig };
    },
    calls,
    async run(principal, body, own) {
      const exchange = rt.jsonrpc;
      if (exchange === undefined) throw new Error('the plugin has no JSON-RPC codec');
      const trace = newOutcome();
      const out = await path.run({
        chain: rt,
        principal,
        calls: calls(body),
        exchange,
        cache: exchange,
        own,
        deadline: Date.now() + 5_000,
        trace,
      });
      return { ...out, trace };
    },
    async close() {
      await closeChainRuntime(rt);
      await limiter.close();
    },
  };
}

/** A JSON-RPC 1.0 item as Bitcoin Core's clients send it; `id` is raw JSON text (undefined: none). */
export const legacyItem = (id: string | undefined, method: string, params: unknown = []): string =>
  `{"method":"${method}","params":${JSON.stringify(params)}${id === undefined ? '' : `,"id":${id}`}}`;

/** A JSON-RPC item; `id` is raw JSON text (undefined: a notification). */
export const item = (id: string | undefined, method: string, params?: unknown): string =>
  `{"jsonrpc":"2.0"${id === undefined ? '' : `,"id":${id}`},"method":"${method}"${params === undefined ? '' : `,"params":${JSON.stringify(params)}`}}`;
