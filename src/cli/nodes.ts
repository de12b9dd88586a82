// `noderouter nodes list|cordon|uncordon|drain`: the running gateway's admin node API,
// at --admin URL or the config's admin listener, with the admin token from
// $NODEROUTER_ADMIN_TOKEN or the config. A hold set on one instance is set on every
// instance sharing its Redis store.

import { UsageError, option, type ParsedArgs } from './args.js';
import type { GatewayConfig } from '../config/types.js';
import { ControlError, isControlCode } from '../control-errors.js';

interface NodeRow {
  readonly chain: string;
  readonly node: string;
  readonly state: string;
  readonly since: string | null;
  readonly reason: string | null;
  readonly known: boolean;
  readonly role: string | null;
  readonly inRotation: boolean | null;
  readonly inFlight: number | null;
  readonly subscriptions: number | null;
}

/** Where the admin listener of a config answers (a wildcard address as loopback). */
export function configuredAdminUrl(config: GatewayConfig): string {
  const host = config.server.adminHost;
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${config.server.adminPort}`;
}

async function call(base: string, token: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  } catch {
    throw new ControlError('UNAVAILABLE', `cannot reach the admin API at ${base}: is the gateway running? (--admin URL names another)`);
  }
  const text = await res.text();
  let json: { error?: { code?: string; message?: string } } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    // Not the admin API's answer: said below.
  }
  if (res.ok) return json;
  const message = json.error?.message ?? `HTTP ${res.status}`;
  // The API's own code when it is the catalogue's, so the exit code is the one the catalogue gives it.
  const code = isControlCode(json.error?.code) ? json.error.code : res.status >= 500 ? 'UNAVAILABLE' : 'INVALID_INPUT';
  throw new ControlError(code, `the admin API refused: ${message}`);
}

function row(r: NodeRow): string {
  const rotation = r.inRotation === null ? '-' : r.inRotation ? 'in' : 'out';
  const count = (n: number | null): string => (n === null ? '-' : String(n));
  return (
    `${r.chain.padEnd(18)} ${r.node.padEnd(22)} ${(r.role ?? '-').padEnd(8)} ${(r.known ? r.state : `${r.state}*`).padEnd(10)} ` +
    `${rotation.padEnd(9)} ${count(r.inFlight).padStart(9)} ${count(r.subscriptions).padStart(5)}  ${(r.since ?? '-').padEnd(24)} ${r.reason ?? ''}`
  ).trimEnd();
}

export async function nodesCommand(args: ParsedArgs, config: GatewayConfig, out: (line?: string) => void): Promise<number> {
  const [, sub, chain, node] = args.positional;
  const base = (option(args, 'admin') ?? configuredAdminUrl(config)).replace(/\/+$/, '');
  const envToken = process.env.NODEROUTER_ADMIN_TOKEN;
  const token = envToken !== undefined && envToken !== '' ? envToken : config.admin.token;
  if (token === undefined)
    throw new UsageError('the admin API needs the admin token: set NODEROUTER_ADMIN_TOKEN (or admin.token in the config)');
  switch (sub) {
    case 'list': {
      const { nodes } = (await call(base, token, 'GET', '/admin/nodes')) as { nodes: NodeRow[] };
      if (args.options.has('json')) {
        out(JSON.stringify(nodes, null, 2));
        return 0;
      }
      out(
        `${'CHAIN'.padEnd(18)} ${'NODE'.padEnd(22)} ${'ROLE'.padEnd(8)} ${'STATE'.padEnd(10)} ${'ROTATION'.padEnd(9)} ${'IN-FLIGHT'.padStart(9)} ${'SUBS'.padStart(5)}  ${'SINCE'.padEnd(24)} REASON`,
      );
      for (const r of nodes) out(row(r));
      if (nodes.some((r) => !r.known)) out('* a hold on a node the config no longer has (uncordon lifts it)');
      return 0;
    }
    case 'cordon':
    case 'uncordon':
    case 'drain': {
      if (chain === undefined || node === undefined)
        throw new UsageError(`nodes ${sub} needs a chain endpoint and a node: nodes ${sub} CHAIN NODE`);
      const reason = option(args, 'reason');
      const path = `/admin/nodes/${encodeURIComponent(chain)}/${encodeURIComponent(node)}/${sub}`;
      const { node: r } = (await call(base, token, 'POST', path, reason === undefined ? {} : { reason })) as { node: NodeRow };
      out(row(r));
      if (sub === 'drain')
        out('no new calls; calls in flight finish and its subscriptions move to other nodes (IN-FLIGHT and SUBS reach 0)');
      return 0;
    }
    default:
      throw new UsageError(`unknown nodes command "${sub ?? ''}" (list, cordon, uncordon, drain)`);
  }
}
