// CometBFT (Tendermint) RPC of SDK chains: JSON-RPC POST at the root or at
// /<method>, and the GET URI form (/status, /block?height=5). Nodes report the
// earliest height they retain, so a call pinned to a height goes to a node that
// holds it. The node's answers, ids included (abci_info's -1), are relayed as sent.

import { parseJsonRpcBody, replyError } from '../../src/jsonrpc/envelope.js';
import {
  definePlugin,
  type JsonLimits,
  type Call,
  type ChainHandler,
  type NodeHead,
  type PoolView,
  type Routing,
} from '../../src/plugin.js';
import { DEFAULT_BLOCK_TIME_MS, FINAL_TTL_MS } from '../shared/cache.js';
import { CostTable } from '../shared/costs.js';
import { checkOptions, type Problems } from '../shared/options.js';

const KNOWN = new Set([
  'status',
  'health',
  'net_info',
  'abci_info',
  'abci_query',
  'block',
  'block_by_hash',
  'block_results',
  'blockchain',
  'commit',
  'validators',
  'genesis',
  'genesis_chunked',
  'header',
  'header_by_hash',
  'consensus_params',
  'unconfirmed_txs',
  'num_unconfirmed_txs',
  'tx',
  'tx_search',
  'block_search',
  'broadcast_tx_sync',
  'broadcast_tx_async',
  'broadcast_tx_commit',
  'check_tx',
]);
/** Methods whose `height` (blockchain: `minHeight`) pins them to a block. */
const HEIGHT_PARAM: ReadonlyMap<string, string> = new Map([
  ['block', 'height'],
  ['block_results', 'height'],
  ['commit', 'height'],
  ['validators', 'height'],
  ['header', 'height'],
  ['consensus_params', 'height'],
  ['abci_query', 'height'],
  ['blockchain', 'minHeight'],
]);
/** Position of the height in the positional-params form. */
const HEIGHT_POSITION: ReadonlyMap<string, number> = new Map([
  ['block', 0],
  ['block_results', 0],
  ['commit', 0],
  ['validators', 0],
  ['header', 0],
  ['consensus_params', 0],
  ['abci_query', 2],
  ['blockchain', 0],
]);
const PRUNED = /is not available, lowest height is|pruned/i;
/** Reads answered from the latest state: kept about a block time. Never broadcasts. */
const READS = new Set([
  'status',
  'abci_info',
  'health',
  'net_info',
  'block',
  'header',
  'commit',
  'validators',
  'consensus_params',
  'blockchain',
  'genesis',
]);
const METHOD_PATH = /^\/([a-z_]{1,64})$/;
const DIGITS = /^"?(\d{1,18})"?$/;

function height(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v;
  if (typeof v === 'string') {
    const m = DIGITS.exec(v);
    if (m !== null) {
      const n = Number(m[1]);
      return n > 0 ? n : undefined;
    }
  }
  return undefined;
}

function callHeight(call: Call): number | undefined {
  const name = HEIGHT_PARAM.get(call.method);
  if (name === undefined) return undefined;
  const p = call.params;
  if (Array.isArray(p)) return height(p[HEIGHT_POSITION.get(call.method) ?? 0]);
  if (p !== null && typeof p === 'object') return height((p as Record<string, unknown>)[name]);
  return undefined;
}

function createHandler(limits: JsonLimits, fullHistory: number, costs: CostTable, blockTimeMs: number): ChainHandler {
  return {
    errorStyle: 'jsonrpc',
    // abci_info and the URI form are answered with id -1 whatever was sent.
    fixedReplyIds: ['-1'],
    parse(req) {
      if (req.method === 'POST') {
        if (req.path !== '/' && !METHOD_PATH.test(req.path)) {
          return { kind: 'unsupported', status: 404, message: 'POST a JSON-RPC body to the root or to /<method>' };
        }
        const { batch, items } = parseJsonRpcBody(req.body.toString('utf8'), limits);
        return { kind: 'jsonrpc', batch, items };
      }
      if (req.method === 'GET' || req.method === 'HEAD') {
        const m = METHOD_PATH.exec(req.path);
        if (m === null) return { kind: 'unsupported', status: 404, message: 'GET /<method>?<args>, e.g. /status or /block?height=5' };
        const method = m[1] as string;
        // URI arguments become the call's params, so classification reads them like JSON-RPC's.
        const params = req.query === '' ? undefined : Object.fromEntries(new URLSearchParams(req.query));
        const call: Call = { method, params, id: undefined, raw: '' };
        return { kind: 'passthrough', call, upstream: { method: 'GET', path: req.query === '' ? req.path : `${req.path}?${req.query}` } };
      }
      return { kind: 'unsupported', status: 405, message: 'CometBFT RPC takes GET or POST' };
    },
    classify(call, view: PoolView): Routing {
      const cost = costs.of(call.method, call.method);
      const label = KNOWN.has(call.method) ? call.method : 'other';
      const h = callHeight(call);
      if (h === undefined) return { archive: false, cost, label, ...(READS.has(call.method) ? { cacheTtlMs: blockTimeMs } : {}) };
      const floor = view.fullEarliest ?? (view.head === undefined ? undefined : view.head - fullHistory + 1);
      // A block below the head is committed for good (instant finality).
      const cache = view.head !== undefined && h < view.head ? { cacheTtlMs: FINAL_TTL_MS, cacheHeight: h } : {};
      return { archive: floor !== undefined && h < floor, minHeight: h, cost, label, ...cache };
    },
    judge(_call, reply) {
      if (reply.status === 429) return 'throttled';
      const t = reply.text;
      let i = 0;
      while (i < t.length && t.charCodeAt(i) <= 32) i++;
      if (t.charCodeAt(i) !== 123) return 'node-failure';
      const err = reply.error ?? (reply.status >= 400 ? replyError(t) : undefined);
      if (err === undefined) return reply.status >= 200 && reply.status < 300 ? 'ok' : 'node-failure';
      if (reply.status === 502 || reply.status === 503 || reply.status === 504) return 'node-failure';
      // CometBFT puts the reason in `data`: search the whole answer.
      return PRUNED.test(t) ? 'pruned' : 'chain-error';
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.request({ method: 'GET', path: '/status' }, timeoutMs);
      if (res.status !== 200) throw new Error(`probe answered HTTP ${res.status}`);
      const sync = (JSON.parse(res.text) as { result?: { sync_info?: Record<string, unknown> } }).result?.sync_info;
      const latest = height(sync?.latest_block_height);
      if (latest === undefined) throw new Error('probe answer has no latest_block_height');
      return {
        height: latest,
        earliest: height(sync?.earliest_block_height),
        hash: typeof sync?.latest_block_hash === 'string' ? sync.latest_block_hash : undefined,
      };
    },
  };
}

export default definePlugin({
  name: 'sdk-rpc',
  validateOptions: (options): Problems => checkOptions(options, ['fullHistory', 'costs', 'blockTimeMs']),
  create(ctx) {
    return createHandler(
      ctx.limits,
      (ctx.options.fullHistory as number | undefined) ?? 128,
      new CostTable({ tx_search: 5, block_search: 5, blockchain: 2 }, ctx.options.costs),
      (ctx.options.blockTimeMs as number | undefined) ?? DEFAULT_BLOCK_TIME_MS,
    );
  },
});
