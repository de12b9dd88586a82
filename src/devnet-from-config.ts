// The devnet that stands behind a config: one simulated node per distinct node URL
// of every chain endpoint whose plugin is a built-in family, on the URL's loopback
// port, sharing one simulated chain per network (hub's RPC and REST nodes see the
// same blocks). Used by `npm start` (serve --devnet) and `noderouter devnet`.

import type { GatewayConfig } from './config/types.js';
import { startDevnet, type Devnet, type DevnetFamily, type DevnetNodeSpec } from './devnet/index.js';

const FAMILIES: ReadonlySet<string> = new Set<DevnetFamily>(['evm', 'objectx', 'sdk-rpc', 'sdk-rest', 'sdk-grpc']);
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function devnetSpecs(config: GatewayConfig): { specs: DevnetNodeSpec[]; skipped: string[] } {
  const byUrl = new Map<string, DevnetNodeSpec>();
  const skipped: string[] = [];
  for (const chain of Object.values(config.chains)) {
    for (const node of chain.nodes) {
      const u = new URL(node.url);
      if (!FAMILIES.has(chain.plugin) || !LOOPBACK.has(u.hostname) || u.port === '') {
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
        family: chain.plugin as DevnetFamily,
        name: taken ? `${chain.name}-${node.name}` : node.name,
        role: node.role,
        host: u.hostname === 'localhost' ? '127.0.0.1' : u.hostname.replace(/^\[|\]$/g, ''),
        port: Number(u.port),
      });
    }
  }
  return { specs: [...byUrl.values()], skipped };
}

export function startConfigDevnet(config: GatewayConfig): Promise<Devnet> {
  const { specs } = devnetSpecs(config);
  return startDevnet(specs, {
    blockTimeMs: config.devnet.blockTimeMs,
    fullRetention: config.devnet.fullRetention,
    startHeight: config.devnet.startHeight,
    controlPort: config.devnet.controlPort,
  });
}
