// The devnet control server: list nodes (with the devnet's settings), set or clear a
// node's faults, mine blocks, reorganise a chain. For tests and for anyone who wants to
// watch failover happen.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SimChain } from './chain.js';
import type { DevnetSettings } from './family.js';
import { FAULT_KINDS, type DevnetNode, type NodeFaults } from './types.js';

const FAULT_KEYS: ReadonlySet<string> = new Set(Object.keys(FAULT_KINDS));

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text === '' ? {} : JSON.parse(text));
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

function faultsOf(v: unknown): NodeFaults | string {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'body must be a JSON object of faults';
  for (const [k, val] of Object.entries(v)) {
    if (!FAULT_KEYS.has(k)) return `unknown fault "${k}" (known: ${[...FAULT_KEYS].join(', ')})`;
    const kind = FAULT_KINDS[k as keyof NodeFaults];
    if (typeof val !== kind) return `${k} must be a ${kind}`;
    if (k === 'maxLogsRange' && (!Number.isInteger(val) || (val as number) < 1)) return 'maxLogsRange must be a whole number from 1';
  }
  return v;
}

export async function startControl(
  nodes: ReadonlyMap<string, DevnetNode>,
  chains: ReadonlyMap<string, SimChain>,
  settings: DevnetSettings,
  port: number,
  host = '127.0.0.1',
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://devnet');
      const parts = url.pathname
        .split('/')
        .filter((p) => p !== '')
        .map(decodeURIComponent);
      if (req.method === 'GET' && parts.length === 1 && parts[0] === 'nodes') {
        return reply(res, 200, {
          settings: { ...settings, maxLogsRange: settings.maxLogsRange ?? null },
          nodes: [...nodes.values()].map((n) => ({
            name: n.name,
            network: n.network,
            family: n.family,
            role: n.role,
            url: n.url,
            height: n.height(),
            earliest: n.earliest(),
            faults: n.currentFaults(),
          })),
        });
      }
      if (parts[0] === 'nodes' && parts[2] === 'faults' && parts.length === 3) {
        const node = nodes.get(parts[1] as string);
        if (node === undefined) return reply(res, 404, { error: `no node "${parts[1]}"` });
        if (req.method === 'DELETE') {
          await node.clearFaults();
          return reply(res, 200, { name: node.name, faults: {} });
        }
        if (req.method === 'PUT') {
          let body: unknown;
          try {
            body = await readJson(req);
          } catch {
            return reply(res, 400, { error: 'body is not JSON' });
          }
          const f = faultsOf(body);
          if (typeof f === 'string') return reply(res, 400, { error: f });
          await node.setFaults(f);
          return reply(res, 200, { name: node.name, faults: node.currentFaults() });
        }
      }
      if (req.method === 'POST' && parts[0] === 'chains' && parts.length === 3) {
        const chain = chains.get(parts[1] as string);
        if (chain === undefined) return reply(res, 404, { error: `no chain "${parts[1]}"` });
        const n = Number(url.searchParams.get(parts[2] === 'reorg' ? 'depth' : 'blocks') ?? '1');
        if (!Number.isInteger(n) || n < 1 || n > 100_000) return reply(res, 400, { error: 'blocks/depth must be an integer from 1' });
        if (parts[2] === 'advance') chain.advance(n);
        else if (parts[2] === 'reorg') chain.reorg(n);
        else return reply(res, 404, { error: 'no such route' });
        return reply(res, 200, { network: chain.network, height: chain.height() });
      }
      return reply(res, 404, { error: 'no such route (GET /nodes, PUT|DELETE /nodes/NAME/faults, POST /chains/NAME/advance|reorg)' });
    })().catch((err: unknown) => reply(res, 500, { error: String(err) }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
