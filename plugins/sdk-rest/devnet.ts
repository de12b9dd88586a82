// The devnet's sdk-rest family: a Cosmos-SDK node's REST gateway (GET /cosmos/…, also
// under /sdk/…), answering in the gateway's JSON (bytes as base64). Full nodes keep
// `fullRetention` blocks and refuse older heights with the SDK's real messages. POST
// /cosmos/tx/v1beta1/txs puts a transaction into the node's mempool once (hash: SHA-256,
// upper-case hex); a resubmission is answered code 19, as the SDK relays CometBFT's
// "tx already exists in cache". GET …/txs/{hash} reads an included one back.

import { createHash } from 'node:crypto';
import { defineDevnetFamily, seeded, TxPool, type DevRequest, type HttpAnswer, type NodeView } from 'noderouter/devnet';

const NAMESPACES = new Set(['cosmos', 'sdk']);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MODES = new Set(['BROADCAST_MODE_SYNC', 'BROADCAST_MODE_ASYNC']);

function restError(status: number, code: number, message: string): HttpAnswer {
  return { status, body: JSON.stringify({ code, message, details: [] }) };
}

const base64Hash = (node: NodeView, h: number): string => Buffer.from(node.chain.hash(h).slice(2), 'hex').toString('base64');
/** The app hash at a height: the block's hash, or another under the lie fault. */
const appHash = (node: NodeView, h: number): string =>
  node.lying()
    ? createHash('sha256')
        .update(`lie:${node.chain.hash(h)}`)
        .digest('base64')
    : base64Hash(node, h);

function blockId(node: NodeView, h: number): Record<string, unknown> {
  const hash = base64Hash(node, h);
  return { hash, part_set_header: { total: 1, hash } };
}

/** A block as the SDK's REST gateway shows it; `sdk`: the proposer as a consensus address (sdk_block). */
function restBlock(node: NodeView, h: number, sdk: boolean): Record<string, unknown> {
  const parent = Math.max(1, h - 1);
  return {
    header: {
      version: { block: '11', app: '0' },
      chain_id: node.networkId(),
      height: String(h),
      time: new Date(node.chain.time(h) * 1000).toISOString(),
      last_block_id: blockId(node, parent),
      app_hash: appHash(node, h),
      proposer_address: sdk ? 'cosmosvalcons1devnet' : Buffer.alloc(20, 0xa1).toString('base64'),
    },
    data: { txs: node.chain.txsAt(h).map((t) => t.bytes.toString('base64')) },
    evidence: { evidence: [] },
    last_commit: { height: String(h - 1), round: 0, block_id: blockId(node, parent), signatures: [] },
  };
}

/** The TxResponse of a broadcast (height 0: not in a block yet) or of an included transaction. */
function txResponse(txhash: string, height: number, code: number, rawLog: string, timestamp: string): Record<string, unknown> {
  const codespace = code === 0 ? '' : 'sdk';
  return {
    height: String(height),
    txhash,
    codespace,
    code,
    data: '',
    raw_log: rawLog,
    logs: [],
    info: '',
    gas_wanted: '0',
    gas_used: '0',
    tx: null,
    timestamp,
    events: [],
  };
}

function broadcast(req: DevRequest, pool: TxPool): HttpAnswer {
  let body: { tx_bytes?: unknown; mode?: unknown };
  try {
    body = JSON.parse(req.body) as typeof body;
  } catch {
    return restError(400, 3, 'invalid request body: not JSON');
  }
  if (body === null || typeof body !== 'object') return restError(400, 3, 'invalid request body');
  const { tx_bytes: txBytes, mode } = body;
  if (typeof txBytes !== 'string' || txBytes === '' || !BASE64.test(txBytes)) return restError(400, 3, 'invalid empty tx');
  if (typeof mode !== 'string' || !MODES.has(mode)) {
    return restError(400, 3, `unsupported broadcast mode ${String(mode)}; supported types: sync, async`);
  }
  const bytes = Buffer.from(txBytes, 'base64');
  const hash = createHash('sha256').update(bytes).digest('hex').toUpperCase();
  const fresh = pool.submit(hash, bytes) === 'accepted';
  return {
    status: 200,
    body: JSON.stringify({ tx_response: txResponse(hash, 0, fresh ? 0 : 19, fresh ? '' : 'tx already in mempool', '') }),
  };
}

function rest(req: DevRequest, node: NodeView, pool: TxPool): HttpAnswer | undefined {
  const parts = req.path.split('/').filter((p) => p !== '');
  if (!NAMESPACES.has(parts[0] ?? '')) return restError(501, 12, 'Not Implemented');
  const route = parts.slice(1).join('/');
  if (route === 'tx/v1beta1/txs' && req.method === 'POST') return broadcast(req, pool);
  const head = node.height();
  const asked = req.headers['x-cosmos-block-height'] ?? req.query.get('height') ?? undefined;
  let h = head;
  if (typeof asked === 'string' && asked !== '' && asked !== '0') {
    h = Number(asked);
    if (!Number.isInteger(h) || h < 0) return restError(400, 3, `invalid height ${asked}: invalid request`);
    if (h > head) return restError(400, 3, `invalid height ${h}; latest height ${head}: invalid height`);
    if (h < node.earliest()) {
      return restError(400, 3, `failed to load state at height ${h}; version does not exist (latest height: ${head}): invalid height`);
    }
  }
  const ok = (body: unknown): HttpAnswer => ({
    status: 200,
    body: JSON.stringify(body),
    headers: { 'grpc-metadata-x-cosmos-block-height': String(h) },
  });
  if (route === 'auth/v1beta1/params') {
    return ok({
      params: {
        max_memo_characters: '256',
        tx_sig_limit: '7',
        tx_size_cost_per_byte: '10',
        sig_verify_cost_ed25519: '590',
        sig_verify_cost_secp256k1: '1000',
      },
    });
  }
  if (route === 'bank/v1beta1/params') return ok({ params: { send_enabled: [], default_send_enabled: true } });
  if (route === 'staking/v1beta1/params') {
    return ok({
      params: {
        unbonding_time: '1814400s',
        max_validators: 100,
        max_entries: 7,
        historical_entries: 10000,
        bond_denom: 'stake',
        min_commission_rate: '0.000000000000000000',
      },
    });
  }
  if (route === 'base/node/v1beta1/status') {
    return ok({
      earliest_store_height: String(node.earliest()),
      height: String(head),
      timestamp: new Date(node.chain.time(head) * 1000).toISOString(),
      app_hash: appHash(node, head),
      validator_hash: base64Hash(node, head),
    });
  }
  if (route === 'base/tendermint/v1beta1/node_info') {
    return ok({
      default_node_info: { network: node.networkId(), moniker: node.name, version: '0.38.12' },
      application_version: { name: node.chain.network, app_name: `${node.chain.network}d`, version: 'v0.50.9-devnet' },
    });
  }
  const blocks = /^base\/tendermint\/v1beta1\/blocks\/(latest|\d+)$/.exec(route);
  if (blocks !== null) {
    const n = blocks[1] === 'latest' ? head : Number(blocks[1]);
    if (n > head) return restError(400, 3, `requested block height is bigger then the chain length`);
    if (n < node.earliest()) return restError(400, 3, `height ${n} is not available, lowest height is ${node.earliest()}`);
    return ok({ block_id: blockId(node, n), block: restBlock(node, n, false), sdk_block: restBlock(node, n, true) });
  }
  const balances = /^bank\/v1beta1\/balances\/([a-z0-9]+)$/.exec(route);
  if (balances !== null) {
    // A lying node answers a balance nobody else has.
    const amount = String(seeded(`${balances[1]}:${h >> 6}`, 1_000_000_000) + 1 + (node.lying() ? 1_000_000 : 0));
    return ok({ balances: [{ denom: 'stake', amount }], pagination: { next_key: null, total: '1' } });
  }
  const tx = /^tx\/v1beta1\/txs\/([0-9A-Fa-f]{64})$/.exec(route);
  if (tx !== null) {
    const hash = (tx[1] as string).toUpperCase();
    const included = pool.included(hash);
    if (included === undefined) return restError(404, 5, `tx not found: ${hash}`);
    const time = new Date(node.chain.time(included.height) * 1000).toISOString();
    return ok({ tx: null, tx_response: txResponse(hash, included.height, 0, '', time) });
  }
  return restError(501, 12, 'Not Implemented');
}

export default defineDevnetFamily({
  kind: 'http',
  rpcPath: () => false,
  node(view) {
    const pool = new TxPool(view);
    return { rpc: () => undefined, http: (req) => rest(req, view, pool) };
  },
});
