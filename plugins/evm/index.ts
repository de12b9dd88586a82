// EVM chains (JSON-RPC 2.0 over POST at the root; batches are arrays). This plugin
// knows where each method carries its block parameter, so calls reaching into old
// state go to archive nodes; block hashes cannot be placed and go to full nodes,
// whose pruned-state answer sends them on to an archive node. It also says how long
// an answer may be cached. Envelope parsing is src/jsonrpc; the core does the rest.

import { parseJsonRpcBody } from '../../src/jsonrpc/envelope.js';
import {
  definePlugin,
  type Call,
  type ChainHandler,
  type JsonLimits,
  type NodeHead,
  type PoolView,
  type Routing,
} from '../../src/plugin.js';
import { DEFAULT_BLOCK_TIME_MS, FINAL_TTL_MS } from '../shared/cache.js';
import { CostTable } from '../shared/costs.js';
import { jsonRpcVerdict, methodTable, splitMethod } from '../shared/jsonrpc-verdict.js';
import { costTable, costsOption, intOption, nameList, namesOption, positiveInt, unknownKeys, type Problems } from '../shared/options.js';
import { BLOCK_PARAM, EXTRA_NAMESPACES, KNOWN, PRUNED, type Kind } from './methods.js';

const HEX = /^0x[0-9a-fA-F]{1,13}$/; // at most 2^52: heights stay exact JS numbers
const BLOCK_HASH = /^0x[0-9a-fA-F]{64}$/; // getBlockReceipts takes a number or a hash
const DEFAULT_COSTS: Readonly<Record<string, number>> = { getLogs: 5, 'debug_*': 10, 'trace_*': 10 };

/** Where a block parameter points. Numbers carry their height; the rest are shared constants. */
type BlockRef = 'recent' | 'pending' | 'earliest' | 'hash' | number;

function blockRef(v: unknown): BlockRef {
  if (typeof v === 'string') {
    if (v === 'pending') return 'pending';
    if (v === 'earliest') return 'earliest';
    if (HEX.test(v)) return parseInt(v, 16);
    // latest, safe, finalized: full nodes hold them; anything unreadable is the node's to refuse.
    return BLOCK_HASH.test(v) ? 'hash' : 'recent';
  }
  if (v !== null && typeof v === 'object') {
    // EIP-1898: {blockHash} cannot be placed; {blockNumber} is read like a number.
    const o = v as { blockNumber?: unknown; blockHash?: unknown };
    if (o.blockHash !== undefined) return 'hash';
    if (o.blockNumber !== undefined) return blockRef(o.blockNumber);
  }
  // An absent block parameter means "latest".
  return 'recent';
}

/** What is known of one method, resolved once per chain for the known ones. */
interface MethodInfo {
  readonly label: string;
  readonly cost: number;
  readonly kind: Kind;
  /** Index of the block parameter (kind 'block'), else -1. */
  readonly at: number;
  /** The routing of a method routed by kind alone, built once: classify allocates none. */
  readonly fixed: Routing | undefined;
}

interface EvmOptions {
  readonly limits: JsonLimits;
  readonly namespaces: readonly string[];
  readonly fullHistory: number;
  readonly blockTimeMs: number;
  readonly finalityDepth: number;
  readonly costs: CostTable;
}

function createHandler(o: EvmOptions): ChainHandler {
  const { limits, fullHistory, blockTimeMs, finalityDepth, costs } = o;
  const probeBody = `{"jsonrpc":"2.0","id":1,"method":"${o.namespaces[0] ?? 'eth'}_getBlockByNumber","params":["latest",false]}`;
  /** Routing by kind alone; undefined for the kinds that read their parameters. */
  const fixed = (kind: Kind, cost: number, label: string): Routing | undefined => {
    switch (kind) {
      case 'archive':
        return Object.freeze({ archive: true, cost, label });
      case 'constant':
        return Object.freeze({ archive: false, cost, label, cacheTtlMs: Infinity });
      case 'head':
        return Object.freeze({ archive: false, cost, label, cacheTtlMs: blockTimeMs });
      case 'hash':
        return Object.freeze({ archive: false, cost, label, cacheTtlMs: FINAL_TTL_MS });
      case 'plain':
        return Object.freeze({ archive: false, cost, label });
      default:
        return undefined;
    }
  };
  const info = (method: string, name: string, kind: Kind): MethodInfo => {
    const cost = costs.of(method, name);
    return { label: method, cost, kind, at: BLOCK_PARAM.get(name) ?? -1, fixed: fixed(kind, cost, method) };
  };
  const known = methodTable(o.namespaces, KNOWN.keys(), (m, _ns, name) => info(m, name, KNOWN.get(name) ?? 'plain'));
  for (const [ns, names] of EXTRA_NAMESPACES) {
    for (const [name, kind] of names) known.set(`${ns}_${name}`, info(`${ns}_${name}`, name, kind));
  }

  /** Unknown methods are the main path: ordinary, labelled "other"; debug_/trace_ need archive. */
  const unknown = (method: string): Routing => {
    const [ns, name] = splitMethod(method);
    return { archive: ns === 'debug' || ns === 'trace', cost: costs.of(method, name), label: 'other' };
  };

  /** Is this reference older than what full nodes keep? Numbers are ordinary before the first probe. */
  const old = (ref: BlockRef, head: number | undefined): boolean =>
    ref === 'earliest' || (typeof ref === 'number' && head !== undefined && ref < head - fullHistory);

  /**
   * Cache policy of a read at a block: at or below the finalized height (head minus
   * finalityDepth) it is final; above it, or at a tag, it holds about a block time;
   * pending and future blocks are never kept.
   */
  const atBlock = (archive: boolean, m: MethodInfo, ref: BlockRef, head: number | undefined): Routing => {
    const { cost, label } = m;
    if (ref === 'pending') return { archive, cost, label };
    if (ref === 'recent') return { archive, cost, label, cacheTtlMs: blockTimeMs };
    if (ref === 'hash' || ref === 'earliest') return { archive, cost, label, cacheTtlMs: FINAL_TTL_MS };
    if (head === undefined || ref > head) return { archive, cost, label };
    return { archive, cost, label, cacheTtlMs: ref <= head - finalityDepth ? FINAL_TTL_MS : blockTimeMs, cacheHeight: ref };
  };

  const logs = (m: MethodInfo, params: readonly unknown[] | undefined, head: number | undefined): Routing => {
    const filter = params?.[0];
    if (filter === null || typeof filter !== 'object') return { archive: false, cost: m.cost, label: m.label };
    const f = filter as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown };
    if (f.blockHash !== undefined) return { archive: false, cost: m.cost, label: m.label, cacheTtlMs: FINAL_TTL_MS };
    // The lower bound decides where the range starts; the upper one how long the answer holds.
    return atBlock(old(blockRef(f.fromBlock), head), m, blockRef(f.toBlock), head);
  };

  return {
    sample: { method: 'POST', path: '/', body: `{"jsonrpc":"2.0","id":1,"method":"${o.namespaces[0] ?? 'eth'}_blockNumber"}` },
    errorStyle: 'jsonrpc',
    // eth_subscribe (newHeads, logs, …) in every configured namespace.
    websocket: { subscriptions: Object.fromEntries(o.namespaces.map((ns) => [`${ns}_subscribe`, `${ns}_unsubscribe`])) },
    parse(req) {
      if (req.method !== 'POST') return { kind: 'unsupported', status: 405, message: 'JSON-RPC endpoints take POST' };
      if (req.path !== '/') return { kind: 'unsupported', status: 404, message: 'JSON-RPC is served at the endpoint root' };
      const { batch, items } = parseJsonRpcBody(req.body.toString('utf8'), limits);
      return { kind: 'jsonrpc', batch, items };
    },
    classify(call: Call, view: PoolView): Routing {
      const m = known.get(call.method);
      if (m === undefined) return unknown(call.method);
      if (m.fixed !== undefined) return m.fixed;
      if (m.kind === 'logs') return logs(m, Array.isArray(call.params) ? call.params : undefined, view.head);
      // kind 'block'
      if (!Array.isArray(call.params)) return { archive: false, cost: m.cost, label: m.label };
      const ref = blockRef((call.params as readonly unknown[])[m.at]);
      return atBlock(old(ref, view.head), m, ref, view.head);
    },
    judge(_call, reply) {
      return jsonRpcVerdict(reply, PRUNED);
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.request({ method: 'POST', path: '/', body: probeBody }, timeoutMs);
      if (res.status < 200 || res.status >= 300) throw new Error(`probe answered HTTP ${res.status}`);
      const body = JSON.parse(res.text) as { result?: { number?: unknown; hash?: unknown } | null } | null;
      const block = body?.result;
      const n = block?.number;
      if (typeof n !== 'string' || !HEX.test(n)) throw new Error('probe answer has no block number');
      const hash = block?.hash;
      return typeof hash === 'string' ? { height: parseInt(n, 16), hash } : { height: parseInt(n, 16) };
    },
  };
}

const OPTIONS = ['namespaces', 'fullHistory', 'costs', 'blockTimeMs', 'finalityDepth'];

export default definePlugin({
  name: 'evm',
  validateOptions(options): Problems {
    const problems: Problems = [];
    unknownKeys(options, OPTIONS, problems);
    nameList(options, 'namespaces', '[eth, evm]', problems);
    positiveInt(options, 'fullHistory', problems);
    positiveInt(options, 'blockTimeMs', problems);
    positiveInt(options, 'finalityDepth', problems);
    costTable(options, '{ getLogs: 5, "trace_*": 10 }', problems);
    return problems;
  },
  create(ctx) {
    const opts = ctx.options;
    return createHandler({
      limits: ctx.limits,
      namespaces: namesOption(opts, 'namespaces', ['eth', 'evm']),
      fullHistory: intOption(opts, 'fullHistory', 128),
      blockTimeMs: intOption(opts, 'blockTimeMs', DEFAULT_BLOCK_TIME_MS),
      finalityDepth: intOption(opts, 'finalityDepth', 64),
      costs: new CostTable(DEFAULT_COSTS, costsOption(opts)),
    });
  },
});
