// The devnet's objectx family: Sui-like object-model nodes where sui_, suix_ and
// objectx_ answer alike. The head is the latest checkpoint; a full node keeps
// `fullRetention` checkpoints and answers older checkpoints and past object versions
// with a "pruned" error. Each node executes transaction blocks sent to it once (txs.ts).
// Its chain identifier comes from its network id (another under the otherChain fault).

import { createHash } from 'node:crypto';
import { defineDevnetFamily, seeded, type NodeView, type RpcOutcome, type Subscriptions } from 'noderouter/devnet';
import { ObjectxTxs } from './txs.js';

const SUI = '0x2::sui::SUI';

function checkpoint(node: NodeView, n: number): Record<string, unknown> {
  return {
    epoch: String(Math.floor(n / 1000)),
    sequenceNumber: String(n),
    digest: node.chain.hash(n).slice(2, 46),
    networkTotalTransactions: String(n * 7),
    previousDigest: n > 1 ? node.chain.hash(n - 1).slice(2, 46) : null,
    epochRollingGasCostSummary: { computationCost: '0', storageCost: '0', storageRebate: '0', nonRefundableStorageFee: '0' },
    timestampMs: String(node.chain.time(n) * 1000),
    transactions: node.chain.txsAt(n).map((t) => t.hash),
    checkpointCommitments: [],
    validatorSignature: 'devnet',
  };
}

/** `lie`: a balance nobody else has (the lie fault). */
function balance(owner: string, coinType: string, lie = false): Record<string, unknown> {
  return {
    coinType,
    coinObjectCount: seeded(`${owner}:${coinType}:count`, 20) + 1,
    totalBalance: String(BigInt(seeded(`${owner}:${coinType}`, 1_000_000_000) + 1) * 1000n + (lie ? 1_000_000n : 0n)),
    lockedBalance: {},
  };
}

function pruned(n: number): RpcOutcome {
  return { error: { code: -32602, message: `Checkpoint ${n} was pruned and is not available on this fullnode` } };
}

function call(method: string, params: unknown, node: NodeView, txs: ObjectxTxs): RpcOutcome | undefined {
  const i = method.indexOf('_');
  const ns = method.slice(0, i);
  if (ns !== 'sui' && ns !== 'suix' && ns !== 'objectx') return undefined;
  const name = method.slice(i + 1);
  const p = Array.isArray(params) ? (params as unknown[]) : [];
  const head = node.height();
  switch (name) {
    case 'getBalance':
      return { result: balance(String(p[0] ?? ''), typeof p[1] === 'string' ? p[1] : SUI, node.lying()) };
    case 'getAllBalances':
      return { result: [balance(String(p[0] ?? ''), SUI, node.lying())] };
    case 'getLatestCheckpointSequenceNumber':
      return { result: String(head) };
    case 'getCheckpoint': {
      const n = Number(p[0]);
      if (!Number.isInteger(n) || n < 0) return { error: { code: -32602, message: 'Invalid params' } };
      if (n > head) return { error: { code: -32602, message: `Could not find the referenced checkpoint ${n}` } };
      if (n < node.earliest()) return pruned(n);
      return { result: checkpoint(node, n) };
    }
    case 'getChainIdentifier':
      // Four bytes of the first checkpoint's digest, as Sui's: another under the otherChain fault.
      return { result: createHash('sha256').update(node.networkId()).digest('hex').slice(0, 8) };
    case 'getReferenceGasPrice':
      return { result: '1000' };
    case 'getTotalTransactionBlocks':
      return { result: String(head * 7) };
    case 'getObject':
      return {
        result: {
          data: {
            objectId: String(p[0] ?? ''),
            version: String(head),
            digest: node.chain.hash(head).slice(2, 46),
            type: '0x2::coin::Coin<0x2::sui::SUI>',
          },
        },
      };
    case 'tryGetPastObject': {
      const version = Number(p[1]);
      if (!Number.isInteger(version) || version < 0) return { error: { code: -32602, message: 'Invalid params' } };
      if (version > head)
        return {
          result: {
            status: 'VersionTooHigh',
            details: { object_id: String(p[0] ?? ''), asked_version: String(version), latest_version: String(head) },
          },
        };
      if (version < node.earliest()) return pruned(version);
      return {
        result: {
          status: 'VersionFound',
          details: { objectId: String(p[0] ?? ''), version: String(version), digest: node.chain.hash(version).slice(2, 46) },
        },
      };
    }
    case 'executeTransactionBlock':
      return txs.execute(p);
    case 'getTransactionBlock':
      return txs.get(p[0], p[1]);
    default:
      return undefined;
  }
}

/** Sui's suix_subscribeEvent: here one event per checkpoint, from the devnet's own module. */
const subscriptions = (node: NodeView): Subscriptions => ({
  closers: new Set(['sui_unsubscribeEvent', 'suix_unsubscribeEvent', 'objectx_unsubscribeEvent']),
  open(method) {
    const ns = method.slice(0, method.indexOf('_'));
    if (method !== `${ns}_subscribeEvent` || (ns !== 'sui' && ns !== 'suix' && ns !== 'objectx')) return undefined;
    return {
      notification: method,
      feed: (h) => [
        {
          id: { txDigest: node.chain.hash(h).slice(2, 46), eventSeq: '0' },
          packageId: '0x2',
          transactionModule: 'devnet',
          sender: `0x${'0'.repeat(64)}`,
          type: '0x2::devnet::Checkpoint',
          parsedJson: { sequenceNumber: String(h) },
          bcs: '',
          timestampMs: String(node.chain.time(h) * 1000),
        },
      ],
    };
  },
});

export default defineDevnetFamily({
  kind: 'http',
  rpcPath: (path) => path === '/',
  node(view) {
    const txs = new ObjectxTxs(view);
    return { rpc: (method, params) => call(method, params, view, txs), subscriptions: subscriptions(view) };
  },
});
