// gRPC message framing as the relay sees it: length-prefixed messages followed across
// arbitrary chunk boundaries, and the size cap.

import { expect } from 'chai';
import { frameMessage, MessageScanner, splitMessages } from '../../../src/grpc-wire/frames.js';

function chunks(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}

describe('gRPC framing', () => {
  const a = Buffer.from('first message');
  const b = Buffer.alloc(300, 7);
  const both = Buffer.concat([frameMessage(a), frameMessage(b, true), frameMessage(Buffer.alloc(0))]);

  it('frames a message behind its flag and 4-byte big-endian length, and splits whole bodies back', () => {
    expect(frameMessage(Buffer.from([1, 2])).toString('hex')).to.equal('00000000020102');
    const messages = splitMessages(both);
    expect(messages?.map((m) => [m.compressed, m.payload.length])).to.deep.equal([
      [false, a.length],
      [true, 300],
      [false, 0],
    ]);
    expect(messages?.[0]?.payload.equals(a)).to.equal(true);
    expect(splitMessages(Buffer.alloc(0))).to.deep.equal([]);
  });

  it('refuses bodies that do not end on a message boundary', () => {
    expect(splitMessages(both.subarray(0, both.length - 1))).to.equal(undefined);
    expect(splitMessages(Buffer.from([0, 0, 0]))).to.equal(undefined);
  });

  it('follows boundaries whatever the chunking, without copying messages', () => {
    for (const size of [1, 2, 3, 5, 7, 64, both.length]) {
      const scanner = new MessageScanner(1_000);
      for (const c of chunks(both, size)) expect(scanner.push(c)).to.equal(true);
      expect(scanner.started, `chunks of ${size}`).to.equal(3);
      expect(scanner.atBoundary).to.equal(true);
    }
    const partial = new MessageScanner(1_000);
    partial.push(both.subarray(0, 10));
    expect(partial.atBoundary).to.equal(false);
  });

  it('stops at the prefix of a message over the cap, before its bytes arrive', () => {
    const scanner = new MessageScanner(299);
    expect(scanner.push(frameMessage(a))).to.equal(true);
    expect(scanner.push(frameMessage(b).subarray(0, 5))).to.equal(false);
  });
});
