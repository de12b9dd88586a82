// Cosmos SDK REST (gRPC-gateway) of SDK chains: GET paths pass through as they are
// (`/cosmos/…` on real nodes, `/sdk/…` in the spec), POST too (tx broadcast). A
// historical read names its height in the `x-cosmos-block-height` header (or a
// `height` query); below what full nodes keep, it goes to an archive node. Labels are
// route templates (routes.ts), never raw paths: paths carry addresses.

import {
  atHeight,
  costsOption,
  CostsSchema,
  CostTable,
  decimalHeader,
  decimalHeight,
  DEFAULT_BLOCK_TIME_MS,
  definePlugin,
  intOption,
  isObjectText,
  jsonSame,
  NameList,
  namesOption,
  OptionsSchema,
  PositiveInt,
  queryValues,
  type ChainHandler,
  type NodeHead,
  type PassthroughReply,
  type PoolView,
  type Routing,
  type UpstreamRequest,
  type Verdict,
} from 'noderouter/plugin';
import { describeRest } from './describe.js';
import { matchRoute, ROUTES } from './routes.js';

const SLASH = 47;
/** Parameter routes change only by governance: kept a little longer than a block. */
const PARAMS = /\/params(?:\/[^/]+)?$/;
const PARAMS_TTL_MS = 10_000;
/** gRPC UNAVAILABLE: the app (or its store) cannot serve right now, which is the node's trouble. */
const GRPC_UNAVAILABLE = 14;
/** The route that broadcasts a transaction. */
const BROADCAST_ROUTE = '/tx/v1beta1/txs';
/** The header in which SDK clients pin a query to a height; its answer header is relayed back. */
const HEIGHT_HEADER = 'x-cosmos-block-height';
const HEIGHT_ANSWER_HEADER = 'grpc-metadata-x-cosmos-block-height';
/** What the SDK says when a node no longer holds a height's state. */
const PRUNED = /version does not exist|is not available|pruned|lowest height is/i;

const AGREE = jsonSame();
/** A path naming its block by number (`…/blocks/123`). */
const AT_BLOCK = /\/blocks\/\d+$/;

interface RestMeta {
  /** The height a historical read is pinned to; undefined for the latest state (and height 0). */
  readonly height: number | undefined;
  /** POST (broadcast, simulate): never cached, never sent twice. */
  readonly write: boolean;
}

/** The older of two heights (the one that reaches furthest into history). */
function lowest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** A read pinned by the height header: the header is part of what the answer depends on. */
const HEIGHT_VARY: readonly string[] = Object.freeze([HEIGHT_HEADER]);
function withHeightKey(r: Routing): Routing {
  return r.cacheTtlMs === undefined ? r : { ...r, cacheVary: HEIGHT_VARY };
}

/** 2xx JSON is ok; 429 backs off; pruned words send it to archive; 4xx is the chain's; 5xx see below. */
function restVerdict(reply: PassthroughReply): Verdict {
  const s = reply.status;
  if (s === 429) return 'throttled';
  const json = isObjectText(reply.text);
  if (s >= 200 && s < 300) return json ? 'ok' : 'node_failure';
  if (s < 400 || s >= 600) return 'node_failure';
  // Errors are rare: reading the body here costs the hot path nothing.
  let body: { code?: unknown; message?: unknown } | undefined;
  if (json) {
    try {
      body = JSON.parse(reply.text) as { code?: unknown; message?: unknown };
    } catch {
      body = undefined;
    }
  }
  const message = typeof body?.message === 'string' ? body.message : undefined;
  if (message !== undefined && PRUNED.test(message)) return 'pruned';
  // Any other 4xx is the chain's answer to this request (a bad address, an unknown
  // route: the SDK's router answers text/plain "404 page not found").
  if (s < 500) return 'chain_error';
  // A gRPC status from the app is the chain's answer, except UNAVAILABLE.
  if (typeof body?.code !== 'number' || message === undefined) return 'node_failure';
  return body.code === GRPC_UNAVAILABLE ? 'node_failure' : 'chain_error';
}

function createHandler(namespaces: readonly string[], fullHistory: number, costs: CostTable, blockTimeMs: number): ChainHandler<RestMeta> {
  /** Which configured namespace opens the path (`/cosmos/…`), by comparison, not by slicing. */
  const namespaceOf = (path: string): number => {
    for (let i = 0; i < namespaces.length; i++) {
      const ns = namespaces[i] as string;
      if (path.startsWith(ns, 1) && path.charCodeAt(ns.length + 1) === SLASH) return i;
    }
    return -1;
  };
  /**
   * The routing of a read of the latest state: params routes change only by governance.
   * A read is hedged: a hung node costs the hedge delay, not the attempt timeout.
   */
  const latest = (path: string, cost: number, label: string): Routing => ({
    archive: false,
    cost,
    label,
    cacheTtlMs: PARAMS.test(path) ? PARAMS_TTL_MS : blockTimeMs,
    hedge: true,
  });
  // Every namespace × route, made once: classify allocates nothing for known routes.
  const known = namespaces.map((ns) =>
    ROUTES.map((r) => {
      const label = `/${ns}${r}`;
      const cost = costs.of(label, label);
      return {
        label,
        cost,
        // Routes that carry a height in a path segment (blocks/{height}): its place among the path's segments.
        heightAt: r.split('/').indexOf('{height}') + 1,
        read: Object.freeze(latest(label, cost, label)),
        // Broadcasting a transaction goes once to every full node; other writes (simulate) to one.
        write: Object.freeze({
          archive: false,
          fullHolds: r === BROADCAST_ROUTE,
          cost,
          label,
          retry: 'never' as const,
          broadcast: r === BROADCAST_ROUTE,
        }),
      };
    }),
  );
  const probePath = `/${namespaces[0] ?? 'cosmos'}/base/tendermint/v1beta1/blocks/latest`;

  return {
    sample: { method: 'GET', path: `/${namespaces[0] ?? 'cosmos'}/auth/v1beta1/params` },
    // SDK clients pin a query to a height in this header.
    corsHeaders: [HEIGHT_HEADER],
    passthrough: { judge: (_call, reply) => restVerdict(reply), relayHeaders: [HEIGHT_ANSWER_HEADER] },
    http: {
      errorStyle: 'rest',
      parse(req) {
        const write = req.method === 'POST';
        if (!write && req.method !== 'GET' && req.method !== 'HEAD') {
          return { kind: 'unsupported', status: 405, message: 'REST endpoints take GET (and POST for transactions)' };
        }
        const header = decimalHeader(req.headers[HEIGHT_HEADER], HEIGHT_HEADER);
        // Else a `height` query, however encoded, as the node decodes it; of several, the oldest.
        let height = decimalHeight(header);
        if (header === undefined) for (const v of queryValues(req.query, 'height')) height = lowest(height, decimalHeight(v));
        const path = req.query === '' ? req.path : `${req.path}?${req.query}`;
        const heightHeaders = header === undefined ? undefined : { [HEIGHT_HEADER]: header };
        let upstream: UpstreamRequest;
        if (write) {
          const ct = req.headers['content-type'];
          const headers = { ...heightHeaders, 'content-type': typeof ct === 'string' ? ct : 'application/json' };
          upstream = { method: 'POST', path, headers, body: req.body };
        } else {
          // HEAD is asked as GET: koa drops the body of a HEAD answer.
          upstream = heightHeaders === undefined ? { method: 'GET', path } : { method: 'GET', path, headers: heightHeaders };
        }
        return {
          kind: 'passthrough',
          call: { kind: 'passthrough', method: req.path, request: upstream, meta: { height, write } },
        };
      },
    },
    classify(call, view: PoolView): Routing {
      const path = call.method;
      const ns = namespaceOf(path);
      const r = ns < 0 ? undefined : known[ns]?.[matchRoute(path, (namespaces[ns] as string).length + 1)];
      const { height, write } = call.meta;
      if (r === undefined) {
        // Unknown routes are the main path: ordinary, labelled "other" (the path holds addresses).
        const cost = costs.of(path, path);
        if (height !== undefined) return withHeightKey(atHeight(height, view, fullHistory, cost, 'other', !write));
        return write ? { archive: false, cost, label: 'other', retry: 'never' } : latest(path, cost, 'other');
      }
      // A height in the path reads that block's state as much as a height header does: the older one decides.
      const h = r.heightAt > 0 ? lowest(height, decimalHeight(path.split('/')[r.heightAt])) : height;
      if (h !== undefined) return withHeightKey(atHeight(h, view, fullHistory, r.cost, r.label, !write));
      return write ? r.write : r.read;
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.http.request({ method: 'GET', path: probePath }, timeoutMs);
      if (res.status < 200 || res.status >= 300) throw new Error(`probe answered HTTP ${res.status}`);
      const body = JSON.parse(res.text) as { block?: { header?: { height?: unknown } }; block_id?: { hash?: unknown } } | null;
      const height = decimalHeight(body?.block?.header?.height);
      if (height === undefined) throw new Error('probe answer has no block.header.height');
      const hash = body?.block_id?.hash;
      return typeof hash === 'string' && hash !== '' ? { height, hash } : { height };
    },
    describe: (node, timeoutMs) => describeRest(node, namespaces[0] ?? 'cosmos', timeoutMs),
    // Reads at a height (the header, a `height` query, or a block in the path) agree
    // when their bodies are equal: a block's app_hash among them. Reads of the latest
    // state may rightly differ between honest nodes and are not compared.
    agreement: {
      defaults: namespaces.flatMap((ns) => [`/${ns}/bank/*`, `/${ns}/base/tendermint/v1beta1/blocks/*`, `/${ns}/staking/*`]),
      rule: (call) => (call.meta.write || (call.meta.height === undefined && !AT_BLOCK.test(call.method)) ? undefined : AGREE),
    },
  };
}

export default definePlugin({
  name: 'sdk-rest',
  contract: 2,
  optionsSchema: OptionsSchema({
    namespaces: NameList('[cosmos, sdk]'),
    fullHistory: PositiveInt(),
    costs: CostsSchema('{ "/cosmos/tx/v1beta1/txs": 2, "/cosmwasm/*": 3 }'),
    blockTimeMs: PositiveInt(),
  }),
  create(ctx) {
    const opts = ctx.options;
    return createHandler(
      namesOption(opts, 'namespaces', ['cosmos', 'sdk']),
      intOption(opts, 'fullHistory', 128),
      new CostTable({}, costsOption(opts)),
      intOption(opts, 'blockTimeMs', DEFAULT_BLOCK_TIME_MS),
    );
  },
});
