// EVM chains (JSON-RPC 2.0 over POST at the root; batches are arrays): the codecs
// (parsing, verdicts with "pruned" and "oversize" answers read, filters, resubmitted
// transactions, getLogs parts), WebSocket subscriptions, the head probe and what a node
// says it serves (describe.ts). How each call is routed is routing.ts; getLogs ranges
// are logs.ts; the core does the rest.

import {
  allowMethodsOption,
  costsOption,
  CostsSchema,
  CostTable,
  DEFAULT_BLOCK_TIME_MS,
  definePlugin,
  exactNames,
  hexSubscriptionId,
  idFirstUnsubscribe,
  intOption,
  jsonRpcAtRoot,
  jsonRpcVerdict,
  NameList,
  namesOption,
  OptionsSchema,
  parseJsonRpcBody,
  PatternList,
  PositiveInt,
  Type,
  type ChainHandler,
  type JsonLimits,
  type JsonRpcCodec,
  type NodeHead,
  type VerifyMode,
} from 'noderouter/plugin';
import { evmAgreement } from './agreement.js';
import { describeEvm } from './describe.js';
import { HEX, OVERSIZE, splitLogs } from './logs.js';
import { PRUNED } from './methods.js';
import { evmRouting, type RoutingOptions } from './routing.js';
import { checkAnswer, checkHead } from './verify/index.js';

const DEFAULT_COSTS: Readonly<Record<string, number>> = { getLogs: 5, 'debug_*': 10, 'trace_*': 10 };
/** Read by classify inside params (ranges, and the contracts a call targets); geth matches them in any case, so other spellings are refused. */
const PARAM_NAMES = exactNames(['fromBlock', 'toBlock', 'blockHash', 'blockNumber', 'to', 'address', 'toAddress', 'stateOverrides']);
/** A resubmitted transaction a node already holds: accepted all the same (geth, erigon, nethermind, reth wordings). */
const ALREADY_KNOWN = /already known|known transaction|already imported|transaction already exists/i;

interface EvmOptions extends RoutingOptions {
  readonly limits: JsonLimits;
  readonly verify: VerifyMode;
}

function createHandler(o: EvmOptions): ChainHandler<undefined> {
  const { limits } = o;
  const probeBody = `{"jsonrpc":"2.0","id":1,"method":"${o.namespaces[0] ?? 'eth'}_getBlockByNumber","params":["latest",false]}`;
  const classify = evmRouting(o);
  const isGetLogs = (method: string): boolean => method.endsWith('_getLogs');

  const jsonrpc: JsonRpcCodec<undefined> = {
    parse: (text) => parseJsonRpcBody(text, limits, { names: PARAM_NAMES }),
    judge(call, reply) {
      // A range or result set too big for this node: the core cuts the call in halves.
      if (reply.error !== undefined && isGetLogs(call.method) && OVERSIZE.test(reply.error.message)) return 'oversize';
      return jsonRpcVerdict(reply, PRUNED);
    },
    // geth forgets a filter not polled for 5 minutes.
    state: { notFound: { code: -32000, message: 'filter not found' }, newId: hexSubscriptionId, idleMs: 5 * 60_000 },
    alreadyAccepted: (reply) => reply.error !== undefined && ALREADY_KNOWN.test(reply.error.message),
    // Blocks whose hash is their header's (and transactions root, with full transactions), transactions and receipts that are the ones asked for.
    check: (call, reply) => checkAnswer(call, reply, o.namespaces),
    split: (call, how, view) => (isGetLogs(call.method) ? splitLogs(call, how, o.getLogsMaxRange, view.head) : undefined),
    // eth_subscribe (newHeads, logs, …) in every configured namespace, answered as geth does.
    subscriptions: {
      methods: Object.fromEntries(o.namespaces.map((ns) => [`${ns}_subscribe`, `${ns}_unsubscribe`])),
      newId: hexSubscriptionId,
      unknownId: { code: -32000, message: 'subscription not found' },
      unsubscribe: idFirstUnsubscribe,
    },
  };

  return {
    sample: { method: 'POST', path: '/', body: `{"jsonrpc":"2.0","id":1,"method":"${o.namespaces[0] ?? 'eth'}_blockNumber"}` },
    jsonrpc,
    http: jsonRpcAtRoot(jsonrpc),
    classify,
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.http.request({ method: 'POST', path: '/', body: probeBody }, timeoutMs);
      if (res.status < 200 || res.status >= 300) throw new Error(`probe answered HTTP ${res.status}`);
      const body = JSON.parse(res.text) as { result?: Readonly<Record<string, unknown>> | null } | null;
      const block = body?.result;
      const n = block?.number;
      if (typeof n !== 'string' || !HEX.test(n)) throw new Error('probe answer has no block number');
      const hash = block?.hash;
      const head: NodeHead = typeof hash === 'string' ? { height: parseInt(n, 16), hash } : { height: parseInt(n, 16) };
      return o.verify === 'off' || block === null || block === undefined ? head : { ...head, check: checkHead(block) };
    },
    describe: (node, timeoutMs) => describeEvm(node, o.namespaces[0] ?? 'eth', timeoutMs),
    agreement: evmAgreement(o.namespaces),
  };
}

export default definePlugin({
  name: 'evm',
  contract: 2,
  optionsSchema: OptionsSchema({
    namespaces: NameList('[eth, evm]'),
    fullHistory: PositiveInt(),
    costs: CostsSchema('{ getLogs: 5, "trace_*": 10 }'),
    blockTimeMs: PositiveInt(),
    finalityDepth: PositiveInt(),
    allowMethods: PatternList('["admin_peers", "eth_sign"]'),
    openMethods: PatternList('["admin_peers", "eth_sign"]'),
    getLogsMaxRange: Type.Integer({ minimum: 0, errorMessage: 'must be 0 (any range) or a positive integer' }),
    getLogsSplit: Type.Boolean(),
  }),
  create(ctx) {
    const opts = ctx.options;
    return createHandler({
      limits: ctx.limits,
      verify: ctx.verify ?? 'off',
      namespaces: namesOption(opts, 'namespaces', ['eth', 'evm']),
      fullHistory: intOption(opts, 'fullHistory', 128),
      blockTimeMs: intOption(opts, 'blockTimeMs', DEFAULT_BLOCK_TIME_MS),
      finalityDepth: intOption(opts, 'finalityDepth', 64),
      allowMethods: allowMethodsOption(opts),
      getLogsMaxRange: opts.getLogsMaxRange === 0 ? 0 : intOption(opts, 'getLogsMaxRange', 10_000),
      getLogsSplit: opts.getLogsSplit !== false,
      costs: new CostTable(DEFAULT_COSTS, costsOption(opts)),
    });
  },
});
