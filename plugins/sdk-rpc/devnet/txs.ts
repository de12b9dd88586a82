// A simulated CometBFT node's mempool: broadcast_tx_sync and _async accept a
// transaction once and answer its hash (SHA-256, upper-case hex, as CometBFT), a
// resubmission gets "tx already exists in cache", and _commit waits for the block that
// includes it (up to CometBFT's default 10 s). `tx` reads an included transaction back
// on any node of the network that has its block. No CheckTx: every transaction is valid.

import { createHash } from 'node:crypto';
import { TxPool, type NodeView, type RpcOutcome } from 'noderouter/devnet';

/** CometBFT's timeout_broadcast_tx_commit default. */
const COMMIT_TIMEOUT_MS = 10_000;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;
const OK_RESULT = { code: 0, data: null, log: '', info: '', gas_wanted: '0', gas_used: '0', events: [], codespace: '' };

const internal = (data: string): RpcOutcome => ({ error: { code: -32603, message: 'Internal error', data } });
const invalid = (data: string): RpcOutcome => ({ error: { code: -32602, message: 'Invalid params', data } });

/** A URI byte argument (0x-hex, or a quoted string) as the base64 a JSON-RPC call carries; undefined when it is neither. */
export function uriBytes(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  if (HEX.test(v)) return Buffer.from(v.slice(2), 'hex').toString('base64');
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) return Buffer.from(v.slice(1, -1), 'utf8').toString('base64');
  return undefined;
}

function bytesOf(v: unknown, name: string): Buffer | RpcOutcome {
  if (typeof v !== 'string' || !BASE64.test(v)) return invalid(`error converting json params to arguments: ${name} must be base64 bytes`);
  const bytes = Buffer.from(v, 'base64');
  return bytes.length === 0 ? invalid(`${name} is empty`) : bytes;
}

export class CometTxs {
  private readonly pool: TxPool;

  constructor(node: NodeView) {
    this.pool = new TxPool(node);
  }

  async broadcast(method: string, tx: unknown): Promise<RpcOutcome> {
    const bytes = bytesOf(tx, 'tx');
    if (!Buffer.isBuffer(bytes)) return bytes;
    const hash = createHash('sha256').update(bytes).digest('hex').toUpperCase();
    if (this.pool.submit(hash, bytes) !== 'accepted') return internal('tx already exists in cache');
    if (method !== 'broadcast_tx_commit') return { result: { code: 0, data: '', log: '', codespace: '', hash } };
    const included = await this.pool.whenIncluded(hash, COMMIT_TIMEOUT_MS);
    if (included === undefined) return internal('timed out waiting for tx to be included in a block');
    return { result: { check_tx: OK_RESULT, tx_result: OK_RESULT, hash, height: String(included.height) } };
  }

  /** `tx`: a transaction in a block this node has, by its hash. */
  get(hash: unknown): RpcOutcome {
    const bytes = bytesOf(hash, 'hash');
    if (!Buffer.isBuffer(bytes)) return bytes;
    const hex = bytes.toString('hex').toUpperCase();
    const included = this.pool.included(hex);
    if (included === undefined) return internal(`tx (${hex}) not found`);
    return {
      result: {
        hash: hex,
        height: String(included.height),
        index: included.index,
        tx_result: OK_RESULT,
        tx: included.bytes.toString('base64'),
      },
    };
  }
}
