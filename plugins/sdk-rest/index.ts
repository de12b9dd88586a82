// Cosmos-SDK REST (gRPC-gateway) of SDK chains: paths pass through as they are
// (`/cosmos/…` on real nodes, `/sdk/…` in the spec). A historical read names its
// height in the `x-cosmos-block-height` header (or a `height` query); below what
// full nodes keep, it goes to an archive node. Labels are route templates, never
// raw paths (paths carry addresses).

import { GatewayError } from '../../src/errors.js';
import {
  definePlugin,
  type Call,
  type ChainHandler,
  type NodeHead,
  type PoolView,
  type Routing,
  type UpstreamRequest,
} from '../../src/plugin.js';
import { DEFAULT_BLOCK_TIME_MS, FINAL_TTL_MS } from '../shared/cache.js';
import { CostTable } from '../shared/costs.js';
import { checkOptions, type Problems } from '../shared/options.js';

/** Known routes after the namespace segment; `{}` matches one segment. */
const ROUTES = [
  '/auth/v1beta1/params',
  '/auth/v1beta1/accounts/{}',
  '/auth/v1beta1/accounts',
  '/bank/v1beta1/balances/{}',
  '/bank/v1beta1/balances/{}/by_denom',
  '/bank/v1beta1/spendable_balances/{}',
  '/bank/v1beta1/supply',
  '/bank/v1beta1/supply/by_denom',
  '/bank/v1beta1/params',
  '/bank/v1beta1/denoms_metadata',
  '/base/tendermint/v1beta1/blocks/latest',
  '/base/tendermint/v1beta1/blocks/{}',
  '/base/tendermint/v1beta1/node_info',
  '/base/tendermint/v1beta1/syncing',
  '/base/tendermint/v1beta1/validatorsets/latest',
  '/base/tendermint/v1beta1/validatorsets/{}',
  '/staking/v1beta1/params',
  '/staking/v1beta1/pool',
  '/staking/v1beta1/validators',
  '/staking/v1beta1/validators/{}',
  '/staking/v1beta1/delegations/{}',
  '/distribution/v1beta1/params',
  '/distribution/v1beta1/delegators/{}/rewards',
  '/gov/v1beta1/proposals',
  '/gov/v1/proposals',
  '/mint/v1beta1/params',
  '/mint/v1beta1/inflation',
  '/slashing/v1beta1/params',
  '/tx/v1beta1/txs',
  '/tx/v1beta1/txs/{}',
  '/tx/v1beta1/simulate',
].map((r) => ({ template: r, parts: r.split('/').slice(1) }));

const PRUNED = /version does not exist|is not available|pruned|lowest height is/i;
const DIGITS = /^\d{1,18}$/;
const HEIGHT_QUERY = /(?:^|&)height=(\d{1,18})(?:&|$)/;

interface RestCall extends Call {
  readonly height: number | undefined;
  /** POSTs (transactions) are never cached. */
  readonly write: boolean;
}

/** Parameter routes change only by governance: kept a little longer than a block. */
const PARAMS = /\/params$/;
const PARAMS_TTL_MS = 10_000;

function createHandler(namespaces: readonly string[], fullHistory: number, costs: CostTable, blockTimeMs: number): ChainHandler {
  const labels = new Map<string, string>();

  /** The route template of a path ("other" when unknown), memoised per template shape. */
  const label = (path: string): string => {
    const parts = path.split('/');
    const ns = parts[1] ?? '';
    if (!namespaces.includes(ns)) return 'other';
    const rest = parts.slice(2);
    for (const r of ROUTES) {
      if (r.parts.length !== rest.length) continue;
      let ok = true;
      for (let i = 0; i < rest.length && ok; i++) ok = r.parts[i] === '{}' || r.parts[i] === rest[i];
      if (ok) {
        const key = `${ns}${r.template}`;
        let l = labels.get(key);
        if (l === undefined) {
          l = `/${key}`;
          labels.set(key, l);
        }
        return l;
      }
    }
    return 'other';
  };

  return {
    errorStyle: 'rest',
    parse(req) {
      if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'POST') {
        return { kind: 'unsupported', status: 405, message: 'REST endpoints take GET (and POST for transactions)' };
      }
      const header = req.headers['x-cosmos-block-height'];
      let h: number | undefined;
      const headers: Record<string, string> = {};
      if (header !== undefined) {
        if (typeof header !== 'string' || !DIGITS.test(header)) {
          throw new GatewayError('INVALID_REQUEST', { message: 'x-cosmos-block-height must be a decimal height' });
        }
        h = Number(header);
        headers['x-cosmos-block-height'] = header;
      } else if (req.query !== '') {
        const m = HEIGHT_QUERY.exec(req.query);
        if (m !== null) h = Number(m[1]);
      }
      const path = req.query === '' ? req.path : `${req.path}?${req.query}`;
      let upstream: UpstreamRequest;
      if (req.method === 'POST') {
        const ct = req.headers['content-type'];
        upstream = {
          method: 'POST',
          path,
          headers: { ...headers, 'content-type': typeof ct === 'string' ? ct : 'application/json' },
          body: req.body,
        };
      } else {
        upstream = { method: 'GET', path, headers };
      }
      const call: RestCall = { method: req.path, params: undefined, id: undefined, raw: '', height: h, write: req.method === 'POST' };
      return { kind: 'passthrough', call, upstream };
    },
    classify(call, view: PoolView): Routing {
      const l = label(call.method);
      const cost = costs.of(l, l);
      const rc = call as RestCall;
      const h = rc.height;
      if (rc.write) return { archive: false, cost, label: l };
      if (h === undefined) return { archive: false, cost, label: l, cacheTtlMs: PARAMS.test(rc.method) ? PARAMS_TTL_MS : blockTimeMs };
      const floor = view.fullEarliest ?? (view.head === undefined ? undefined : view.head - fullHistory + 1);
      // State at a committed height never changes (instant finality).
      const cache = view.head !== undefined && h < view.head ? { cacheTtlMs: FINAL_TTL_MS, cacheHeight: h } : {};
      return { archive: floor !== undefined && h < floor, minHeight: h, cost, label: l, ...cache };
    },
    judge(_call, reply) {
      const s = reply.status;
      if (s === 429) return 'throttled';
      const t = reply.text;
      let i = 0;
      while (i < t.length && t.charCodeAt(i) <= 32) i++;
      const json = t.charCodeAt(i) === 123;
      if (s >= 200 && s < 300) return json ? 'ok' : 'node-failure';
      if (!json) return 'node-failure';
      if (PRUNED.test(t)) return 'pruned';
      if (s < 500) return 'chain-error';
      // A gRPC status from the app is the chain's answer, except UNAVAILABLE (14).
      let status: { code?: unknown; message?: unknown };
      try {
        status = JSON.parse(t) as { code?: unknown; message?: unknown };
      } catch {
        return 'node-failure';
      }
      if (typeof status.code !== 'number' || typeof status.message !== 'string') return 'node-failure';
      return status.code === 14 ? 'node-failure' : 'chain-error';
    },
    async probe(node, timeoutMs): Promise<NodeHead> {
      const res = await node.request(
        { method: 'GET', path: `/${namespaces[0] ?? 'cosmos'}/base/tendermint/v1beta1/blocks/latest` },
        timeoutMs,
      );
      if (res.status !== 200) throw new Error(`probe answered HTTP ${res.status}`);
      const body = JSON.parse(res.text) as { block?: { header?: { height?: unknown } }; block_id?: { hash?: unknown } };
      const h = body.block?.header?.height;
      if (typeof h !== 'string' || !DIGITS.test(h)) throw new Error('probe answer has no block height');
      return { height: Number(h), hash: typeof body.block_id?.hash === 'string' ? body.block_id.hash : undefined };
    },
  };
}

export default definePlugin({
  name: 'sdk-rest',
  validateOptions: (options): Problems => checkOptions(options, ['namespaces', 'fullHistory', 'costs', 'blockTimeMs']),
  create(ctx) {
    return createHandler(
      (ctx.options.namespaces as string[] | undefined) ?? ['cosmos', 'sdk'],
      (ctx.options.fullHistory as number | undefined) ?? 128,
      new CostTable({}, ctx.options.costs),
      (ctx.options.blockTimeMs as number | undefined) ?? DEFAULT_BLOCK_TIME_MS,
    );
  },
});
