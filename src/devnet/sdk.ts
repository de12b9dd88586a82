// A Cosmos-SDK chain node: CometBFT RPC (JSON-RPC POST at / or /<method>, and the
// GET URI form) and the SDK's REST gateway (GET /cosmos/…, also under /sdk/…).
// Full nodes keep `fullRetention` blocks and refuse older heights with the real
// CometBFT and SDK messages. CometBFT answers abci_info and URI calls with id -1.

import { seeded } from './chain.js';
import type { DevRequest, Family, HttpAnswer, NodeView, RpcOutcome } from './family.js';

const upperHash = (node: NodeView, h: number): string => node.chain.hash(h).slice(2).toUpperCase();
const iso = (node: NodeView, h: number): string => new Date(node.chain.time(h) * 1000).toISOString();
const chainIdOf = (node: NodeView): string => `${node.chain.network}-devnet-1`;
const appHash = (node: NodeView, h: number): string => Buffer.from(node.chain.hash(h).slice(2, 66), 'hex').toString('base64');

function header(node: NodeView, h: number): Record<string, unknown> {
  const id = { hash: upperHash(node, Math.max(1, h - 1)), parts: { total: 1, hash: upperHash(node, Math.max(1, h - 1)) } };
  return {
    version: { block: '11', app: '0' },
    chain_id: chainIdOf(node),
    height: String(h),
    time: iso(node, h),
    last_block_id: id,
    last_commit_hash: upperHash(node, h).slice(0, 64),
    data_hash: 'E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855',
    validators_hash: 'D1B3C8E5A3F4E6B7C8D9E0F1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D7E8F9A0B1',
    next_validators_hash: 'D1B3C8E5A3F4E6B7C8D9E0F1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D7E8F9A0B1',
    consensus_hash: '048091BC7DDC283F77BFBF91D73C44DA58C3DF8A9CBC867405D8B7F3DAADA22F',
    app_hash: upperHash(node, h),
    last_results_hash: 'E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855',
    evidence_hash: 'E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855',
    proposer_address: 'A1B2C3D4E5F60718293A4B5C6D7E8F9012345678',
  };
}

function blockOf(node: NodeView, h: number): Record<string, unknown> {
  return {
    block_id: { hash: upperHash(node, h), parts: { total: 1, hash: upperHash(node, h) } },
    block: {
      header: header(node, h),
      data: { txs: [] },
      evidence: { evidence: [] },
      last_commit: {
        height: String(Math.max(0, h - 1)),
        round: 0,
        block_id: { hash: upperHash(node, Math.max(1, h - 1)), parts: { total: 1, hash: upperHash(node, Math.max(1, h - 1)) } },
        signatures: [],
      },
    },
  };
}

function toHeight(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^"?\d+"?$/.test(v)) return Number(v.replace(/"/g, ''));
  return undefined;
}

/** A height argument checked against this node; undefined height = latest. */
function checkHeight(v: unknown, node: NodeView): { height: number } | { error: RpcOutcome } {
  const head = node.height();
  if (v === undefined || v === null || v === '' || v === '0' || v === 0) return { height: head };
  const h = toHeight(v);
  if (h === undefined) return { error: { error: { code: -32602, message: 'Invalid params', data: `invalid height ${String(v)}` } } };
  if (h > head) {
    return {
      error: {
        error: {
          code: -32603,
          message: 'Internal error',
          data: `height ${h} must be less than or equal to the current blockchain height ${head}`,
        },
      },
    };
  }
  if (h < node.earliest()) {
    return {
      error: {
        error: { code: -32603, message: 'Internal error', data: `height ${h} is not available, lowest height is ${node.earliest()}` },
      },
    };
  }
  return { height: h };
}

function arg(params: unknown, name: string, position: number): unknown {
  if (Array.isArray(params)) return params[position];
  if (params !== null && typeof params === 'object') return (params as Record<string, unknown>)[name];
  return undefined;
}

function rpc(method: string, params: unknown, node: NodeView): RpcOutcome | undefined {
  const head = node.height();
  switch (method) {
    case 'health':
      return { result: {} };
    case 'status':
      return {
        result: {
          node_info: {
            protocol_version: { p2p: '8', block: '11', app: '0' },
            id: node.chain.hash(seeded(node.name, 1000) + 1).slice(2, 42),
            listen_addr: 'tcp://0.0.0.0:26656',
            network: chainIdOf(node),
            version: '0.38.12',
            channels: '40202122233038606100',
            moniker: node.name,
            other: { tx_index: 'on', rpc_address: 'tcp://0.0.0.0:26657' },
          },
          sync_info: {
            latest_block_hash: upperHash(node, head),
            latest_app_hash: upperHash(node, head),
            latest_block_height: String(head),
            latest_block_time: iso(node, head),
            earliest_block_hash: upperHash(node, node.earliest()),
            earliest_app_hash: upperHash(node, node.earliest()),
            earliest_block_height: String(node.earliest()),
            earliest_block_time: iso(node, node.earliest()),
            catching_up: false,
          },
          validator_info: {
            address: 'A1B2C3D4E5F60718293A4B5C6D7E8F9012345678',
            pub_key: { type: 'tendermint/PubKeyEd25519', value: 'Zm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyMDA=' },
            voting_power: '0',
          },
        },
      };
    case 'abci_info':
      // CometBFT answers abci_info with id -1 whatever id was sent.
      return {
        id: '-1',
        result: {
          response: {
            data: `${node.chain.network}d`,
            version: 'v0.50.9-devnet',
            last_block_height: String(head),
            last_block_app_hash: appHash(node, head),
          },
        },
      };
    case 'block':
    case 'header':
    case 'commit': {
      const r = checkHeight(arg(params, 'height', 0), node);
      if ('error' in r) return r.error;
      const b = blockOf(node, r.height);
      if (method === 'block') return { result: b };
      const inner = b.block as { header: unknown; last_commit: unknown };
      if (method === 'header') return { result: { header: inner.header } };
      return {
        result: {
          signed_header: { header: inner.header, commit: { height: String(r.height), round: 0, block_id: b.block_id, signatures: [] } },
          canonical: true,
        },
      };
    }
    case 'validators': {
      const r = checkHeight(arg(params, 'height', 0), node);
      if ('error' in r) return r.error;
      return { result: { block_height: String(r.height), validators: [], count: '0', total: '0' } };
    }
    case 'blockchain': {
      const lo = checkHeight(arg(params, 'minHeight', 0) ?? Math.max(1, head - 19), node);
      if ('error' in lo) return lo.error;
      const hiArg = toHeight(arg(params, 'maxHeight', 1)) ?? head;
      const hi = Math.min(head, hiArg, lo.height + 19);
      const metas = [];
      for (let h = hi; h >= lo.height; h--)
        metas.push({ block_id: blockOf(node, h).block_id as object, block_size: '512', header: header(node, h), num_txs: '0' });
      return { result: { last_height: String(head), block_metas: metas } };
    }
    case 'abci_query': {
      const r = checkHeight(arg(params, 'height', 2), node);
      if ('error' in r) return r.error;
      return {
        result: {
          response: {
            code: 0,
            log: '',
            info: '',
            index: '0',
            key: null,
            value: null,
            proofOps: null,
            height: String(r.height),
            codespace: '',
          },
        },
      };
    }
    default:
      return undefined;
  }
}

export const sdkRpcFamily: Family = {
  rpcPath: (path) => path === '/' || /^\/[a-z_]+$/.test(path),
  rpc,
  http(req: DevRequest, node: NodeView): HttpAnswer | undefined {
    if (req.method !== 'GET') return undefined;
    const method = req.path.slice(1);
    const params = Object.fromEntries(req.query);
    const outcome = rpc(method, params, node);
    if (outcome === undefined)
      return { status: 404, body: `{"jsonrpc":"2.0","id":-1,"error":{"code":-32601,"message":"Method not found"}}` };
    // URI calls are answered with id -1, and errors with HTTP 500, as CometBFT does.
    if ('error' in outcome) return { status: 500, body: `{"jsonrpc":"2.0","id":-1,"error":${JSON.stringify(outcome.error)}}` };
    return { status: 200, body: `{"jsonrpc":"2.0","id":-1,"result":${JSON.stringify(outcome.result)}}` };
  },
};

const NAMESPACES = new Set(['cosmos', 'sdk']);

function restError(status: number, code: number, message: string): HttpAnswer {
  return { status, body: JSON.stringify({ code, message, details: [] }) };
}

function rest(req: DevRequest, node: NodeView): HttpAnswer | undefined {
  const parts = req.path.split('/').filter((p) => p !== '');
  if (!NAMESPACES.has(parts[0] ?? '')) return restError(501, 12, 'Not Implemented');
  const route = parts.slice(1).join('/');
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
  if (route === 'base/tendermint/v1beta1/node_info') {
    return ok({
      default_node_info: { network: chainIdOf(node), moniker: node.name, version: '0.38.12' },
      application_version: { name: node.chain.network, app_name: `${node.chain.network}d`, version: 'v0.50.9-devnet' },
    });
  }
  const blocks = /^base\/tendermint\/v1beta1\/blocks\/(latest|\d+)$/.exec(route);
  if (blocks !== null) {
    const n = blocks[1] === 'latest' ? head : Number(blocks[1]);
    if (n > head) return restError(400, 3, `requested block height is bigger then the chain length`);
    if (n < node.earliest()) return restError(400, 3, `height ${n} is not available, lowest height is ${node.earliest()}`);
    const b = blockOf(node, n);
    const blockId = b.block_id as { hash: string };
    return ok({
      block_id: { hash: Buffer.from(blockId.hash, 'hex').toString('base64'), part_set_header: { total: 1, hash: '' } },
      block: b.block,
      sdk_block: b.block,
    });
  }
  const balances = /^bank\/v1beta1\/balances\/([a-z0-9]+)$/.exec(route);
  if (balances !== null) {
    const amount = String(seeded(`${balances[1]}:${h >> 6}`, 1_000_000_000) + 1);
    return ok({ balances: [{ denom: 'stake', amount }], pagination: { next_key: null, total: '1' } });
  }
  return restError(501, 12, 'Not Implemented');
}

export const sdkRestFamily: Family = {
  rpcPath: () => false,
  rpc: () => undefined,
  http: rest,
};
