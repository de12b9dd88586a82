// RLP encoding (Ethereum yellow paper, appendix B): byte strings and lists of them,
// all a block header, a transaction or a trie node is made of. Encoding only; the
// devnet's decoder of raw transactions is its own (devnet/raw-tx.ts).

export type RlpInput = Uint8Array | readonly RlpInput[];

function lengthBytes(n: number): number[] {
  const out: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v % 256);
  return out;
}

function prefix(length: number, short: number): number[] {
  return length <= 55 ? [short + length] : [short + 55 + lengthBytes(length).length, ...lengthBytes(length)];
}

/** Encoded size, so the whole encoding is written into one buffer. */
function size(v: RlpInput): number {
  if (v instanceof Uint8Array) {
    if (v.length === 1 && (v[0] as number) < 0x80) return 1;
    return prefix(v.length, 0x80).length + v.length;
  }
  let inner = 0;
  for (const item of v) inner += size(item);
  return prefix(inner, 0xc0).length + inner;
}

function write(v: RlpInput, out: Uint8Array, at: number): number {
  if (v instanceof Uint8Array) {
    if (v.length === 1 && (v[0] as number) < 0x80) {
      out[at] = v[0] as number;
      return at + 1;
    }
    const p = prefix(v.length, 0x80);
    out.set(p, at);
    out.set(v, at + p.length);
    return at + p.length + v.length;
  }
  const items = v;
  let inner = 0;
  for (const item of items) inner += size(item);
  const p = prefix(inner, 0xc0);
  out.set(p, at);
  let next = at + p.length;
  for (const item of items) next = write(item, out, next);
  return next;
}

export function rlp(v: RlpInput): Uint8Array {
  const out = new Uint8Array(size(v));
  write(v, out, 0);
  return out;
}
