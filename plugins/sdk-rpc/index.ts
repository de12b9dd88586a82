// CometBFT (Tendermint) RPC of SDK chains: JSON-RPC POST at the root or at
// /<method>, and the GET URI form (/status, /block?height=5) passed through as is.
// Nodes report the earliest height they retain, so a call pinned to a height goes to
// a node that holds it. Answers, ids included (abci_info's -1), are relayed as sent.
// GET / (CometBFT's HTML list of routes) is not served: it is no call of the chain.

import { parseJsonRpcBody, replyError } from '../../src/jsonrpc/envelope.js';
import { isObjectText, memberRaw } from '../../src/jsonrpc/raw-json.js';
import {
  definePlugin,
  type Call,
  type ChainHandler,
  type JsonLimits,
  type NodeHead,
  type PoolView,
  type Routing,
  type Verdict,
} from '../../src/plugin.js';
import { DEFAULT_BLOCK_TIME_MS } from '../shared/cache.js';
import { CostTable } from '../shared/costs.js';
import { atHeight, decimalHeight } from '../shared/heights.js';
import { costTable, costsOption, intOption, positiveInt, unknownKeys, type Problems } from '../shared/options.js';

/** Methods that take a height: its parameter name and its place in the positional form. */
const HEIGHT_PARAM: ReadonlyMap<string, readonly [string, number]> = new Map([
  ['block', ['height', 0]],
  ['block_results', ['height', 0]],
  ['commit', ['height', 0]],
  ['validators', ['height', 0]],
  ['header', ['height', 0]],
  ['consensus_params', ['height', 0]],
  ['abci_query', ['height', 2]], // (path, data, height, prove)
  ['blockchain', ['minHeight', 0]], // (minHeight, maxHeight): the lower bound matters
]);
/** Latest-state reads (without a height), kept about a block time. Never broadcasts. */
const HEAD_READS: ReadonlySet<string> = new Set(['status', 'abci_info', 'net_info', 'health', 'genesis', ...HEIGHT_PARAM.keys()]);
/** Known methods, the bounded set of labels. */
const KNOWN: ReadonlySet<string> = new Set([
  ...HEAD_READS,
  'block_by_hash',
  'header_by_hash',
  'genesis_chunked',
  'unconfirmed_txs',
  'num_unconfirmed_txs',
  'tx',
  'tx_search',
  'block_search',
  'broadcast_tx_sync',
  'broadcast_tx_async',
  'broadcast_tx_commit',
  'broadcast_evidence',
  'check_tx',
  'dump_consensus_state',
  'consensus_state',
  'subscribe',
  'unsubscribe',
  'unsubscribe_all',
]);
const DEFAULT_COSTS: Readonly<Record<string, number>> = { tx_search: 5, block_search: 5, blockchain: 2 };
/** CometBFT's answer for a height below what the node keeps (in `data`, message "Internal error"). */
const PRUNED = /is not available, lowest height is|pruned/i;
const METHOD_PATH = /^\/([a-z_]{1,64})$/;
/** URI arguments are JSON-ish: `height=5` or `height="5"` (quotes maybe percent-encoded). */
const HEIGHT_QUERY = /(?:^|&)height=(?:"|%22)?(\d{1,15})(?:"|%22)?(?:&|$)/;
const MIN_HEIGHT_QUERY = /(?:^|&)minHeight=(?:"|%22)?(\d{1,15})(?:"|%22)?(?:&|$)/;

/** A call in the URI form: the height is read from the query once, at parse time. */
interface UriCall extends Call {
  readonly uriHeight: number | undefined;
}

function uriHeight(method: string, query: string): number | undefined {
  const param = HEIGHT_PARAM.get(method);
  if (param === undefined || query === '') return undefined;
  const m = (param[0] === 'height' ? HEIGHT_QUERY : MIN_HEIGHT_QUERY).exec(query);
  return m === null ? undefined : decimalHeight(m[1]);
}

/** Height of a JSON-RPC call, in the named (`{height:"5"}`) or positional (`["5"]`) form. */
function paramsHeight(call: Call): number | undefined {
  const param = HEIGHT_PARAM.get(call.method);
  const p = call.params;
  if (param === undefined || p === null || typeof p !== 'object') return undefined;
  return decimalHeight(Array.isArray(p) ? (p as readonly unknown[])[param[1]] : (p as Record<string, unknown>)[param[0]]);
}

interface MethodInfo {
  readonly label: string;
  readonly cost: number;
  /** The routing without a height, built once: classify allocates none for it. */
  readonly latest: Routing;
}

function createHandler(limits: JsonLimits, fullHistory: number, costs: CostTable, blockTimeMs: number): ChainHandler {
  const known = new Map<string, MethodInfo>();
  for (const label of KNOWN) {
    const cost = costs.of(label, label);
    const cache = HEAD_READS.has(label) ? { cacheTtlMs: blockTimeMs } : {};
    known.set(label, { label, cost, latest: Object.freeze({ archive: false, cost, label, ...cache }) });
  }

  return {
    sample: { method: 'POST', path: '/abci_info', body: '{"jsonrpc":"2.0","id":1,"method":"abci_info"}' },
    errorStyle: 'jsonrpc',
    // abci_info and the URI form are answered with id -1 whatever was sent.
    fixedReplyIds: ['-1'],
    parse(req) {
      if (req.method === 'POST') {
        // At /<method> the body's own method is used as is (CometBFT does the same).
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
        const call: UriCall = { method, params: undefined, id: undefined, raw: '', uriHeight: uriHeight(method, req.query) };
        return { kind: 'passthrough', call, upstream: { method: 'GET', path: req.query === '' ? req.path : `${req.path}?${req.query}` } };
      }
      return { kind: 'unsupported', status: 405, message: 'CometBFT RPC takes POST (JSON-RPC) or GET (URI form)' };
    },
    classify(call: Call, view: PoolView): Routing {
      const m = known.get(call.method);
      // Unknown methods are the main path: ordinary, labelled "other".
      if (m === undefined) return { archive: false, cost: costs.of(call.method, call.method), label: 'other' };
      const h = (call as Partial<UriCall>).uriHeight ?? paramsHeight(call);
      return h === undefined ? m.latest : atHeight(h, view, fullHistory, m.cost, m.label, true);
    },
    judge(call, reply) {
      const s = reply.status;
      if (s === 429) return 'throttled';
      // CometBFT answers URI-form errors with HTTP 500 and a JSON-RPC error body (the
      // chain's answer); 502-504 come from a proxy or a node that is down.
      if (s < 200 || s > 500) return 'node-failure';
      const t = reply.text;
      const uri = call.raw === '';
      // A 4xx to a URI call is the node's answer to this request, not a sign of trouble:
      // GET /<unknown> gets Go's http.NotFound ("404 page not found", plain text).
      const refused: Verdict = uri && s >= 400 && s < 500 ? 'chain-error' : 'node-failure';
      if (!isObjectText(t)) return refused;
      // The core reads the error of JSON-RPC items; URI answers are read here.
      const err = reply.error ?? (uri ? replyError(t) : undefined);
      if (err === undefined) return s < 300 ? 'ok' : refused;
      // The reason is in `data` ("height 3 is not available, lowest height is 900").
      return PRUNED.test(err.message) || PRUNED.test(memberRaw(t, 'error') ?? '') ? 'pruned' : 'chain-error';
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.request({ method: 'GET', path: '/status' }, timeoutMs);
      if (res.status < 200 || res.status >= 300) throw new Error(`probe answered HTTP ${res.status}`);
      const body = JSON.parse(res.text) as { result?: { sync_info?: Record<string, unknown> } } | null;
      const sync = body?.result?.sync_info;
      const latest = decimalHeight(sync?.latest_block_height);
      if (latest === undefined) throw new Error('probe answer has no latest_block_height');
      const earliest = decimalHeight(sync?.earliest_block_height);
      const hash = sync?.latest_block_hash;
      return {
        height: latest,
        ...(earliest === undefined ? {} : { earliest }),
        ...(typeof hash === 'string' && hash !== '' ? { hash } : {}),
      };
    },
  };
}

export default definePlugin({
  name: 'sdk-rpc',
  validateOptions(options): Problems {
    const problems: Problems = [];
    unknownKeys(options, ['fullHistory', 'costs', 'blockTimeMs'], problems);
    positiveInt(options, 'fullHistory', problems);
    positiveInt(options, 'blockTimeMs', problems);
    costTable(options, '{ tx_search: 5, "broadcast_*": 2 }', problems);
    return problems;
  },
  create(ctx) {
    const opts = ctx.options;
    return createHandler(
      ctx.limits,
      intOption(opts, 'fullHistory', 128),
      new CostTable(DEFAULT_COSTS, costsOption(opts)),
      intOption(opts, 'blockTimeMs', DEFAULT_BLOCK_TIME_MS),
    );
  },
});
