// Keccak-256 as Ethereum uses it (the original Keccak padding, not NIST SHA3-256, which
// is all node:crypto offers): transaction hashes of the devnet's EVM nodes. BigInt
// lanes; slow next to a native hash, and plenty for the transactions a devnet sees.

const MASK = (1n << 64n) - 1n;
const RATE = 136;

/** Rotation of lane x + 5y. */
const ROTATION = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14];

/** The 24 round constants, from the LFSR that defines them. */
const ROUND_CONSTANTS: readonly bigint[] = (() => {
  const out: bigint[] = [];
  let r = 1;
  for (let round = 0; round < 24; round++) {
    let c = 0n;
    for (let j = 0; j < 7; j++) {
      if ((r & 1) !== 0) c |= 1n << BigInt((1 << j) - 1);
      r = (r & 0x80) !== 0 ? ((r << 1) ^ 0x71) & 0xff : (r << 1) & 0xff;
    }
    out.push(c);
  }
  return out;
})();

function rotl(x: bigint, n: number): bigint {
  return n === 0 ? x : ((x << BigInt(n)) | (x >> BigInt(64 - n))) & MASK;
}

function permute(s: bigint[]): void {
  const c: bigint[] = new Array<bigint>(5);
  const b: bigint[] = new Array<bigint>(25);
  for (const rc of ROUND_CONSTANTS) {
    for (let x = 0; x < 5; x++) c[x] = s[x]! ^ s[x + 5]! ^ s[x + 10]! ^ s[x + 15]! ^ s[x + 20]!;
    for (let x = 0; x < 5; x++) {
      const d = c[(x + 4) % 5]! ^ rotl(c[(x + 1) % 5]!, 1);
      for (let y = 0; y < 25; y += 5) s[x + y] = s[x + y]! ^ d;
    }
    for (let x = 0; x < 5; x++) {
      for (let y = 0; y < 5; y++) b[y + 5 * ((2 * x + 3 * y) % 5)] = rotl(s[x + 5 * y]!, ROTATION[x + 5 * y]!);
    }
    for (let y = 0; y < 25; y += 5) {
      for (let x = 0; x < 5; x++) s[x + y] = b[x + y]! ^ (~b[((x + 1) % 5) + y]! & MASK & b[((x + 2) % 5) + y]!);
    }
    s[0] = s[0]! ^ rc;
  }
}

export function keccak256(data: Uint8Array): Buffer {
  const blocks = Math.floor(data.length / RATE) + 1;
  const padded = Buffer.alloc(blocks * RATE);
  padded.set(data);
  padded[data.length] = 0x01;
  padded[padded.length - 1] = padded[padded.length - 1]! | 0x80;
  const s = new Array<bigint>(25).fill(0n);
  for (let off = 0; off < padded.length; off += RATE) {
    for (let i = 0; i < RATE / 8; i++) s[i] = s[i]! ^ padded.readBigUInt64LE(off + i * 8);
    permute(s);
  }
  const out = Buffer.alloc(32);
  for (let i = 0; i < 4; i++) out.writeBigUInt64LE(s[i]!, i * 8);
  return out;
}
