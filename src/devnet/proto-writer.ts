// A tiny protobuf writer for the devnet's gRPC nodes: varint, bytes, string and nested
// message fields, enough to answer the few SDK queries they serve. Messages are built
// by hand, field number by field number; no .proto files, no generated code.

function varintBytes(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  private tag(no: number, wire: number): void {
    this.parts.push(Buffer.from(varintBytes(no * 8 + wire)));
  }

  /** A varint field (uint64, int64 of non-negative values, enums, bools). Zero is written too. */
  uint(no: number, value: number): this {
    this.tag(no, 0);
    this.parts.push(Buffer.from(varintBytes(value)));
    return this;
  }

  bytes(no: number, value: Buffer): this {
    this.tag(no, 2);
    this.parts.push(Buffer.from(varintBytes(value.length)), value);
    return this;
  }

  string(no: number, value: string): this {
    return this.bytes(no, Buffer.from(value, 'utf8'));
  }

  message(no: number, value: ProtoWriter): this {
    return this.bytes(no, value.finish());
  }

  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

export const pb = (): ProtoWriter => new ProtoWriter();
