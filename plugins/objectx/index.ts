// The object-model chain (Sui-style JSON-RPC 2.0 over POST at the root). Its head is
// the latest checkpoint (a decimal string); reads of past object versions and of
// checkpoints older than the full nodes keep go to archive nodes. Other reads go to
// full nodes, whose "pruned" answer sends them on to archive (core retry).

import {
  costsOption,
  CostsSchema,
  CostTable,
  DEFAULT_BLOCK_TIME_MS,
  definePlugin,
  FINAL_TTL_MS,
  hexSubscriptionId,
  idFirstUnsubscribe,
  intOption,
  jsonRpcAtRoot,
  jsonRpcSame,
  jsonRpcVerdict,
  methodTable,
  NameList,
  namesOption,
  OptionsSchema,
  parseJsonRpcBody,
  PositiveInt,
  splitMethod,
  type Call,
  type ChainHandler,
  type JsonLimits,
  type JsonRpcCodec,
  type NodeHead,
  type PoolView,
  type Routing,
} from 'noderouter/plugin';
import { describeObjectx } from './describe.js';

/** Methods whose answers may be compared across nodes (after the namespace). */
const AGREED: ReadonlySet<string> = new Set([
  'getBalance',
  'getAllBalances',
  'getObject',
  'multiGetObjects',
  'tryGetPastObject',
  'getCheckpoint',
]);
const AGREE = jsonRpcSame();

/** How a known method is routed and cached. */
type Kind = 'plain' | 'past' | 'checkpoint' | 'constant' | 'head' | 'submit';

const KNOWN: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  // Past object versions: only archive nodes keep them; a version never changes.
  ['tryGetPastObject', 'past'],
  ['tryMultiGetPastObjects', 'past'],
  ['getCheckpoint', 'checkpoint'],
  ['getChainIdentifier', 'constant'],
  // Latest-state reads, kept about a checkpoint's time.
  ['getLatestCheckpointSequenceNumber', 'head'],
  ['getReferenceGasPrice', 'head'],
  ['getBalance', 'head'],
  ['getAllBalances', 'head'],
  ['getTotalTransactionBlocks', 'head'],
  // A transaction is sent once: a node that may have taken it is never asked again.
  ['executeTransactionBlock', 'submit'],
  ...[
    'getCoins',
    'getAllCoins',
    'getCoinMetadata',
    'getTotalSupply',
    'getObject',
    'multiGetObjects',
    'getOwnedObjects',
    'getDynamicFields',
    'getDynamicFieldObject',
    'getCheckpoints',
    'getTransactionBlock',
    'multiGetTransactionBlocks',
    'queryTransactionBlocks',
    'queryEvents',
    'getEvents',
    'getProtocolConfig',
    'getLatestSuiSystemState',
    'getStakes',
    'getValidatorsApy',
    'getCommitteeInfo',
    'resolveNameServiceAddress',
    'dryRunTransactionBlock',
    'devInspectTransactionBlock',
    'getNormalizedMoveModule',
    'getNormalizedMoveFunction',
    'getNormalizedMoveStruct',
    'getMoveFunctionArgTypes',
    'subscribeEvent',
    'subscribeTransaction',
    'unsubscribeEvent',
    'unsubscribeTransaction',
  ].map((n): [string, Kind] => [n, 'plain']),
]);
const PRUNED = /pruned|is not available/i;
/** A transaction block a node executed already (accepted all the same when broadcast). */
const EXECUTED = /already (been )?executed/i;
const DECIMAL = /^\d{1,15}$/;
const DEFAULT_COSTS: Readonly<Record<string, number>> = { queryEvents: 5, queryTransactionBlocks: 5 };
/** The request headers the Sui TypeScript SDK sets: pages on other origins send them too. */
const CLIENT_HEADERS: readonly string[] = Object.freeze([
  'client-sdk-type',
  'client-sdk-version',
  'client-target-api-version',
  'client-request-method',
]);

interface MethodInfo {
  readonly label: string;
  readonly cost: number;
  /** The routing of every method but getCheckpoint, built once: classify allocates none. */
  readonly fixed: Routing | undefined;
}

/** A checkpoint sequence number (`"5"` or 5); undefined for a digest or anything else. */
function sequenceNumber(params: unknown): number | undefined {
  let id: unknown;
  if (Array.isArray(params)) id = (params as readonly unknown[])[0];
  else if (params !== null && typeof params === 'object') id = (params as { id?: unknown }).id;
  if (typeof id === 'number') return Number.isSafeInteger(id) && id >= 0 ? id : undefined;
  return typeof id === 'string' && DECIMAL.test(id) ? Number(id) : undefined;
}

interface ObjectxOptions {
  readonly limits: JsonLimits;
  readonly namespaces: readonly string[];
  readonly fullHistory: number;
  readonly blockTimeMs: number;
  readonly costs: CostTable;
}

function createHandler(o: ObjectxOptions): ChainHandler<undefined> {
  const { limits, fullHistory, blockTimeMs, costs } = o;
  const probeBody = `{"jsonrpc":"2.0","id":1,"method":"${o.namespaces[0] ?? 'sui'}_getLatestCheckpointSequenceNumber","params":[]}`;
  const fixed = (kind: Kind, cost: number, label: string): Routing | undefined => {
    switch (kind) {
      // Reads are hedged: a hung node costs the hedge delay, not the attempt timeout.
      case 'past': // a past object version never changes
        return Object.freeze({ archive: true, cost, label, cacheTtlMs: FINAL_TTL_MS, hedge: true });
      case 'constant':
        return Object.freeze({ archive: false, fullHolds: true, cost, label, cacheTtlMs: Infinity, hedge: true });
      case 'head':
        return Object.freeze({ archive: false, fullHolds: true, cost, label, cacheTtlMs: blockTimeMs, hedge: true });
      case 'plain':
        return Object.freeze({ archive: false, cost, label, hedge: true });
      case 'submit':
        // Sent once to every full node; the first to execute it answers.
        return Object.freeze({ archive: false, fullHolds: true, cost, label, retry: 'never', broadcast: true });
      default:
        return undefined;
    }
  };
  const known = methodTable(o.namespaces, KNOWN.keys(), (method, _ns, name): MethodInfo => {
    const cost = costs.of(method, name);
    return { label: method, cost, fixed: fixed(KNOWN.get(name) ?? 'plain', cost, method) };
  });
  /** Unknown methods are the main path: ordinary, labelled "other". */
  const unknown = (method: string): Routing => ({ archive: false, cost: costs.of(method, splitMethod(method)[1]), label: 'other' });

  const checkpoint = (m: MethodInfo, params: unknown, head: number | undefined): Routing => {
    const n = sequenceNumber(params);
    if (n === undefined || head === undefined) return { archive: false, cost: m.cost, label: m.label, hedge: true };
    const archive = n < head - fullHistory;
    // A certified checkpoint never changes: any at or below the head is kept long.
    if (n <= head)
      return { archive, fullHolds: !archive, cost: m.cost, label: m.label, cacheTtlMs: FINAL_TTL_MS, cacheHeight: n, hedge: true };
    return { archive, fullHolds: true, cost: m.cost, label: m.label, hedge: true };
  };

  const methods: Record<string, string> = {};
  for (const ns of o.namespaces) {
    methods[`${ns}_subscribeEvent`] = `${ns}_unsubscribeEvent`;
    methods[`${ns}_subscribeTransaction`] = `${ns}_unsubscribeTransaction`;
  }
  const jsonrpc: JsonRpcCodec<undefined> = {
    parse: (text) => parseJsonRpcBody(text, limits),
    judge: (_call, reply) => jsonRpcVerdict(reply, PRUNED),
    subscriptions: {
      methods,
      newId: hexSubscriptionId,
      unknownId: { code: -32000, message: 'subscription not found' },
      unsubscribe: idFirstUnsubscribe,
    },
    // A transaction block a node executed already is accepted all the same.
    alreadyAccepted: (reply) => reply.error !== undefined && EXECUTED.test(reply.error.message),
  };

  return {
    sample: { method: 'POST', path: '/', body: probeBody },
    // What the Sui TypeScript SDK sends with every call.
    corsHeaders: CLIENT_HEADERS,
    jsonrpc,
    http: jsonRpcAtRoot(jsonrpc),
    classify(call: Call<undefined>, view: PoolView): Routing {
      const m = known.get(call.method);
      if (m === undefined) return unknown(call.method);
      return m.fixed ?? checkpoint(m, call.kind === 'jsonrpc' ? call.params : undefined, view.head);
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.http.request({ method: 'POST', path: '/', body: probeBody }, timeoutMs);
      if (res.status < 200 || res.status >= 300) throw new Error(`probe answered HTTP ${res.status}`);
      const result = (JSON.parse(res.text) as { result?: unknown } | null)?.result;
      if (typeof result !== 'string' || !DECIMAL.test(result)) throw new Error('probe answer has no checkpoint sequence number');
      return { height: Number(result) };
    },
    describe: (node, timeoutMs) => describeObjectx(node, o.namespaces[0] ?? 'sui', PRUNED, timeoutMs),
    // Balances, objects and past versions agree when their results are equal. A balance
    // or an object at the latest checkpoint names no version: nodes are asked only once
    // they have reached the served head, and one a checkpoint ahead may still differ.
    agreement: {
      defaults: o.namespaces.flatMap((ns) => ['getBalance', 'getObject', 'tryGetPastObject'].map((m) => `${ns}_${m}`)),
      rule(call) {
        if (call.kind !== 'jsonrpc') return undefined;
        const i = call.method.indexOf('_');
        return i > 0 && AGREED.has(call.method.slice(i + 1)) ? AGREE : undefined;
      },
    },
  };
}

export default definePlugin({
  name: 'objectx',
  contract: 2,
  optionsSchema: OptionsSchema({
    namespaces: NameList('[sui, suix, objectx]'),
    fullHistory: PositiveInt(),
    costs: CostsSchema('{ queryEvents: 5 }'),
    blockTimeMs: PositiveInt(),
  }),
  create(ctx) {
    const opts = ctx.options;
    return createHandler({
      limits: ctx.limits,
      namespaces: namesOption(opts, 'namespaces', ['sui', 'suix', 'objectx']),
      fullHistory: intOption(opts, 'fullHistory', 128),
      blockTimeMs: intOption(opts, 'blockTimeMs', DEFAULT_BLOCK_TIME_MS),
      costs: new CostTable(DEFAULT_COSTS, costsOption(opts)),
    });
  },
});
