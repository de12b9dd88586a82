// What a CometBFT node says it serves (the plugin's describe): its network (the chain
// id of node_info), CometBFT's version and its app's (abci_info), and the earliest
// height it keeps (an archive node keeps every height from 1).

import { decimalHeight, retention, type NodeClient, type NodeDescription } from 'noderouter/plugin';

export async function describeComet(node: NodeClient, timeoutMs: number): Promise<NodeDescription> {
  const [status, abci] = await Promise.all([
    node.http.request({ method: 'GET', path: '/status' }, timeoutMs),
    node.http.request({ method: 'GET', path: '/abci_info' }, timeoutMs).catch(() => undefined),
  ]);
  if (status.status < 200 || status.status >= 300) throw new Error(`status answered HTTP ${status.status}`);
  const result = (
    JSON.parse(status.text) as { result?: { node_info?: Record<string, unknown>; sync_info?: Record<string, unknown> } } | null
  )?.result;
  const info = result?.node_info;
  const d: { -readonly [K in keyof NodeDescription]: NodeDescription[K] } = retention(
    decimalHeight(result?.sync_info?.earliest_block_height),
  );
  if (typeof info?.network === 'string' && info.network !== '') d.chainId = info.network;
  let app = '';
  if (abci !== undefined && abci.status === 200) {
    try {
      const r = (JSON.parse(abci.text) as { result?: { response?: { data?: unknown; version?: unknown } } } | null)?.result?.response;
      if (typeof r?.data === 'string' && typeof r.version === 'string') app = `${r.data} ${r.version}, `;
    } catch {
      app = '';
    }
  }
  if (typeof info?.version === 'string') d.client = `${app}CometBFT ${info.version}`.slice(0, 200);
  return d;
}
