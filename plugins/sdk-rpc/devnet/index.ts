// The devnet's sdk-rpc family: a Cosmos-SDK chain node's CometBFT RPC (JSON-RPC POST
// at / or /<method>, and the GET URI form). Full nodes keep `fullRetention` blocks and
// refuse older heights with CometBFT's real messages. CometBFT answers abci_info and
// URI calls with id -1. Each node has its mempool for broadcast_tx_* (txs.ts).

import { createHash } from 'node:crypto';
import { defineDevnetFamily, seeded, type DevRequest, type HttpAnswer, type NodeView, type RpcOutcome } from 'noderouter/devnet';
import { CometTxs, uriBytes } from './txs.js';

const upperHash = (node: NodeView, h: number): string => node.chain.hash(h).slice(2).toUpperCase();
const iso = (node: NodeView, h: number): string => new Date(node.chain.time(h) * 1000).toISOString();
const chainIdOf = (node: NodeView): string => node.networkId();
/** The app hash at a height, hex: the block's hash, or another under the lie fault. */
const appHex = (node: NodeView, h: number): string =>
  node.lying()
    ? createHash('sha256')
        .update(`lie:${node.chain.hash(h)}`)
        .digest('hex')
    : node.chain.hash(h).slice(2, 66);
const appHash = (node: NodeView, h: number): string => Buffer.from(appHex(node, h), 'hex').toString('base64');

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
    app_hash: appHex(node, h).toUpperCase(),
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
      data: { txs: node.chain.txsAt(h).map((t) => t.bytes.toString('base64')) },
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

function rpc(method: string, params: unknown, node: NodeView, txs: CometTxs): RpcOutcome | Promise<RpcOutcome> | undefined {
  const head = node.height();
  switch (method) {
    case 'broadcast_tx_sync':
    case 'broadcast_tx_async':
    case 'broadcast_tx_commit':
      return txs.broadcast(method, arg(params, 'tx', 0));
    case 'tx':
      return txs.get(arg(params, 'hash', 0));
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
            latest_app_hash: appHex(node, head).toUpperCase(),
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
        metas.push({
          block_id: blockOf(node, h).block_id as object,
          block_size: '512',
          header: header(node, h),
          num_txs: String(node.chain.txsAt(h).length),
        });
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
            // A lying node answers state nobody else has (an altered balance).
            value: node.lying() ? Buffer.from(`lie:${String(arg(params, 'data', 1))}`).toString('base64') : null,
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

/** A URI call (GET /<method>?…): answered with id -1, and errors with HTTP 500, as CometBFT does. */
async function uri(req: DevRequest, node: NodeView, txs: CometTxs): Promise<HttpAnswer | undefined> {
  if (req.method !== 'GET') return undefined;
  const method = req.path.slice(1);
  const params: Record<string, unknown> = Object.fromEntries(req.query);
  // Byte arguments come as 0x-hex or a quoted string in a URI, as base64 in JSON-RPC.
  for (const name of ['tx', 'hash']) if (typeof params[name] === 'string') params[name] = uriBytes(params[name]);
  const outcome = await rpc(method, params, node, txs);
  if (outcome === undefined) return { status: 404, body: `{"jsonrpc":"2.0","id":-1,"error":{"code":-32601,"message":"Method not found"}}` };
  if ('error' in outcome) return { status: 500, body: `{"jsonrpc":"2.0","id":-1,"error":${JSON.stringify(outcome.error)}}` };
  return { status: 200, body: `{"jsonrpc":"2.0","id":-1,"result":${JSON.stringify(outcome.result)}}` };
}

export default defineDevnetFamily({
  kind: 'http',
  rpcPath: (path) => path === '/' || /^\/[a-z_]+$/.test(path),
  node(view) {
    const txs = new CometTxs(view);
    return { rpc: (method, params) => rpc(method, params, view, txs), http: (req) => uri(req, view, txs) };
  },
});
