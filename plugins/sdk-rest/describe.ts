// What a Cosmos SDK REST node says it serves (the plugin's describe): its network (the
// chain id) and app version from node_info, and the earliest height it keeps from the
// node service's status (SDK 0.50 and later; older nodes leave it out).

import { decimalHeight, retention, type NodeClient, type NodeDescription } from 'noderouter/plugin';

interface NodeInfo {
  default_node_info?: { network?: unknown; version?: unknown };
  application_version?: { app_name?: unknown; version?: unknown };
}

function json(res: { status: number; text: string } | undefined): unknown {
  if (res === undefined || res.status < 200 || res.status >= 300) return undefined;
  try {
    return JSON.parse(res.text) as unknown;
  } catch {
    return undefined;
  }
}

export async function describeRest(node: NodeClient, namespace: string, timeoutMs: number): Promise<NodeDescription> {
  const [info, status] = await Promise.all([
    node.http.request({ method: 'GET', path: `/${namespace}/base/tendermint/v1beta1/node_info` }, timeoutMs),
    node.http.request({ method: 'GET', path: `/${namespace}/base/node/v1beta1/status` }, timeoutMs).catch(() => undefined),
  ]);
  const i = json(info) as NodeInfo | undefined;
  if (i === undefined) throw new Error(`node_info answered HTTP ${info.status}`);
  const s = json(status) as { earliest_store_height?: unknown } | undefined;
  const d: { -readonly [K in keyof NodeDescription]: NodeDescription[K] } = retention(decimalHeight(s?.earliest_store_height));
  const network = i.default_node_info?.network;
  if (typeof network === 'string' && network !== '') d.chainId = network;
  const app = i.application_version;
  if (typeof app?.app_name === 'string' && typeof app.version === 'string') d.client = `${app.app_name} ${app.version}`.slice(0, 200);
  return d;
}
