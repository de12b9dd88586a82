// The object-model chain (Sui-style JSON-RPC 2.0 over POST at the root). Its head is
// the latest checkpoint; reads of past object versions and of checkpoints older
// than the full nodes keep go to archive nodes.

import { parseJsonRpcBody } from '../../src/jsonrpc/envelope.js';
import { definePlugin, type JsonLimits, type ChainHandler, type NodeHead, type Routing } from '../../src/plugin.js';
import { DEFAULT_BLOCK_TIME_MS, FINAL_TTL_MS } from '../shared/cache.js';
import { CostTable } from '../shared/costs.js';
import { jsonRpcVerdict, splitMethod } from '../shared/jsonrpc-verdict.js';
import { checkOptions, type Problems } from '../shared/options.js';

const KNOWN = new Set([
  'getBalance',
  'getAllBalances',
  'getCoins',
  'getAllCoins',
  'getObject',
  'multiGetObjects',
  'tryGetPastObject',
  'tryMultiGetPastObjects',
  'getOwnedObjects',
  'getLatestCheckpointSequenceNumber',
  'getCheckpoint',
  'getCheckpoints',
  'getChainIdentifier',
  'getReferenceGasPrice',
  'getTransactionBlock',
  'multiGetTransactionBlocks',
  'queryTransactionBlocks',
  'queryEvents',
  'getTotalTransactionBlocks',
  'getProtocolConfig',
  'getLatestSuiSystemState',
  'dryRunTransactionBlock',
  'executeTransactionBlock',
  'devInspectTransactionBlock',
  'getNormalizedMoveModule',
]);
const PAST_OBJECTS = new Set(['tryGetPastObject', 'tryMultiGetPastObjects']);
/** Reads of the latest state, kept about a checkpoint's time. */
const HEAD_READS = new Set([
  'getLatestCheckpointSequenceNumber',
  'getReferenceGasPrice',
  'getBalance',
  'getAllBalances',
  'getTotalTransactionBlocks',
]);
const PRUNED = /pruned|is not available|not available on this fullnode/i;
const DECIMAL = /^\d{1,20}$/;

function createHandler(
  limits: JsonLimits,
  namespaces: ReadonlySet<string>,
  firstNs: string,
  fullHistory: number,
  costs: CostTable,
  blockTimeMs: number,
): ChainHandler {
  const probeBody = `{"jsonrpc":"2.0","id":1,"method":"${firstNs}_getLatestCheckpointSequenceNumber","params":[]}`;
  const labels = new Map<string, string>();
  return {
    errorStyle: 'jsonrpc',
    parse(req) {
      if (req.method !== 'POST') return { kind: 'unsupported', status: 405, message: 'JSON-RPC endpoints take POST' };
      if (req.path !== '/') return { kind: 'unsupported', status: 404, message: 'JSON-RPC is served at the endpoint root' };
      const { batch, items } = parseJsonRpcBody(req.body.toString('utf8'), limits);
      return { kind: 'jsonrpc', batch, items };
    },
    classify(call, view): Routing {
      const [ns, name] = splitMethod(call.method);
      const cost = costs.of(call.method, name);
      let label = labels.get(call.method);
      if (label === undefined) {
        label = namespaces.has(ns) && KNOWN.has(name) ? call.method : 'other';
        if (labels.size < 1024) labels.set(call.method, label);
      }
      if (!namespaces.has(ns)) return { archive: false, cost, label };
      if (name === 'getChainIdentifier') return { archive: false, cost, label, cacheTtlMs: Infinity };
      // A past object version never changes.
      if (PAST_OBJECTS.has(name)) return { archive: true, cost, label, cacheTtlMs: FINAL_TTL_MS };
      if (name === 'getCheckpoint' && Array.isArray(call.params) && view.head !== undefined) {
        const id = (call.params as unknown[])[0];
        if (typeof id === 'string' && DECIMAL.test(id)) {
          const n = Number(id);
          // Checkpoints are final once certified: any below the head is kept long.
          const cache = n <= view.head ? { cacheTtlMs: FINAL_TTL_MS, cacheHeight: n } : {};
          return { archive: n < view.head - fullHistory, cost, label, ...cache };
        }
      }
      if (HEAD_READS.has(name)) return { archive: false, cost, label, cacheTtlMs: blockTimeMs };
      return { archive: false, cost, label };
    },
    judge(_call, reply) {
      return jsonRpcVerdict(reply, PRUNED);
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.request({ method: 'POST', path: '/', body: probeBody }, timeoutMs);
      if (res.status !== 200) throw new Error(`probe answered HTTP ${res.status}`);
      const body = JSON.parse(res.text) as { result?: unknown };
      if (typeof body.result !== 'string' || !DECIMAL.test(body.result)) throw new Error('probe answer has no checkpoint');
      return { height: Number(body.result) };
    },
  };
}

export default definePlugin({
  name: 'objectx',
  validateOptions: (options): Problems => checkOptions(options, ['namespaces', 'fullHistory', 'costs', 'blockTimeMs']),
  create(ctx) {
    const namespaces = (ctx.options.namespaces as string[] | undefined) ?? ['sui', 'suix', 'objectx'];
    return createHandler(
      ctx.limits,
      new Set(namespaces),
      namespaces[0] ?? 'sui',
      (ctx.options.fullHistory as number | undefined) ?? 128,
      new CostTable({ queryEvents: 5, queryTransactionBlocks: 5 }, ctx.options.costs),
      (ctx.options.blockTimeMs as number | undefined) ?? DEFAULT_BLOCK_TIME_MS,
    );
  },
});
