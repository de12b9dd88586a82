// A geth-like EVM node: namespaces eth_ and evm_ answer alike (plus net_, web3_,
// debug_, trace_). A full node keeps `fullRetention` blocks: older state reads get
// geth's "missing trie node", older blocks and logs "header not found".

import { hexOf, seeded } from './chain.js';
import { notFound, type Family, type Feed, type NodeView, type RpcError, type RpcOutcome, type Subscriptions } from './family.js';

const ZERO32 = `0x${'0'.repeat(64)}`;
const LOG_ADDRESS = '0x00000000000000000000000000000000000000aa';
const STATE_PARAM: ReadonlyMap<string, number> = new Map([
  ['getBalance', 1],
  ['getTransactionCount', 1],
  ['getCode', 1],
  ['getStorageAt', 2],
  ['call', 1],
  ['estimateGas', 1],
  ['getProof', 2],
]);

type Resolved = { height: number } | { error: RpcError } | { missing: true };

function headerNotFound(): RpcError {
  return { code: -32000, message: 'header not found' };
}

/** Resolve a block parameter against this node; `state` reads are pruned differently. */
function resolve(v: unknown, node: NodeView): Resolved {
  const head = node.height();
  let n: number;
  if (v === undefined || v === null || v === 'latest' || v === 'pending') n = head;
  else if (v === 'safe') n = Math.max(1, head - 32);
  else if (v === 'finalized') n = Math.max(1, head - 64);
  else if (v === 'earliest') n = 1;
  else if (typeof v === 'string' && /^0x[0-9a-fA-F]+$/.test(v)) n = parseInt(v, 16);
  else if (typeof v === 'object') {
    const o = v as { blockNumber?: unknown; blockHash?: unknown };
    if (typeof o.blockHash === 'string') {
      const h = node.chain.heightOf(o.blockHash);
      if (h === undefined || h > head) return { missing: true };
      n = h;
    } else return resolve(o.blockNumber, node);
  } else return { error: { code: -32602, message: 'invalid block parameter' } };
  if (n > head) return { missing: true };
  return { height: n };
}

function block(node: NodeView, n: number, full: boolean): Record<string, unknown> {
  const c = node.chain;
  return {
    number: hexOf(n),
    hash: c.hash(n),
    parentHash: n > 1 ? c.hash(n - 1) : ZERO32,
    timestamp: hexOf(c.time(n)),
    gasLimit: '0x1c9c380',
    gasUsed: '0x0',
    baseFeePerGas: '0x3b9aca00',
    miner: '0x0000000000000000000000000000000000000000',
    difficulty: '0x0',
    totalDifficulty: '0x0',
    extraData: '0x',
    logsBloom: `0x${'0'.repeat(512)}`,
    mixHash: ZERO32,
    nonce: '0x0000000000000000',
    receiptsRoot: ZERO32,
    sha3Uncles: ZERO32,
    stateRoot: c.hash(n).replace(/^0x../, '0xaa'),
    transactionsRoot: ZERO32,
    size: '0x220',
    transactions: full ? [] : [],
    uncles: [],
  };
}

/** The devnet's logs of one block: one log in about every fourth block, from one contract. */
function logsAt(node: NodeView, h: number): Array<Record<string, unknown>> {
  if (seeded(`${node.chain.network}:log:${h}`, 4) !== 0) return [];
  return [
    {
      address: LOG_ADDRESS,
      topics: [ZERO32],
      data: '0x',
      blockNumber: hexOf(h),
      blockHash: node.chain.hash(h),
      transactionHash: node.chain.hash(h).replace(/^0x../, '0xbb'),
      transactionIndex: '0x0',
      logIndex: '0x0',
      removed: false,
    },
  ];
}

function stateAnswer(name: string, params: unknown[], n: number): RpcOutcome {
  const addr = String((name === 'call' || name === 'estimateGas' ? (params[0] as { to?: unknown } | undefined)?.to : params[0]) ?? '');
  switch (name) {
    case 'getBalance':
      return { result: hexOf(BigInt(seeded(`${addr}:${n >> 8}`, 1_000_000) + 1) * 10n ** 15n) };
    case 'getTransactionCount':
      return { result: hexOf(seeded(addr, 500)) };
    case 'getCode':
      return { result: seeded(addr, 2) === 0 ? '0x' : '0x6080604052' };
    case 'getStorageAt':
      return {
        result: `0x${seeded(`${addr}:${String(params[1])}`, 1 << 30)
          .toString(16)
          .padStart(64, '0')}`,
      };
    case 'estimateGas':
      return { result: '0x5208' };
    case 'getProof':
      return {
        result: { address: addr, accountProof: [], balance: '0x0', codeHash: ZERO32, nonce: '0x0', storageHash: ZERO32, storageProof: [] },
      };
    default: {
      const data = String(
        (params[0] as { data?: unknown; input?: unknown } | undefined)?.data ?? (params[0] as { input?: unknown })?.input ?? '',
      );
      if (data.startsWith('0xdeadbeef')) {
        return {
          error: {
            code: 3,
            message: 'execution reverted: devnet revert',
            data: '0x08c379a00000000000000000000000000000000000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000d6465766e657420726576657274000000000000000000000000000000000000',
          },
        };
      }
      return {
        result: `0x${seeded(`${addr}:${data}`, 1 << 30)
          .toString(16)
          .padStart(64, '0')}`,
      };
    }
  }
}

function call(method: string, params: unknown, node: NodeView): RpcOutcome | undefined {
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
  const head = node.height();
  const stateAt = STATE_PARAM.get(name);
  if (stateAt !== undefined) {
    const r = resolve(p[stateAt], node);
    if ('error' in r) return { error: r.error };
    if ('missing' in r) return { error: headerNotFound() };
    if (r.height < node.earliest()) {
      return {
        error: {
          code: -32000,
          message: `missing trie node ${node.chain.hash(r.height).slice(2)} (path ) state 0x${node.chain.hash(r.height).slice(4)} is not available`,
        },
      };
    }
    return stateAnswer(name, p, r.height);
  }
  switch (name) {
    case 'blockNumber':
      return { result: hexOf(head) };
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
      return { result: block(node, r.height, p[1] === true) };
    }
    case 'getLogs': {
      const f = (p[0] ?? {}) as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown };
      const from = f.blockHash !== undefined ? resolve({ blockHash: f.blockHash }, node) : resolve(f.fromBlock ?? 'latest', node);
      const to = f.blockHash !== undefined ? from : resolve(f.toBlock ?? 'latest', node);
      if ('error' in from) return { error: from.error };
      if ('error' in to) return { error: to.error };
      if ('missing' in from) return { result: [] };
      if (from.height < node.earliest()) return { error: headerNotFound() };
      const last = 'missing' in to ? head : to.height;
      const logs = [];
      for (let h = from.height; h <= last && logs.length < 100; h++) logs.push(...logsAt(node, h));
      return { result: logs };
    }
    case 'getTransactionReceipt':
    case 'getTransactionByHash':
      return { result: null };
    case 'feeHistory':
      return { result: { oldestBlock: hexOf(Math.max(1, head - 3)), baseFeePerGas: ['0x3b9aca00'], gasUsedRatio: [0.5], reward: [] } };
    default:
      return undefined;
  }
}

/** The head of a block as newHeads pushes it (a block without its transactions). */
function headerOf(node: NodeView, n: number): Record<string, unknown> {
  const { transactions: _t, uncles: _u, size: _s, totalDifficulty: _d, ...rest } = block(node, n, false);
  return rest;
}

/** geth's eth_subscribe: newHeads, logs (address filter), newPendingTransactions and syncing (which push nothing here). */
const subscriptions: Subscriptions = {
  closers: new Set(['eth_unsubscribe', 'evm_unsubscribe']),
  open(method, params, node) {
    const ns = method.slice(0, method.indexOf('_'));
    if (method !== `${ns}_subscribe` || (ns !== 'eth' && ns !== 'evm')) return undefined;
    const p = Array.isArray(params) ? (params as unknown[]) : [];
    const notification = `${ns}_subscription`;
    const kind = p[0];
    let feed: Feed;
    if (kind === 'newHeads') feed = (h) => [headerOf(node, h)];
    else if (kind === 'logs') {
      const filter = (p[1] ?? {}) as { address?: unknown };
      const wanted =
        filter.address === undefined ? undefined : ([] as unknown[]).concat(filter.address).map((a) => String(a).toLowerCase());
      feed = (h) => (wanted === undefined || wanted.includes(LOG_ADDRESS) ? logsAt(node, h) : []);
    } else if (kind === 'newPendingTransactions' || kind === 'syncing') feed = () => [];
    else return { error: { code: -32602, message: `no "${String(kind)}" subscription in ${ns} namespace` } };
    return { feed, notification };
  },
};

export const evmFamily: Family = {
  rpcPath: (path) => path === '/',
  rpc: call,
  subscriptions,
};
