// Just enough protobuf reading for probes and routing: walk a message's fields by
// number and wire type, varints as bigint-free numbers (heights fit in 2^53), nested
// messages as byte ranges. No schema, no generated code.

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

export interface Field {
  readonly no: number;
  readonly wire: number;
  /** Varint fields: the value (exact below 2^53). */
  readonly value: number;
  /** Length-delimited fields: the bytes. */
  readonly bytes: Buffer | undefined;
}

/** Reads a varint at `at`; returns [value, next offset]; throws on a truncated varint. */
export function readVarint(buf: Buffer, at: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = at; i < buf.length && i < at + 10; i++) {
    const b = buf[i] as number;
    value += (b & 0x7f) * scale;
    scale *= 128;
    if ((b & 0x80) === 0) return [value, i + 1];
  }
  throw new Error('truncated varint');
}

/** Every field of a message, in wire order; throws on malformed input. */
export function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const [tag, next] = readVarint(buf, at);
    at = next;
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === VARINT) {
      const [value, after] = readVarint(buf, at);
      out.push({ no, wire, value, bytes: undefined });
      at = after;
    } else if (wire === LEN) {
      const [len, after] = readVarint(buf, at);
      if (after + len > buf.length) throw new Error('truncated field');
      out.push({ no, wire, value: len, bytes: buf.subarray(after, after + len) });
      at = after + len;
    } else if (wire === I64 || wire === I32) {
      at += wire === I64 ? 8 : 4;
      if (at > buf.length) throw new Error('truncated field');
      out.push({ no, wire, value: 0, bytes: undefined });
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

/** The last occurrence of a length-delimited field (protobuf: the last one wins). */
export function message(buf: Buffer | undefined, no: number): Buffer | undefined {
  if (buf === undefined) return undefined;
  let found: Buffer | undefined;
  for (const f of fields(buf)) if (f.no === no && f.wire === LEN) found = f.bytes;
  return found;
}

/** The last occurrence of a varint field; undefined when absent (proto3 default 0). */
export function varint(buf: Buffer | undefined, no: number): number | undefined {
  if (buf === undefined) return undefined;
  let found: number | undefined;
  for (const f of fields(buf)) if (f.no === no && f.wire === VARINT) found = f.value;
  return found;
}
