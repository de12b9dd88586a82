// EVM chains (JSON-RPC 2.0 over POST at the root; batches are arrays). This plugin
// knows where each method carries its block parameter, so calls reaching into old
// state go to archive nodes; block hashes cannot be placed and go to full nodes,
// whose pruned-state answer sends them on to an archive node.

import { parseJsonRpcBody } from '../../src/jsonrpc/envelope.js';
import {
  definePlugin,
  type Call,
  type JsonLimits,
  type ChainHandler,
  type NodeClient,
  type NodeHead,
  type PoolView,
  type Routing,
} from '../../src/plugin.js';
import { DEFAULT_BLOCK_TIME_MS, FINAL_TTL_MS } from '../shared/cache.js';
import { CostTable } from '../shared/costs.js';
import { jsonRpcVerdict, splitMethod } from '../shared/jsonrpc-verdict.js';
import { checkOptions, type Problems } from '../shared/options.js';

/** Position of the block parameter, by method name after the namespace. */
const BLOCK_PARAM: ReadonlyMap<string, number> = new Map([
  ['getBalance', 1],
  ['getCode', 1],
  ['getTransactionCount', 1],
  ['call', 1],
  ['estimateGas', 1],
  ['createAccessList', 1],
  ['getStorageAt', 2],
  ['getProof', 2],
  ['getBlockByNumber', 0],
  ['getBlockTransactionCountByNumber', 0],
  ['getUncleCountByBlockNumber', 0],
  ['getTransactionByBlockNumberAndIndex', 0],
  ['getUncleByBlockNumberAndIndex', 0],
  ['getBlockReceipts', 0],
  ['feeHistory', 1],
]);

/** Method names (after the namespace) reported as metric labels; others fold into "other". */
const KNOWN = new Set([
  ...BLOCK_PARAM.keys(),
  'blockNumber',
  'chainId',
  'gasPrice',
  'maxPriorityFeePerGas',
  'syncing',
  'getLogs',
  'getBlockByHash',
  'getTransactionByHash',
  'getTransactionReceipt',
  'sendRawTransaction',
  'subscribe',
  'unsubscribe',
  'newFilter',
  'getFilterChanges',
  'version',
  'clientVersion',
  'traceTransaction',
  'traceCall',
  'traceBlockByNumber',
  'block',
  'transaction',
  'filter',
]);

const ALWAYS_NAMESPACES = ['net', 'web3', 'debug', 'trace'];
const ARCHIVE_NAMESPACES = new Set(['debug', 'trace']);
const PRUNED =
  /missing trie node|header not found|BlockOutOfRange|historical state|is not available|pruned|state histories haven't been fully indexed|required historical state unavailable|old data not available|distance to target block exceeds maximum/i;
const HEX = /^0x[0-9a-fA-F]{1,16}$/;
const TAGS = new Set(['latest', 'pending', 'safe', 'finalized']);

type BlockRef = { kind: 'recent' } | { kind: 'pending' } | { kind: 'number'; n: number } | { kind: 'earliest' } | { kind: 'hash' };
const RECENT: BlockRef = { kind: 'recent' };
const PENDING: BlockRef = { kind: 'pending' };
const EARLIEST: BlockRef = { kind: 'earliest' };
const HASH: BlockRef = { kind: 'hash' };

function blockRef(v: unknown): BlockRef {
  if (typeof v === 'string') {
    if (v === 'pending') return PENDING;
    if (TAGS.has(v)) return RECENT;
    if (v === 'earliest') return EARLIEST;
    if (HEX.test(v)) return { kind: 'number', n: parseInt(v, 16) };
    return RECENT;
  }
  if (v !== null && typeof v === 'object') {
    const o = v as { blockNumber?: unknown; blockHash?: unknown };
    if (o.blockHash !== undefined) return HASH;
    if (o.blockNumber !== undefined) return blockRef(o.blockNumber);
  }
  // Absent block parameters mean "latest".
  return RECENT;
}

/** Methods whose answer never changes on a chain. */
const CONSTANT = new Set(['chainId', 'net_version']);
/** Latest-state reads without a block parameter: kept about a block time. */
const HEAD_READS = new Set(['blockNumber', 'gasPrice', 'maxPriorityFeePerGas', 'feeHistory']);

interface EvmOptions {
  readonly limits: JsonLimits;
  readonly blockTimeMs: number;
  readonly finalityDepth: number;
  readonly namespaces: readonly string[];
  readonly fullHistory: number;
  readonly costs: CostTable;
}

function createHandler(o: EvmOptions): ChainHandler {
  const limits = o.limits;
  const namespaces = new Set([...o.namespaces, ...ALWAYS_NAMESPACES]);
  const probeBody = `{"jsonrpc":"2.0","id":1,"method":"${o.namespaces[0] ?? 'eth'}_getBlockByNumber","params":["latest",false]}`;
  const labels = new Map<string, string>();

  const label = (method: string, ns: string, name: string): string => {
    let l = labels.get(method);
    if (l === undefined) {
      l = namespaces.has(ns) && KNOWN.has(name) ? method : 'other';
      if (labels.size < 1024) labels.set(method, l);
    }
    return l;
  };

  /**
   * Cache policy of a read at a block: at or below the finalized height (head minus
   * finalityDepth) it is final; above it, or at a tag, it holds about a block time;
   * pending and future blocks are never kept.
   */
  const cached = (archive: boolean, cost: number, label: string, ref: BlockRef, view: PoolView): Routing => {
    if (ref.kind === 'pending') return { archive, cost, label };
    if (ref.kind === 'recent') return { archive, cost, label, cacheTtlMs: o.blockTimeMs };
    if (ref.kind === 'hash' || ref.kind === 'earliest') return { archive, cost, label, cacheTtlMs: FINAL_TTL_MS };
    if (view.head === undefined || ref.n > view.head) return { archive, cost, label };
    const ttl = ref.n <= view.head - o.finalityDepth ? FINAL_TTL_MS : o.blockTimeMs;
    return { archive, cost, label, cacheTtlMs: ttl, cacheHeight: ref.n };
  };

  /** Is this reference older than what full nodes keep? */
  const old = (ref: BlockRef, view: PoolView): boolean => {
    if (ref.kind === 'earliest') return true;
    if (ref.kind !== 'number' || view.head === undefined) return false;
    return ref.n < view.head - o.fullHistory;
  };

  return {
    errorStyle: 'jsonrpc',
    parse(req) {
      if (req.method !== 'POST') return { kind: 'unsupported', status: 405, message: 'JSON-RPC endpoints take POST' };
      if (req.path !== '/') return { kind: 'unsupported', status: 404, message: 'JSON-RPC is served at the endpoint root' };
      const { batch, items } = parseJsonRpcBody(req.body.toString('utf8'), limits);
      return { kind: 'jsonrpc', batch, items };
    },
    classify(call: Call, view: PoolView): Routing {
      const [ns, name] = splitMethod(call.method);
      const cost = o.costs.of(call.method, name);
      const l = label(call.method, ns, name);
      if (ARCHIVE_NAMESPACES.has(ns)) return { archive: true, cost, label: l };
      if (!namespaces.has(ns)) return { archive: false, cost, label: l };
      if (CONSTANT.has(name) || CONSTANT.has(call.method)) return { archive: false, cost, label: l, cacheTtlMs: Infinity };
      if (HEAD_READS.has(name)) return { archive: false, cost, label: l, cacheTtlMs: o.blockTimeMs };
      const params = Array.isArray(call.params) ? (call.params as unknown[]) : undefined;
      if (name === 'getBlockByHash') return { archive: false, cost, label: l, cacheTtlMs: FINAL_TTL_MS };
      if (name === 'getLogs') {
        const filter = params?.[0] as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown } | undefined;
        if (filter === undefined || filter === null) return { archive: false, cost, label: l };
        if (filter.blockHash !== undefined) return { archive: false, cost, label: l, cacheTtlMs: FINAL_TTL_MS };
        const archive = filter.fromBlock !== undefined && old(blockRef(filter.fromBlock), view);
        return cached(archive, cost, l, blockRef(filter.toBlock), view);
      }
      const at = BLOCK_PARAM.get(name);
      if (at === undefined || params === undefined) return { archive: false, cost, label: l };
      const ref = blockRef(params[at]);
      return cached(old(ref, view), cost, l, ref, view);
    },
    judge(_call, reply) {
      return jsonRpcVerdict(reply, PRUNED);
    },
    async probe(node: NodeClient, timeoutMs: number): Promise<NodeHead> {
      const res = await node.request({ method: 'POST', path: '/', body: probeBody }, timeoutMs);
      if (res.status !== 200) throw new Error(`probe answered HTTP ${res.status}`);
      const body = JSON.parse(res.text) as { result?: { number?: unknown; hash?: unknown } };
      const n = body.result?.number;
      if (typeof n !== 'string' || !HEX.test(n)) throw new Error('probe answer has no block number');
      return { height: parseInt(n, 16), hash: typeof body.result?.hash === 'string' ? body.result.hash : undefined };
    },
  };
}

export default definePlugin({
  name: 'evm',
  validateOptions: (options): Problems => checkOptions(options, ['namespaces', 'fullHistory', 'costs', 'blockTimeMs', 'finalityDepth']),
  create(ctx) {
    return createHandler({
      limits: ctx.limits,
      blockTimeMs: (ctx.options.blockTimeMs as number | undefined) ?? DEFAULT_BLOCK_TIME_MS,
      finalityDepth: (ctx.options.finalityDepth as number | undefined) ?? 64,
      namespaces: (ctx.options.namespaces as string[] | undefined) ?? ['eth', 'evm'],
      fullHistory: (ctx.options.fullHistory as number | undefined) ?? 128,
      costs: new CostTable({ getLogs: 5, 'debug_*': 10, 'trace_*': 10 }, ctx.options.costs),
    });
  },
});
