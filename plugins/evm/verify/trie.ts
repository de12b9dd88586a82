// The root of an ordered Merkle-Patricia trie (yellow paper, appendix D): the trie a
// block's transactions (or withdrawals, receipts) are committed to, keyed by the RLP of
// each item's index. Built once from the sorted keys; nodes under 32 bytes are embedded
// in their parent, others referenced by their keccak-256.

import { keccak_256 } from '@noble/hashes/sha3.js';
import { rlp, type RlpInput } from './rlp.js';

const EMPTY = new Uint8Array(0);

interface Pair {
  readonly key: readonly number[];
  readonly value: Uint8Array;
}

function nibbles(b: Uint8Array): number[] {
  const out: number[] = [];
  for (const x of b) out.push(x >> 4, x & 15);
  return out;
}

/** Hex-prefix encoding of a path (its parity and whether it ends in a leaf, in the first nibble). */
function hexPrefix(path: readonly number[], leaf: boolean): Uint8Array {
  const odd = path.length % 2 === 1;
  const flag = (leaf ? 2 : 0) + (odd ? 1 : 0);
  const all = odd ? [flag, ...path] : [flag, 0, ...path];
  const out = new Uint8Array(all.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = ((all[2 * i] as number) << 4) | (all[2 * i + 1] as number);
  return out;
}

/** A child as its parent holds it: embedded when its encoding is under 32 bytes, else its hash. */
function ref(node: RlpInput): RlpInput {
  const encoded = rlp(node);
  return encoded.length < 32 ? node : keccak_256(encoded);
}

function build(pairs: readonly Pair[], depth: number): RlpInput {
  const first = pairs[0] as Pair;
  if (pairs.length === 1) return [hexPrefix(first.key.slice(depth), true), first.value];
  let common = 0;
  for (;;) {
    const n = first.key[depth + common];
    if (n === undefined || !pairs.every((p) => p.key[depth + common] === n)) break;
    common++;
  }
  if (common > 0) return [hexPrefix(first.key.slice(depth, depth + common), false), ref(build(pairs, depth + common))];
  const branch: RlpInput[] = new Array<RlpInput>(17).fill(EMPTY);
  for (let nibble = 0; nibble < 16; nibble++) {
    const group = pairs.filter((p) => p.key[depth] === nibble);
    if (group.length > 0) branch[nibble] = ref(build(group, depth + 1));
  }
  const here = pairs.find((p) => p.key.length === depth);
  if (here !== undefined) branch[16] = here.value;
  return branch;
}

/** The root of the trie of `values` keyed by the RLP of their index (0, 1, 2, …). */
export function orderedTrieRoot(values: readonly Uint8Array[]): Uint8Array {
  if (values.length === 0) return keccak_256(rlp(EMPTY));
  const pairs = values.map((value, i) => ({ key: nibbles(rlp(indexBytes(i))), value }));
  return keccak_256(rlp(build(pairs, 0)));
}

function indexBytes(i: number): Uint8Array {
  const out: number[] = [];
  for (let v = i; v > 0; v = Math.floor(v / 256)) out.unshift(v % 256);
  return Uint8Array.from(out);
}
