// What the EVM plugin checks of an answer before it is relayed (the codec's `check`):
// a block's hash recomputed from its header (header.ts) and, with full transactions,
// its transactions root (transactions.ts, trie.ts); a transaction's hash from its
// fields; a receipt's transaction hash against the one asked for. Only answers these
// methods give are read; everything else, and empty answers (null, an error), are
// "unchecked". A block answer that fails is a node that lies or is broken.

import { keccak_256 } from '@noble/hashes/sha3.js';
import type { AnswerCheck, JsonRpcCall, JsonRpcReply } from 'noderouter/plugin';
import { headerHash } from './header.js';
import { BadField, data, toHex } from './hex.js';
import { encodeTx } from './transactions.js';
import { orderedTrieRoot } from './trie.js';

type Json = Readonly<Record<string, unknown>>;
type Kind = 'blockByNumber' | 'blockByHash' | 'tx' | 'receipt';

const KINDS: ReadonlyMap<string, Kind> = new Map([
  ['getBlockByNumber', 'blockByNumber'],
  ['getBlockByHash', 'blockByHash'],
  ['getTransactionByHash', 'tx'],
  ['getTransactionReceipt', 'receipt'],
]);

/** Which check a method of one of the chain's namespaces gets, by the part after the namespace; undefined: none. */
function checkKind(method: string, namespaces: readonly string[]): Kind | undefined {
  const i = method.indexOf('_');
  if (i < 0) return undefined;
  const kind = KINDS.get(method.slice(i + 1));
  // Only the configured namespaces: the method is a metric label, so its set stays bounded.
  return kind !== undefined && namespaces.includes(method.slice(0, i)) ? kind : undefined;
}

const same = (a: unknown, b: unknown): boolean => typeof a === 'string' && typeof b === 'string' && a.toLowerCase() === b.toLowerCase();

/**
 * A block as a node gave it: its hash is its header's, it is the block asked for, and
 * with full transactions its transactions root is theirs (unless a type is unknown).
 */
export function checkBlock(block: Json, asked: unknown, byHash: boolean, full: boolean): AnswerCheck {
  const hash = block.hash;
  // A pending block has no hash yet: nothing to check it against.
  if (hash === null || hash === undefined) return 'unchecked';
  if (byHash && !same(hash, asked)) return 'mismatch';
  if (!byHash && typeof asked === 'string' && asked.startsWith('0x') && !same(block.number, asked)) {
    // Asked by number: the block of that number (a node may write it without leading zeros).
    if (typeof block.number !== 'string' || parseInt(block.number, 16) !== parseInt(asked, 16)) return 'mismatch';
  }
  if (toHex(headerHash(block)) !== String(hash).toLowerCase()) return 'mismatch';
  const txs = block.transactions;
  if (full && Array.isArray(txs)) {
    const encoded: Uint8Array[] = [];
    for (const tx of txs as unknown[]) {
      if (tx === null || typeof tx !== 'object') return 'verified';
      const e = encodeTx(tx as Json);
      if (e === undefined) return 'verified';
      encoded.push(e);
    }
    if (toHex(orderedTrieRoot(encoded)) !== toHex(data(block.transactionsRoot, 32))) return 'mismatch';
  }
  return 'verified';
}

/** The head block a probe read (`latest`, hashes only). */
export function checkHead(block: Json): AnswerCheck {
  try {
    return checkBlock(block, 'latest', false, false);
  } catch (err) {
    if (err instanceof BadField) return 'mismatch';
    throw err;
  }
}

/** A transaction is the one asked for, and its hash is its fields' (for known types). */
function checkTx(tx: Json, asked: unknown): AnswerCheck {
  if (!same(tx.hash, asked)) return 'mismatch';
  const e = encodeTx(tx);
  if (e === undefined) return 'unchecked';
  return toHex(keccak_256(e)) === String(tx.hash).toLowerCase() ? 'verified' : 'mismatch';
}

function checkReceipt(receipt: Json, asked: unknown): AnswerCheck {
  if (!same(receipt.transactionHash, asked)) return 'mismatch';
  data(receipt.blockHash, 32);
  return 'verified';
}

/** The codec's check: read the answer only for the methods checked (in `namespaces`), and only when it has a result. */
export function checkAnswer(call: JsonRpcCall, reply: JsonRpcReply, namespaces: readonly string[] = ['eth']): AnswerCheck {
  const kind = checkKind(call.method, namespaces);
  if (kind === undefined || reply.error !== undefined) return 'unchecked';
  let result: unknown;
  try {
    result = (JSON.parse(reply.text) as { result?: unknown }).result;
  } catch {
    return 'unchecked';
  }
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return 'unchecked';
  const params = Array.isArray(call.params) ? (call.params as unknown[]) : [];
  try {
    switch (kind) {
      case 'blockByNumber':
      case 'blockByHash':
        return checkBlock(result as Json, params[0], kind === 'blockByHash', params[1] === true);
      case 'tx':
        return checkTx(result as Json, params[0]);
      case 'receipt':
        return checkReceipt(result as Json, params[0]);
    }
  } catch (err) {
    // Fields that make no block, transaction or receipt: not the answer asked for.
    if (err instanceof BadField) return 'mismatch';
    throw err;
  }
}
