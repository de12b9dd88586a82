// A block's hash recomputed from the header fields a node answered with: keccak-256 of
// the RLP list of the fields, in their order. Which fields are in the list follows the
// forks the block was made under, and a block JSON shows them by their presence: the
// 15 of the original header, then London's baseFeePerGas, Shanghai's withdrawalsRoot,
// Cancun's blobGasUsed, excessBlobGas and parentBeaconBlockRoot, Prague's requestsHash.
// A later fork's field without an earlier one's is no header of any fork.

import { keccak_256 } from '@noble/hashes/sha3.js';
import { BadField, data, quantity } from './hex.js';
import { rlp, type RlpInput } from './rlp.js';

type Read = (v: unknown) => Uint8Array;

const hash32: Read = (v) => data(v, 32);

/** The original header, in RLP order. */
const LEGACY: ReadonlyArray<readonly [string, Read]> = [
  ['parentHash', hash32],
  ['sha3Uncles', hash32],
  ['miner', (v) => data(v, 20)],
  ['stateRoot', hash32],
  ['transactionsRoot', hash32],
  ['receiptsRoot', hash32],
  ['logsBloom', (v) => data(v, 256)],
  ['difficulty', quantity],
  ['number', quantity],
  ['gasLimit', quantity],
  ['gasUsed', quantity],
  ['timestamp', quantity],
  ['extraData', (v) => data(v)],
  ['mixHash', hash32],
  ['nonce', (v) => data(v, 8)],
];

/** Fields later forks appended, in order. */
const FORKS: ReadonlyArray<readonly [string, Read]> = [
  ['baseFeePerGas', quantity],
  ['withdrawalsRoot', hash32],
  ['blobGasUsed', quantity],
  ['excessBlobGas', quantity],
  ['parentBeaconBlockRoot', hash32],
  ['requestsHash', hash32],
];

/** The header's RLP fields; throws BadField when the block's fields make no header. */
export function headerFields(block: Readonly<Record<string, unknown>>): RlpInput[] {
  const fields: RlpInput[] = LEGACY.map(([name, read]) => read(block[name]));
  let ended = false;
  for (const [name, read] of FORKS) {
    const v = block[name];
    if (v === undefined || v === null) {
      ended = true;
      continue;
    }
    if (ended) throw new BadField(`${name} without the fields of the forks before it`);
    fields.push(read(v));
  }
  return fields;
}

/** keccak-256 of the header's RLP. */
export function headerHash(block: Readonly<Record<string, unknown>>): Uint8Array {
  return keccak_256(rlp(headerFields(block)));
}
