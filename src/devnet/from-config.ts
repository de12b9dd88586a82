// The devnet that stands behind a config: one simulated node per distinct node URL
// of every chain endpoint whose plugin has a devnet family, on the URL's loopback
// port (or on a host named in devnet.hosts, a devnet in a container of its own), sharing one simulated chain per network (hub's RPC and REST nodes see the
// same blocks). A node URL with a path or query, or a node with headers, makes a
// simulated provider node that requires exactly those. Used by `npm start` (serve --devnet) and `noderouter devnet`.

import type { GatewayConfig } from '../config/types.js';
import { hasDevnetFamily, startDevnet, type Devnet, type DevnetCredentials, type DevnetNodeSpec } from './index.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** A node URL's path and query and the node's headers: what its simulated node requires, as a provider's would. */
function credentialsOf(u: URL, headers: Readonly<Record<string, string>>): DevnetCredentials | undefined {
  const basePath = u.pathname === '/' ? undefined : u.pathname;
  const query = u.search === '' ? undefined : Object.fromEntries(new URLSearchParams(u.search));
  if (basePath === undefined && query === undefined && Object.keys(headers).length === 0) return undefined;
  return { headers, basePath, query };
}

export async function devnetSpecs(config: GatewayConfig): Promise<{ specs: DevnetNodeSpec[]; skipped: string[] }> {
  const byUrl = new Map<string, DevnetNodeSpec>();
  const skipped: string[] = [];
  const families = new Set<string>();
  const hosts = new Set([...LOOPBACK, ...config.devnet.hosts.map((h) => h.toLowerCase())]);
  const listen = config.devnet.listen;
  for (const plugin of new Set(Object.values(config.chains).map((c) => c.plugin))) if (await hasDevnetFamily(plugin)) families.add(plugin);
  for (const chain of Object.values(config.chains)) {
    for (const node of chain.nodes) {
      const u = new URL(node.url);
      if (!families.has(chain.plugin) || !hosts.has(u.hostname) || u.port === '') {
        skipped.push(`${chain.name}/${node.name}`);
        continue;
      }
      const existing = byUrl.get(u.origin);
      if (existing !== undefined) {
        // One server per URL; an archive role wins so every endpoint sharing it is served.
        if (node.role === 'archive' && existing.role !== 'archive') byUrl.set(u.origin, { ...existing, role: 'archive' });
        continue;
      }
      // Node names are unique per chain only; the devnet needs them unique overall.
      const taken = [...byUrl.values()].some((s) => s.name === node.name);
      byUrl.set(u.origin, {
        network: chain.network,
        family: chain.plugin,
        name: taken ? `${chain.name}-${node.name}` : node.name,
        // A node left to describe itself is simulated as a full node.
        role: node.role ?? 'full',
        host: listen ?? (LOOPBACK.has(u.hostname) ? loopbackAddress(u.hostname) : '127.0.0.1'),
        port: Number(u.port),
        credentials: credentialsOf(u, node.headers),
      });
    }
  }
  return { specs: [...byUrl.values()], skipped };
}

function loopbackAddress(hostname: string): string {
  return hostname === 'localhost' ? '127.0.0.1' : hostname.replace(/^\[|\]$/g, '');
}

export async function startConfigDevnet(config: GatewayConfig): Promise<Devnet> {
  const { specs } = await devnetSpecs(config);
  return startDevnet(specs, {
    blockTimeMs: config.devnet.blockTimeMs,
    fullRetention: config.devnet.fullRetention,
    startHeight: config.devnet.startHeight,
    controlPort: config.devnet.controlPort,
    controlHost: config.devnet.listen,
    filterTimeoutMs: config.devnet.filterTimeoutMs,
    maxLogsRange: config.devnet.maxLogsRange === 0 ? undefined : config.devnet.maxLogsRange,
  });
}
