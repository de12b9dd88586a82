// Transactions on a simulated EVM node: eth_sendRawTransaction into the node's pool
// (hash: keccak256 of the raw bytes, as geth), geth's answers for bad or repeated
// submissions, and the transaction and receipt views of pending and included ones.
// A pending transaction is known to the node it was sent to; an included one to every
// node of the network that has its block. No execution: every transaction succeeds,
// uses its intrinsic gas and emits no logs.

import { hexOf, TxPool, type IncludedTx, type NodeView, type RpcError, type RpcOutcome } from 'noderouter/devnet';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { decodeRawTx, type RawTx } from './raw-tx.js';

const BASE_FEE = 1_000_000_000n;
const ZERO_ADDRESS = `0x${'0'.repeat(40)}`;
const HEX_BYTES = /^0x[0-9a-fA-F]*$/;

const failed = (message: string): { error: RpcError } => ({ error: { code: -32000, message } });
const argument = (why: string): { error: RpcError } => ({
  error: { code: -32602, message: `invalid argument 0: json: cannot unmarshal ${why} into Go value of type hexutil.Bytes` },
});

/** Gas a transaction that only transfers (or creates) uses: 21000, 32000 more to create, and its data. */
function intrinsicGas(tx: RawTx): bigint {
  let gas = tx.to === null ? 53_000n : 21_000n;
  for (const b of tx.input) gas += b === 0 ? 4n : 16n;
  return gas;
}

/** The gas an included transaction used (what a block's gasUsed adds up). */
export function gasOf(bytes: Buffer): bigint {
  return intrinsicGas(decoded(bytes));
}

/** A transaction the pool accepted, so one that decodes. */
function decoded(bytes: Buffer): RawTx {
  const tx = decodeRawTx(bytes);
  if (typeof tx === 'string') throw new Error(tx);
  return tx;
}

function price(tx: RawTx, mined: boolean): bigint {
  if (tx.tip === undefined || !mined) return tx.maxFee;
  const effective = BASE_FEE + tx.tip;
  return effective < tx.maxFee ? effective : tx.maxFee;
}

export class EvmTxs {
  readonly pool: TxPool;

  constructor(private readonly node: NodeView) {
    this.pool = new TxPool(node);
  }

  send(raw: unknown): RpcOutcome {
    if (raw === undefined) return { error: { code: -32602, message: 'missing value for required argument 0' } };
    if (typeof raw !== 'string') return argument('non-string');
    if (!raw.startsWith('0x')) return argument('hex string without 0x prefix');
    if (!HEX_BYTES.test(raw)) return argument('invalid hex string');
    if (raw.length % 2 !== 0) return argument('hex string of odd length');
    const bytes = Buffer.from(raw.slice(2), 'hex');
    const tx = decodeRawTx(bytes);
    if (typeof tx === 'string') return failed(tx);
    if (tx.chainId === undefined) return failed('only replay-protected (EIP-155) transactions allowed over RPC');
    if (tx.chainId !== BigInt(this.node.chainId)) {
      return failed(`invalid sender: invalid chain id for signer: have ${tx.chainId} want ${this.node.chainId}`);
    }
    if (tx.gas < intrinsicGas(tx)) return failed(`intrinsic gas too low: gas ${tx.gas}, minimum needed ${intrinsicGas(tx)}`);
    const hash = `0x${Buffer.from(keccak_256(bytes)).toString('hex')}`;
    // geth answers "already known" for its pool; for a mined one, "nonce too low" (here too "already known").
    if (this.pool.submit(hash, bytes) !== 'accepted') return failed('already known');
    return { result: hash };
  }

  /** eth_getTransactionByHash: pending on this node, or in a block it has; else null. */
  byHash(hash: unknown): RpcOutcome {
    if (typeof hash !== 'string') return { result: null };
    const h = hash.toLowerCase();
    const included = this.pool.included(h);
    if (included !== undefined) return { result: this.view(included.bytes, h, included) };
    const pending = this.pool.pending(h);
    return { result: pending === undefined ? null : this.view(pending, h, undefined) };
  }

  /** eth_getTransactionReceipt: for transactions in a block this node has; else null. */
  receipt(hash: unknown): RpcOutcome {
    const included = typeof hash === 'string' ? this.pool.included(hash.toLowerCase()) : undefined;
    if (included === undefined) return { result: null };
    const tx = decoded(included.bytes);
    let cumulative = 0n;
    for (const other of this.node.chain.txsAt(included.height).slice(0, included.index + 1)) {
      cumulative += intrinsicGas(decoded(other.bytes));
    }
    return {
      result: {
        blockHash: this.node.chain.hash(included.height),
        blockNumber: hexOf(included.height),
        contractAddress: null,
        cumulativeGasUsed: hexOf(cumulative),
        effectiveGasPrice: hexOf(price(tx, true)),
        from: ZERO_ADDRESS,
        gasUsed: hexOf(intrinsicGas(tx)),
        logs: [],
        logsBloom: `0x${'0'.repeat(512)}`,
        status: '0x1',
        to: tx.to,
        transactionHash: included.hash,
        transactionIndex: hexOf(included.index),
        type: hexOf(tx.type),
      },
    };
  }

  /** A block's transactions: hashes, or whole with `full`. */
  ofBlock(height: number, full: boolean): unknown[] {
    return this.node.chain.txsAt(height).map((t) => (full ? this.view(t.bytes, t.hash, t) : t.hash));
  }

  private view(bytes: Buffer, hash: string, at: IncludedTx | undefined): Record<string, unknown> {
    const tx = decoded(bytes);
    return {
      blockHash: at === undefined ? null : this.node.chain.hash(at.height),
      blockNumber: at === undefined ? null : hexOf(at.height),
      from: ZERO_ADDRESS,
      gas: hexOf(tx.gas),
      gasPrice: hexOf(price(tx, at !== undefined)),
      ...(tx.tip === undefined ? {} : { maxFeePerGas: hexOf(tx.maxFee), maxPriorityFeePerGas: hexOf(tx.tip) }),
      hash,
      input: `0x${tx.input.toString('hex')}`,
      nonce: hexOf(tx.nonce),
      to: tx.to,
      transactionIndex: at === undefined ? null : hexOf(at.index),
      value: hexOf(tx.value),
      type: hexOf(tx.type),
      ...(tx.accessList === undefined ? {} : { accessList: tx.accessList }),
      ...(tx.chainId === undefined ? {} : { chainId: hexOf(tx.chainId) }),
      v: hexOf(tx.v),
      r: hexOf(tx.r),
      s: hexOf(tx.s),
      ...(tx.type === 0 ? {} : { yParity: hexOf(tx.v) }),
    };
  }
}
