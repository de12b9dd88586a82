// A whole stack for integration tests: devnet nodes on ephemeral loopback ports, a
// config file written for them, a real gateway (traffic + admin listeners) and keys
// created in its real record (a SQLite file in the stack's temp folder). Everything is closed by `close()`.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { startDevnet, type Devnet, type DevnetCredentials, type DevnetOptions } from '../../src/devnet/index.js';
import type { NodeFaults } from '../../src/devnet/types.js';
import { Gateway } from '../../src/app/gateway.js';
import { silentLogger, type Logger } from '../../src/ops/log.js';
import type { UsageHistory } from '../../src/quota/usage-history.js';

export interface NodeSpec {
  readonly name: string;
  /** Left out: the config gives none and the gateway detects it (a devnet node it starts is then a full one). */
  readonly role?: 'full' | 'archive';
  readonly weight?: number;
  readonly priority?: number;
  /** Reuse the devnet node of this name (same URL) instead of starting one. */
  readonly sameAs?: string;
  /** A provider's node: the devnet node requires these, and the node URL carries the base path and query. */
  readonly credentials?: DevnetCredentials;
  /** The node's `headers:` in config (values written as given, so they may use ${ENV}). */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ChainSpec {
  readonly name: string;
  /** The chain's plugin; its devnet family simulates the nodes. */
  readonly plugin: string;
  /** Route path; gRPC chains (sdk-grpc) have none: they are routed by host, or are the default. */
  readonly path?: string;
  readonly host?: string;
  readonly network?: string;
  readonly archiveOnly?: boolean;
  /** Response cache of the endpoint; off unless a test is about caching. */
  readonly cache?: 'memory' | 'redis' | 'off';
  /** Extra YAML lines under the chain (already indented by 4). */
  readonly extra?: string;
  readonly nodes: readonly NodeSpec[];
}

/** One evm endpoint at /l1 with a full node and an archive node: the smallest pool with both roles. */
export const L1_FULL_AND_ARCHIVE: ChainSpec = {
  name: 'l1',
  plugin: 'evm',
  path: '/l1',
  nodes: [
    { name: 'l1-full-1', role: 'full' },
    { name: 'l1-archive-1', role: 'archive' },
  ],
};

export const DEFAULT_CHAINS: readonly ChainSpec[] = [
  {
    name: 'l1',
    plugin: 'evm',
    path: '/l1',
    nodes: [
      { name: 'l1-full-1', role: 'full' },
      { name: 'l1-full-2', role: 'full' },
      { name: 'l1-archive-1', role: 'archive' },
    ],
  },
  {
    name: 'l2-rollup',
    plugin: 'evm',
    path: '/l2-rollup',
    nodes: [
      { name: 'l2-full-1', role: 'full' },
      { name: 'l2-archive-1', role: 'archive' },
    ],
  },
  {
    name: 'objectx',
    plugin: 'objectx',
    path: '/objectx',
    nodes: [
      { name: 'objx-full-1', role: 'full' },
      { name: 'objx-archive-1', role: 'archive' },
    ],
  },
  {
    name: 'hub-rpc',
    plugin: 'sdk-rpc',
    path: '/hub/rpc',
    network: 'hub',
    nodes: [
      { name: 'hub-rpc-full-1', role: 'full' },
      { name: 'hub-rpc-archive-1', role: 'archive' },
    ],
  },
  {
    name: 'hub-rest',
    plugin: 'sdk-rest',
    path: '/hub/rest',
    network: 'hub',
    nodes: [
      { name: 'hub-rest-full-1', role: 'full' },
      { name: 'hub-rest-archive-1', role: 'archive' },
    ],
  },
  {
    name: 'hub-rest-archive',
    plugin: 'sdk-rest',
    path: '/hub/rest-archive',
    network: 'hub',
    archiveOnly: true,
    nodes: [{ name: 'hub-rest-archive-only', role: 'archive', sameAs: 'hub-rest-archive-1' }],
  },
];

/** The hub's gRPC endpoint: the default gRPC chain (no route host), two full nodes and an archive node. */
export const HUB_GRPC: ChainSpec = {
  name: 'hub-grpc',
  plugin: 'sdk-grpc',
  network: 'hub',
  nodes: [
    { name: 'hub-grpc-full-1', role: 'full' },
    { name: 'hub-grpc-full-2', role: 'full' },
    { name: 'hub-grpc-archive-1', role: 'archive' },
  ],
};

export const DEFAULT_TIERS = `
  free: { rate: 10, burst: 20, daily: 100000, monthly: 1000000, maxBatch: 10, archive: false, wsConnections: 2 }
  growth: { rate: 100, burst: 200, maxBatch: 100, archive: true }
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 1000, archive: true }
`;

/** The `store:` mapping of a SQLite record at `path` with this hot state (flow YAML of `store.hot`; memory by default). */
export function storeYaml(path: string, hot = '{ kind: memory }'): string {
  return `{ record: { kind: sqlite, path: "${path}" }, hot: ${hot} }`;
}

/** The Redis hot state on the test Redis under `prefix`, with more settings (flow YAML members). */
export function redisHot(prefix: string, extra = ''): string {
  return `{ kind: redis, url: "redis://127.0.0.1:6379", prefix: "${prefix}"${extra === '' ? '' : `, ${extra}`} }`;
}

export interface StackOptions {
  readonly chains?: readonly ChainSpec[];
  readonly tiers?: string;
  readonly devnet?: DevnetOptions;
  /** Health probe interval; long by default so probes do not clutter node records. */
  readonly probeIntervalMs?: number;
  readonly now?: () => number;
  /** Extra top-level YAML. */
  readonly extraYaml?: string;
  readonly adminToken?: string;
  /** Nodes that are already running (real nodes): name → URL; the devnet skips them. */
  readonly externalNodes?: ReadonlyMap<string, string>;
  /** Where the gateway logs (silent by default). */
  readonly logger?: Logger;
  /** Extra `server:` settings (flow YAML members, e.g. "maxResponseBytes: 65536"). */
  readonly serverYaml?: string;
  /** The `store:` mapping (flow YAML); a SQLite record in the temp dir with the memory hot state by default (storeYaml.ts). */
  readonly storeYaml?: string;
  /** The `store.hot:` mapping (flow YAML) beside the stack's SQLite record, e.g. redisHot(prefix); memory by default. */
  readonly hotYaml?: string;
  /** The `dashboard:` mapping (flow YAML), e.g. "{ enabled: true }"; absent = off. */
  readonly dashboardYaml?: string;
  /** Extra `keys:` settings (flow YAML members, e.g. "rotationGraceSeconds: 600"). */
  readonly keysYaml?: string;
  /** The `log:` mapping (flow YAML); when given and no logger is, the gateway makes its own logger from it. */
  readonly logYaml?: string;
  /** Faults of devnet nodes from before the gateway starts (a node on another chain from the first look). */
  readonly faults?: Readonly<Record<string, NodeFaults>>;
  /** Where usage history is written (every instance of the stack writes to it). */
  readonly history?: UsageHistory;
}

export interface Stack {
  readonly devnet: Devnet;
  readonly gateway: Gateway;
  readonly dir: string;
  readonly configFile: string;
  /** An enterprise key (unlimited, archive). */
  readonly key: string;
  url(path: string): string;
  admin(path: string): string;
  /** A URL on the listener serving the dashboard, e.g. dashboard('/dashboard/api/keys'). */
  dashboard(path: string): string;
  createKey(tier: string, extra?: Record<string, unknown>): Promise<{ id: string; value: string }>;
  /** Another gateway instance on the same config (scale-out tests); closed with the stack. */
  startAnother(): Promise<Gateway>;
  close(): Promise<void>;
}

/** The base path and query a provider's node URL carries (what its devnet node requires). */
function credentialsPart(c: DevnetCredentials | undefined): string {
  if (c === undefined) return '';
  const query = c.query === undefined ? '' : `?${new URLSearchParams(c.query).toString()}`;
  return `${c.basePath ?? ''}${query}`;
}

export function configYaml(
  chains: readonly ChainSpec[],
  urls: ReadonlyMap<string, string>,
  opts: {
    tiers: string;
    storeYaml: string;
    probeIntervalMs: number;
    extraYaml?: string;
    adminToken?: string;
    serverYaml?: string;
    dashboardYaml?: string;
    keysYaml?: string;
    logYaml?: string;
  },
): string {
  const chainYaml = chains
    .map((c) => {
      const nodes = c.nodes
        .map((n) => {
          const url = urls.get(n.sameAs ?? n.name);
          if (url === undefined) throw new Error(`no devnet node for ${n.sameAs ?? n.name}`);
          const role = n.role === undefined ? '' : `, role: ${n.role}`;
          const headers =
            n.headers === undefined
              ? ''
              : `, headers: { ${Object.entries(n.headers)
                  .map(([k, v]) => `${k}: "${v}"`)
                  .join(', ')} }`;
          return `      - { name: ${n.name}, url: "${url}${credentialsPart(n.credentials)}"${role}, weight: ${n.weight ?? 1}, priority: ${n.priority ?? 0}${headers} }`;
        })
        .join('\n');
      return [
        `  ${c.name}:`,
        `    plugin: ${c.plugin}`,
        `    network: ${c.network ?? c.name}`,
        c.path === undefined && c.host === undefined
          ? ''
          : `    route: { ${[c.path === undefined ? '' : `path: ${c.path}`, c.host === undefined ? '' : `host: ${c.host}`].filter((r) => r !== '').join(', ')} }`,
        `    archiveOnly: ${c.archiveOnly === true}`,
        `    cache: ${c.cache ?? 'off'}`,
        c.extra?.includes('    health:') === true ? '' : `    health: { intervalMs: ${opts.probeIntervalMs}, timeoutMs: 500 }`,
        // Tests count which node got each call: on a loaded machine a hedge would add one.
        // The tests of hedging ask for it.
        c.extra?.includes('    hedge:') === true ? '' : '    hedge: { perSecond: 0 }',
        c.extra ?? '',
        `    nodes:`,
        nodes,
      ]
        .filter((l) => l !== '')
        .join('\n');
    })
    .join('\n');
  return [
    // Idle connections close at once when a test's gateway stops (the shutdown tests set their own).
    `server: { host: 127.0.0.1, port: 0, adminHost: 127.0.0.1, adminPort: 0, grpcPort: 0${opts.serverYaml?.includes('shutdownIdleMs') === true ? '' : ', shutdownIdleMs: 0'}${opts.serverYaml === undefined ? '' : `, ${opts.serverYaml}`} }`,
    `log: ${opts.logYaml ?? '{ level: silent }'}`,
    opts.adminToken === undefined ? '' : `admin: { token: "${opts.adminToken}" }`,
    opts.dashboardYaml === undefined ? '' : `dashboard: ${opts.dashboardYaml}`,
    `store: ${opts.storeYaml}`,
    `keys: { ${opts.keysYaml?.includes('cacheTtlMs') === true ? '' : 'cacheTtlMs: 30000, '}negativeTtlMs: 5000${opts.keysYaml === undefined ? '' : `, ${opts.keysYaml}`} }`,
    `tiers:${opts.tiers}`,
    opts.extraYaml ?? '',
    'chains:',
    chainYaml,
  ]
    .filter((l) => l !== '')
    .join('\n')
    .concat('\n');
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const chains = options.chains ?? DEFAULT_CHAINS;
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-test-'));
  const specs = chains.flatMap((c) =>
    c.nodes
      .filter((n) => n.sameAs === undefined && options.externalNodes?.has(n.name) !== true)
      .map((n) => ({ network: c.network ?? c.name, family: c.plugin, name: n.name, role: n.role ?? 'full', credentials: n.credentials })),
  );
  const devnet = await startDevnet(specs, { blockTimeMs: 0, noControl: true, ...options.devnet });
  for (const [name, f] of Object.entries(options.faults ?? {})) await devnet.node(name).setFaults(f);
  const urls = new Map([...devnet.nodes.values()].map((n) => [n.name, n.url]));
  for (const [name, url] of options.externalNodes ?? []) urls.set(name, url);
  const configFile = join(dir, 'gateway.yaml');
  const recordPath = join(dir, 'noderouter.db');
  await writeFile(
    configFile,
    configYaml(chains, urls, {
      tiers: options.tiers ?? DEFAULT_TIERS,
      storeYaml: options.storeYaml ?? storeYaml(recordPath, options.hotYaml),
      probeIntervalMs: options.probeIntervalMs ?? 60_000,
      extraYaml: options.extraYaml,
      adminToken: options.adminToken,
      serverYaml: options.serverYaml,
      dashboardYaml: options.dashboardYaml,
      keysYaml: options.keysYaml,
      logYaml: options.logYaml,
    }),
  );
  const config = await loadConfig(configFile);
  const logger = options.logger ?? (options.logYaml === undefined ? silentLogger : undefined);
  const gateway = await Gateway.start(config, { logger, now: options.now, history: options.history });
  // Each key its own account unless a test says otherwise: limits hold per account too.
  let accounts = 0;
  const createKey = async (tier: string, extra: Record<string, unknown> = {}): Promise<{ id: string; value: string }> => {
    const { record, value } = await gateway.keys.create({ account: `acct-test-${++accounts}`, tier, ...extra });
    return { id: record.id, value };
  };
  const { value: key } = await createKey('enterprise');
  const others: Gateway[] = [];
  return {
    devnet,
    gateway,
    dir,
    configFile,
    key,
    url: (path) => `${gateway.url}${path}`,
    admin: (path) => `${gateway.adminUrl}${path}`,
    dashboard: (path) => `${gateway.dashboardListenUrl}${path}`,
    createKey,
    startAnother: async () => {
      const g = await Gateway.start(config, { logger: silentLogger, now: options.now, history: options.history });
      others.push(g);
      return g;
    },
    close: async () => {
      for (const g of others) await g.close();
      await gateway.close();
      await devnet.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** POST a JSON-RPC body (object, array or raw text) with optional headers. */
export async function rpc(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const res = await fetch(url, { headers });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Calls a devnet node received that were not health probes (probes carry no body id of ours). */
export function clientCalls(devnet: Devnet, node: string, marker: string): number {
  return devnet.node(node).received.filter((r) => r.body.includes(marker) || r.path.includes(marker)).length;
}
