// gRPC's length-prefixed messages: a 1-byte compressed flag and a 4-byte big-endian
// length before each message. The relay never decodes messages; it only needs their
// boundaries: to read a request's one message, and to hold each answered message to
// the size cap while bytes stream through untouched.

export const PREFIX_BYTES = 5;

export interface GrpcMessage {
  readonly compressed: boolean;
  readonly payload: Buffer;
}

/** One message with its prefix. */
export function frameMessage(payload: Buffer, compressed = false): Buffer {
  const out = Buffer.allocUnsafe(PREFIX_BYTES + payload.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(payload.length, 1);
  payload.copy(out, PREFIX_BYTES);
  return out;
}

/** The messages of a whole body; undefined when it does not end on a message boundary. */
export function splitMessages(body: Buffer): GrpcMessage[] | undefined {
  const out: GrpcMessage[] = [];
  let at = 0;
  while (at < body.length) {
    if (body.length - at < PREFIX_BYTES) return undefined;
    const length = body.readUInt32BE(at + 1);
    const end = at + PREFIX_BYTES + length;
    if (end > body.length) return undefined;
    out.push({ compressed: body[at] === 1, payload: body.subarray(at + PREFIX_BYTES, end) });
    at = end;
  }
  return out;
}

/**
 * Follows message boundaries across chunks without copying them: how many messages
 * have started and ended, and whether one declares more than `maxMessageBytes`.
 */
export class MessageScanner {
  /** Messages whose prefix has been read (the last may be incomplete). */
  started = 0;
  private prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixRead = 0;
  private bodyLeft = 0;

  constructor(private readonly maxMessageBytes: number) {}

  /** False as soon as a message declares more bytes than the cap. */
  push(chunk: Buffer): boolean {
    let at = 0;
    while (at < chunk.length) {
      if (this.bodyLeft > 0) {
        const take = Math.min(this.bodyLeft, chunk.length - at);
        this.bodyLeft -= take;
        at += take;
        continue;
      }
      const take = Math.min(PREFIX_BYTES - this.prefixRead, chunk.length - at);
      chunk.copy(this.prefix, this.prefixRead, at, at + take);
      this.prefixRead += take;
      at += take;
      if (this.prefixRead === PREFIX_BYTES) {
        this.prefixRead = 0;
        this.started++;
        this.bodyLeft = this.prefix.readUInt32BE(1);
        if (this.bodyLeft > this.maxMessageBytes) return false;
      }
    }
    return true;
  }

  /** True between messages (every message read whole). */
  get atBoundary(): boolean {
    return this.bodyLeft === 0 && this.prefixRead === 0;
  }
}
