// Transaction blocks on a simulated objectx node: executeTransactionBlock executes one
// once and answers its digest (a resubmission gets an "already executed" error), the
// next checkpoint includes it, and getTransactionBlock reads it back on the node that
// executed it, or on any node of the network once a checkpoint it has includes it.
// Signatures are not checked. The digest is a stand-in: base58 of the SHA-256 of the
// transaction bytes (Sui's is a Blake2b-256 over the BCS data, not in node:crypto).

import { createHash } from 'node:crypto';
import { TxPool, type IncludedTx, type NodeView, type RpcOutcome } from 'noderouter/devnet';

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function base58(bytes: Buffer): string {
  let n = BigInt(`0x${bytes.toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = BASE58.charAt(Number(n % 58n)) + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return out;
}

const invalid = (data: string): RpcOutcome => ({ error: { code: -32602, message: 'Invalid params', data } });

function wants(options: unknown, flag: string): boolean {
  return options !== null && typeof options === 'object' && (options as Record<string, unknown>)[flag] === true;
}

export class ObjectxTxs {
  private readonly pool: TxPool;

  constructor(private readonly node: NodeView) {
    this.pool = new TxPool(node);
  }

  /** sui_executeTransactionBlock(tx_bytes, signatures, options?, request_type?). */
  execute(p: unknown[]): RpcOutcome {
    const [txBytes, signatures, options] = p;
    if (typeof txBytes !== 'string' || txBytes === '' || !BASE64.test(txBytes)) return invalid('tx_bytes must be base64');
    if (!Array.isArray(signatures) || signatures.length === 0 || !signatures.every((s) => typeof s === 'string')) {
      return invalid('signatures must be a non-empty list of base64 signatures');
    }
    const bytes = Buffer.from(txBytes, 'base64');
    const digest = base58(createHash('sha256').update(bytes).digest());
    if (this.pool.submit(digest, bytes) !== 'accepted') {
      return { error: { code: -32002, message: `Transaction ${digest} has already been executed` } };
    }
    return { result: { ...this.view(digest, undefined, options), confirmedLocalExecution: true } };
  }

  /** sui_getTransactionBlock(digest, options?). */
  get(digest: unknown, options: unknown): RpcOutcome {
    if (typeof digest !== 'string') return invalid('digest must be a string');
    const included = this.pool.included(digest);
    if (included === undefined && this.pool.pending(digest) === undefined) {
      return { error: { code: -32602, message: `Could not find the referenced transaction [TransactionDigest(${digest})].` } };
    }
    return { result: this.view(digest, included, options) };
  }

  private view(digest: string, at: IncludedTx | undefined, options: unknown): Record<string, unknown> {
    const effects = {
      messageVersion: 'v1',
      status: { status: 'success' },
      executedEpoch: String(Math.floor(this.node.height() / 1000)),
      gasUsed: { computationCost: '1000000', storageCost: '0', storageRebate: '0', nonRefundableStorageFee: '0' },
      transactionDigest: digest,
    };
    return {
      digest,
      ...(wants(options, 'showEffects') ? { effects } : {}),
      ...(at === undefined ? {} : { checkpoint: String(at.height), timestampMs: String(this.node.chain.time(at.height) * 1000) }),
    };
  }
}
