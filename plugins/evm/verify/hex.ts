// JSON-RPC quantities and data, as nodes write them, into the bytes RLP encodes: a
// quantity loses its leading zero bytes (0 is the empty string), data keeps its length.
// Anything malformed throws BadField, which the checks read as "not this block".

export class BadField extends Error {}

const DATA = /^0x(?:[0-9a-fA-F]{2})*$/;
const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;

/** `0x…` data of any length (or exactly `length` bytes when given). */
export function data(v: unknown, length?: number): Uint8Array {
  if (typeof v !== 'string' || !DATA.test(v)) throw new BadField('not hex data');
  const b = Buffer.from(v.slice(2), 'hex');
  if (length !== undefined && b.length !== length) throw new BadField(`not ${length} bytes`);
  return b;
}

/** A quantity (`0x1a`, `0x0`) as minimal big-endian bytes. */
export function quantity(v: unknown): Uint8Array {
  if (typeof v !== 'string' || !QUANTITY.test(v)) throw new BadField('not a quantity');
  let start = 2;
  while (start < v.length && v.charCodeAt(start) === 48) start++;
  const digits = v.slice(start);
  return Buffer.from(digits.length % 2 === 1 ? `0${digits}` : digits, 'hex');
}

export function toHex(b: Uint8Array): string {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}
