// The devnet's EVM family: geth-like nodes where namespaces eth_ and evm_ answer alike
// (plus net_, web3_, debug_, trace_). A full node keeps `fullRetention` blocks: older
// state reads get geth's "missing trie node", older blocks and logs "header not found".
// Each node keeps its own filters and pool of sent transactions (the next block
// includes them), and refuses getLogs ranges wider than its limit, as providers do.

import {
  defineDevnetFamily,
  hexOf,
  notFound,
  type Feed,
  type NodeProtocol,
  type NodeView,
  type RpcOutcome,
  type Subscriptions,
} from 'noderouter/devnet';
import { BAD_CRITERIA, block, blockHasher, headerNotFound, headerOf, logMatcher, logsAt, queryLogs, resolve } from './blocks.js';
import { NodeFilters } from './filters.js';
import { STATE_PARAM, stateAnswer } from './state.js';
import { EvmTxs } from './txs.js';

class EvmNode implements NodeProtocol {
  private readonly txs: EvmTxs;
  private readonly filters: NodeFilters;
  readonly subscriptions: Subscriptions;

  constructor(private readonly node: NodeView) {
    node.chain.hashBlocksWith(blockHasher(node.chain));
    this.txs = new EvmTxs(node);
    this.filters = new NodeFilters(node, this.txs.pool);
    this.subscriptions = this.pubsub();
  }

  rpc(method: string, params: unknown): RpcOutcome | undefined {
    const node = this.node;
    const i = method.indexOf('_');
    const ns = method.slice(0, i);
    const name = method.slice(i + 1);
    const p = Array.isArray(params) ? (params as unknown[]) : [];
    if (ns === 'net') return name === 'version' ? { result: String(node.chainId) } : name === 'listening' ? { result: true } : undefined;
    if (ns === 'web3') return name === 'clientVersion' ? { result: 'Geth/v1.14.0-devnet/linux-amd64/go1.22' } : undefined;
    if (ns === 'debug' || ns === 'trace') {
      if (node.role !== 'archive') return { error: notFound(method) };
      return { result: { gas: 21000, failed: false, returnValue: '', structLogs: [] } };
    }
    if (ns !== 'eth' && ns !== 'evm') return undefined;
    const stateAt = STATE_PARAM.get(name);
    if (stateAt !== undefined) return this.state(name, p, stateAt);
    switch (name) {
      case 'blockNumber':
        return { result: hexOf(node.height()) };
      case 'chainId':
        return { result: hexOf(node.chainId) };
      case 'syncing':
        return { result: false };
      case 'gasPrice':
        return { result: '0x3b9aca00' };
      case 'maxPriorityFeePerGas':
        return { result: '0x59682f00' };
      case 'getBlockByNumber':
      case 'getBlockByHash': {
        const r = name === 'getBlockByHash' ? resolve({ blockHash: p[0] }, node) : resolve(p[0], node);
        if ('error' in r) return { error: r.error };
        if ('missing' in r) return { result: null };
        if (r.height < node.earliest()) return { error: headerNotFound() };
        return { result: this.block(r.height, p[1] === true) };
      }
      case 'getLogs': {
        const f = p[0] ?? {};
        if (f === null || typeof f !== 'object' || Array.isArray(f)) return { error: BAD_CRITERIA };
        const match = logMatcher(f);
        return typeof match === 'function' ? queryLogs(f, match, node) : { error: match };
      }
      case 'sendRawTransaction':
        return this.txs.send(p[0]);
      case 'getTransactionByHash':
        return this.txs.byHash(p[0]);
      case 'getTransactionReceipt':
        return this.txs.receipt(p[0]);
      case 'newFilter':
        return this.filters.newFilter(p[0]);
      case 'newBlockFilter':
        return this.filters.newBlockFilter();
      case 'newPendingTransactionFilter':
        return this.filters.newPendingTransactionFilter();
      case 'getFilterChanges':
        return this.filters.changes(p[0]);
      case 'getFilterLogs':
        return this.filters.logs(p[0]);
      case 'uninstallFilter':
        return this.filters.uninstall(p[0]);
      case 'feeHistory':
        return {
          result: { oldestBlock: hexOf(Math.max(1, node.height() - 3)), baseFeePerGas: ['0x3b9aca00'], gasUsedRatio: [0.5], reward: [] },
        };
      default:
        return undefined;
    }
  }

  private state(name: string, p: unknown[], at: number): RpcOutcome {
    const node = this.node;
    const r = resolve(p[at], node);
    if ('error' in r) return { error: r.error };
    if ('missing' in r) return { error: headerNotFound() };
    if (r.height < node.earliest()) {
      const hash = node.chain.hash(r.height);
      return { error: { code: -32000, message: `missing trie node ${hash.slice(2)} (path ) state 0x${hash.slice(4)} is not available` } };
    }
    const answer = stateAnswer(name, p, r.height);
    // A lying node answers a balance nobody else has.
    return node.lying() && name === 'getBalance' && 'result' in answer
      ? { result: hexOf(BigInt(answer.result as string) + 10n ** 18n) }
      : answer;
  }

  private block(n: number, full: boolean): Record<string, unknown> {
    return block(this.node, n, this.txs.ofBlock(n, full));
  }

  /** geth's eth_subscribe: newHeads, logs (address and topics), newPendingTransactions and syncing (which push nothing here). */
  private pubsub(): Subscriptions {
    return {
      closers: new Set(['eth_unsubscribe', 'evm_unsubscribe']),
      open: (method, params) => {
        const ns = method.slice(0, method.indexOf('_'));
        if (method !== `${ns}_subscribe` || (ns !== 'eth' && ns !== 'evm')) return undefined;
        const p = Array.isArray(params) ? (params as unknown[]) : [];
        const notification = `${ns}_subscription`;
        const kind = p[0];
        let feed: Feed;
        if (kind === 'newHeads') feed = (h) => [headerOf(this.block(h, false))];
        else if (kind === 'logs') {
          const filter = p[1] ?? {};
          if (filter === null || typeof filter !== 'object') return { error: BAD_CRITERIA };
          const match = logMatcher(filter);
          if (typeof match !== 'function') return { error: match };
          feed = (h) => logsAt(this.node, h).filter(match);
        } else if (kind === 'newPendingTransactions' || kind === 'syncing') feed = () => [];
        else return { error: { code: -32602, message: `no "${String(kind)}" subscription in ${ns} namespace` } };
        return { feed, notification };
      },
    };
  }
}

export default defineDevnetFamily({
  kind: 'http',
  rpcPath: (path) => path === '/',
  node: (view) => new EvmNode(view),
});
