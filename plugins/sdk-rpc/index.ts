// CometBFT (Tendermint) RPC of SDK chains: JSON-RPC POST at the root or at
// /<method>, and the GET URI form (/status, /block?height=5) passed through as is.
// Nodes report the earliest height they retain, so a call pinned to a height goes to
// a node that holds it. Answers, ids included (abci_info's -1), are relayed as sent.
// GET / (CometBFT's HTML list of routes) is not served: it is no call of the chain.

import {
  atHeight,
  costsOption,
  CostsSchema,
  CostTable,
  decimalHeight,
  DEFAULT_BLOCK_TIME_MS,
  definePlugin,
  globMatcher,
  intOption,
  isObjectText,
  memberRaw,
  jsonRpcSame,
  OptionsSchema,
  parseJsonRpcBody,
  PatternList,
  allowMethodsOption,
  PositiveInt,
  queryValues,
  replyError,
  type ChainHandler,
  type JsonLimits,
  type JsonRpcCodec,
  type NodeHead,
  type PoolView,
  type Routing,
  type RpcErrorInfo,
  type Verdict,
} from 'noderouter/plugin';
import { describeComet } from './describe.js';

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
/** CometBFT's node administration (the `unsafe` RPC): refused unless the operator allows it per chain (options.allowMethods). */
const NODE_ADMIN: readonly string[] = ['unsafe_*', 'dial_seeds', 'dial_peers'];
const NOT_SERVED: Routing = Object.freeze({
  archive: false,
  cost: 0,
  label: 'other',
  refuse: 'Node administration methods are not served on this endpoint',
});
/** CometBFT's answer for a height below what the node keeps (in `data`, message "Internal error"). */
const PRUNED = /is not available, lowest height is|pruned/i;
const METHOD_PATH = /^\/([a-z_]{1,64})$/;
/** URI arguments are JSON-ish: `height=5` or `height="5"`. */
const QUOTED = /^"(.*)"$/;

const AGREE = jsonRpcSame();

/** What parse reads of a call: the height it is pinned to (URI query, or named or positional params). */
interface RpcMeta {
  readonly height: number | undefined;
}

/** Broadcasts are sent once: a node that may have taken the transaction is never asked again. */
/** CometBFT's answer (in `data`) for a transaction its mempool holds already. */
const IN_CACHE = /tx already exists in cache/i;
const SUBMITS: ReadonlySet<string> = new Set(['broadcast_tx_sync', 'broadcast_tx_async', 'broadcast_tx_commit', 'broadcast_evidence']);

/** The height of a URI-form call, decoded as CometBFT decodes it (percent-encoding, quotes); of several, the oldest. */
function uriHeight(method: string, query: string): number | undefined {
  const param = HEIGHT_PARAM.get(method);
  if (param === undefined) return undefined;
  let height: number | undefined;
  for (const v of queryValues(query, param[0])) {
    const h = decimalHeight(QUOTED.exec(v)?.[1] ?? v);
    if (h !== undefined && (height === undefined || h < height)) height = h;
  }
  return height;
}

/** Height of a JSON-RPC call, in the named (`{height:"5"}`) or positional (`["5"]`) form. */
function paramsHeight(method: string, p: unknown): RpcMeta {
  return { height: heightParam(method, p) };
}

function heightParam(method: string, p: unknown): number | undefined {
  const param = HEIGHT_PARAM.get(method);
  if (param === undefined || p === null || typeof p !== 'object') return undefined;
  return decimalHeight(Array.isArray(p) ? (p as readonly unknown[])[param[1]] : (p as Record<string, unknown>)[param[0]]);
}

interface MethodInfo {
  readonly label: string;
  readonly cost: number;
  /** The routing without a height, built once: classify allocates none for it. */
  readonly latest: Routing;
}

/**
 * CometBFT answers URI-form errors with HTTP 500 and a JSON-RPC error body (the chain's
 * answer); 502-504 come from a proxy or a node that is down. `refused` is the verdict on
 * an answer that is no JSON-RPC answer at all.
 */
function cometVerdict(status: number, text: string, err: RpcErrorInfo | undefined, refused: Verdict): Verdict {
  if (status === 429) return 'throttled';
  if (status < 200 || status > 500) return 'node_failure';
  if (!isObjectText(text)) return refused;
  if (err === undefined) return status < 300 ? 'ok' : refused;
  // The reason is in `data` ("height 3 is not available, lowest height is 900").
  return PRUNED.test(err.message) || PRUNED.test(memberRaw(text, 'error') ?? '') ? 'pruned' : 'chain_error';
}

function createHandler(
  limits: JsonLimits,
  fullHistory: number,
  costs: CostTable,
  blockTimeMs: number,
  allowMethods: readonly string[],
): ChainHandler<RpcMeta> {
  const closed = globMatcher(NODE_ADMIN);
  const opened = globMatcher(allowMethods);
  const known = new Map<string, MethodInfo>();
  for (const label of KNOWN) {
    const cost = costs.of(label, label);
    const cache = HEAD_READS.has(label) ? { cacheTtlMs: blockTimeMs } : {};
    // Broadcasts go once to every full node, the first acceptance answered; reads are
    // hedged (a hung node costs the hedge delay, not the attempt timeout).
    const sending = SUBMITS.has(label) ? { retry: 'never' as const, broadcast: true } : { hedge: true };
    // Head reads and submits read nothing full nodes lack; reads by hash and searches may reach back.
    const fullHolds = HEAD_READS.has(label) || SUBMITS.has(label);
    known.set(label, { label, cost, latest: Object.freeze({ archive: false, fullHolds, cost, label, ...cache, ...sending }) });
  }
  const jsonrpc: JsonRpcCodec<RpcMeta> = {
    parse: (text) => parseJsonRpcBody(text, limits, { meta: paramsHeight }),
    judge: (_call, reply) => cometVerdict(reply.status, reply.text, reply.error, 'node_failure'),
    // abci_info and the URI form are answered with id -1 whatever was sent.
    fixedReplyIds: ['-1'],
    // A transaction a node holds already (in its mempool cache) is accepted all the same.
    alreadyAccepted: (reply) => IN_CACHE.test(reply.text),
  };

  return {
    sample: { method: 'POST', path: '/abci_info', body: '{"jsonrpc":"2.0","id":1,"method":"abci_info"}' },
    jsonrpc,
    // A 4xx to a URI call is the node's answer to this request, not a sign of trouble:
    // GET /<unknown> gets Go's http.NotFound ("404 page not found", plain text).
    passthrough: {
      judge: (_call, r) =>
        cometVerdict(r.status, r.text, replyError(r.text), r.status >= 400 && r.status < 500 ? 'chain_error' : 'node_failure'),
    },
    http: {
      errorStyle: 'jsonrpc',
      parse(req) {
        if (req.method === 'POST') {
          // At /<method> the body's own method is used as is (CometBFT does the same).
          if (req.path !== '/' && !METHOD_PATH.test(req.path)) {
            return { kind: 'unsupported', status: 404, message: 'POST a JSON-RPC body to the root or to /<method>' };
          }
          return jsonrpc.parse(req.body.toString('utf8'));
        }
        if (req.method === 'GET' || req.method === 'HEAD') {
          const m = METHOD_PATH.exec(req.path);
          if (m === null) return { kind: 'unsupported', status: 404, message: 'GET /<method>?<args>, e.g. /status or /block?height=5' };
          const method = m[1] as string;
          const path = req.query === '' ? req.path : `${req.path}?${req.query}`;
          return {
            kind: 'passthrough',
            call: { kind: 'passthrough', method, request: { method: 'GET', path }, meta: { height: uriHeight(method, req.query) } },
          };
        }
        return { kind: 'unsupported', status: 405, message: 'CometBFT RPC takes POST (JSON-RPC) or GET (URI form)' };
      },
    },
    classify(call, view: PoolView): Routing {
      const m = known.get(call.method);
      // Unknown methods are the main path: ordinary, labelled "other".
      if (m === undefined) {
        if (closed(call.method) && !opened(call.method)) return NOT_SERVED;
        return { archive: false, cost: costs.of(call.method, call.method), label: 'other' };
      }
      const h = call.meta.height;
      return h === undefined ? m.latest : atHeight(h, view, fullHistory, m.cost, m.label, true);
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.http.request({ method: 'GET', path: '/status' }, timeoutMs);
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
    describe: describeComet,
    // Reads at a height agree when their results are equal: a block's app_hash among
    // them, so a node whose app hash at a height differs from the majority's is disputed.
    // A read at the latest height may rightly differ and is not compared.
    agreement: {
      defaults: ['abci_query', 'block', 'validators', 'header', 'commit', 'block_results'],
      rule: (call) => (call.meta.height === undefined ? undefined : AGREE),
    },
  };
}

export default definePlugin({
  name: 'sdk-rpc',
  contract: 2,
  optionsSchema: OptionsSchema({
    fullHistory: PositiveInt(),
    costs: CostsSchema('{ tx_search: 5, "broadcast_*": 2 }'),
    blockTimeMs: PositiveInt(),
    allowMethods: PatternList('["unsafe_flush_mempool"]'),
    openMethods: PatternList('["unsafe_flush_mempool"]'),
  }),
  create(ctx) {
    const opts = ctx.options;
    return createHandler(
      ctx.limits,
      intOption(opts, 'fullHistory', 128),
      new CostTable(DEFAULT_COSTS, costsOption(opts)),
      intOption(opts, 'blockTimeMs', DEFAULT_BLOCK_TIME_MS),
      allowMethodsOption(opts),
    );
  },
});
