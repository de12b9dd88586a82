// What an object-model node says it serves (the plugin's describe): its chain
// identifier, and whether it still holds checkpoint 1 (an archive node) or has pruned
// it (a full node).

import { nodeRpc, type NodeClient, type NodeDescription } from 'noderouter/plugin';

export async function describeObjectx(node: NodeClient, ns: string, pruned: RegExp, timeoutMs: number): Promise<NodeDescription> {
  const [id, first] = await Promise.all([
    nodeRpc(node, `${ns}_getChainIdentifier`, [], timeoutMs),
    nodeRpc(node, `${ns}_getCheckpoint`, ['1'], timeoutMs).catch(() => undefined),
  ]);
  const d: { -readonly [K in keyof NodeDescription]: NodeDescription[K] } = {};
  if ('result' in id && typeof id.result === 'string' && id.result !== '') d.chainId = id.result;
  if (first !== undefined && 'result' in first) {
    d.role = 'archive';
    d.earliest = 1;
  } else if (first !== undefined && pruned.test(first.error.message)) d.role = 'full';
  return d;
}
