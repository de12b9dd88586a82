// Transactions as a block commits to them (the values of its transactions trie),
// re-encoded from the JSON objects a node gives with full transactions: legacy RLP, or
// a type byte and the type's RLP payload (EIP-2718) for access-list (1), dynamic-fee
// (2), blob (3) and set-code (4) transactions. A type not known here (a rollup's
// deposit transaction) gives undefined: the root cannot be checked, which is not a
// mismatch.

import { data, quantity } from './hex.js';
import { rlp, type RlpInput } from './rlp.js';

type Tx = Readonly<Record<string, unknown>>;

const EMPTY = new Uint8Array(0);

function to(v: unknown): Uint8Array {
  return v === null || v === undefined ? EMPTY : data(v, 20);
}

function accessList(v: unknown): RlpInput[] {
  if (!Array.isArray(v)) return [];
  return (v as Array<{ address?: unknown; storageKeys?: unknown }>).map((e) => [
    data(e.address, 20),
    (Array.isArray(e.storageKeys) ? (e.storageKeys as unknown[]) : []).map((k) => data(k, 32)),
  ]);
}

function authorizations(v: unknown): RlpInput[] {
  if (!Array.isArray(v)) return [];
  return (v as Tx[]).map((a) => [
    quantity(a.chainId),
    data(a.address, 20),
    quantity(a.nonce),
    quantity(a.yParity ?? a.v),
    quantity(a.r),
    quantity(a.s),
  ]);
}

function typed(type: number, fields: RlpInput[]): Uint8Array {
  const payload = rlp(fields);
  const out = new Uint8Array(payload.length + 1);
  out[0] = type;
  out.set(payload, 1);
  return out;
}

/** The transaction's canonical encoding, or undefined for a type this code does not know. */
export function encodeTx(tx: Tx): Uint8Array | undefined {
  const type = tx.type === undefined ? 0 : Number(tx.type);
  const sig = (): RlpInput[] => [quantity(tx.yParity ?? tx.v), quantity(tx.r), quantity(tx.s)];
  const dynamic = (): RlpInput[] => [
    quantity(tx.chainId),
    quantity(tx.nonce),
    quantity(tx.maxPriorityFeePerGas),
    quantity(tx.maxFeePerGas),
    quantity(tx.gas),
    to(tx.to),
    quantity(tx.value),
    data(tx.input),
    accessList(tx.accessList),
  ];
  switch (type) {
    case 0:
      return rlp([
        quantity(tx.nonce),
        quantity(tx.gasPrice),
        quantity(tx.gas),
        to(tx.to),
        quantity(tx.value),
        data(tx.input),
        quantity(tx.v),
        quantity(tx.r),
        quantity(tx.s),
      ]);
    case 1:
      return typed(1, [
        quantity(tx.chainId),
        quantity(tx.nonce),
        quantity(tx.gasPrice),
        quantity(tx.gas),
        to(tx.to),
        quantity(tx.value),
        data(tx.input),
        accessList(tx.accessList),
        ...sig(),
      ]);
    case 2:
      return typed(2, [...dynamic(), ...sig()]);
    case 3: {
      const hashes = Array.isArray(tx.blobVersionedHashes) ? (tx.blobVersionedHashes as unknown[]).map((h) => data(h, 32)) : [];
      return typed(3, [...dynamic(), quantity(tx.maxFeePerBlobGas), hashes, ...sig()]);
    }
    case 4:
      return typed(4, [...dynamic(), authorizations(tx.authorizationList), ...sig()]);
    default:
      return undefined;
  }
}
