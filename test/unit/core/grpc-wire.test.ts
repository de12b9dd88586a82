// gRPC on the wire as the relay sees it: length-prefixed message framing followed
// across arbitrary chunk boundaries, the size cap, grpc-message percent-encoding,
// grpc-timeout, and the trailers-only answers of refusals.

import { expect } from 'chai';
import { ERRORS, GatewayError, type ErrorCode } from '../../../src/errors.js';
import { frameMessage, MessageScanner, splitMessages } from '../../../src/grpc/frames.js';
import {
  decodeGrpcMessage,
  encodeGrpcMessage,
  formatGrpcTimeout,
  grpcCodeName,
  parseGrpcTimeout,
  refusalHeaders,
  statusOf,
} from '../../../src/grpc/status.js';

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

describe('gRPC status', () => {
  it('names codes, and percent-encodes messages outside printable ASCII', () => {
    expect([0, 4, 14, 16, 99].map(grpcCodeName)).to.deep.equal(['OK', 'DEADLINE_EXCEEDED', 'UNAVAILABLE', 'UNAUTHENTICATED', 'CODE_99']);
    expect(encodeGrpcMessage('50% done\nnext')).to.equal('50%25 done%0Anext');
    expect(encodeGrpcMessage('höhe')).to.equal('h%C3%B6he');
    for (const text of ['plain', '100%', 'ünïcödé ✓', 'line\r\nbreak']) expect(decodeGrpcMessage(encodeGrpcMessage(text))).to.equal(text);
    expect(decodeGrpcMessage('bad %zz escape')).to.equal('bad %zz escape');
    expect(decodeGrpcMessage(undefined)).to.equal('');
  });

  it('reads grpc-timeout in every unit and writes one back', () => {
    expect(['1H', '2M', '3S', '250m', '5000u', '7000000n'].map(parseGrpcTimeout)).to.deep.equal([3_600_000, 120_000, 3_000, 250, 5, 7]);
    for (const bad of ['', '5', '5s', '-1S', '123456789S', 'S', undefined]) expect(parseGrpcTimeout(bad), String(bad)).to.equal(undefined);
    expect(formatGrpcTimeout(1500)).to.equal('1500m');
    expect(formatGrpcTimeout(0.2)).to.equal('1m');
    expect(formatGrpcTimeout(1e9)).to.equal('1000000S');
    expect(parseGrpcTimeout(formatGrpcTimeout(29_999))).to.equal(29_999);
  });

  it('reads a status from trailers, and refuses what is not one', () => {
    expect(statusOf({ 'grpc-status': '5', 'grpc-message': 'not%20found' })).to.deep.equal({ code: 5, message: 'not found' });
    expect(statusOf({ 'grpc-status': '0' })).to.deep.equal({ code: 0, message: '' });
    expect(statusOf({})).to.equal(undefined);
    expect(statusOf({ 'grpc-status': 'x' })).to.equal(undefined);
  });

  it('answers refusals trailers-only with their code, encoded message and metadata', () => {
    const h = refusalHeaders(new GatewayError('RATE_LIMITED', { headers: { 'retry-after': '3' } }), { 'ratelimit-remaining': '0' });
    expect(h).to.deep.equal({
      ':status': 200,
      'content-type': 'application/grpc',
      'retry-after': '3',
      'ratelimit-remaining': '0',
      'grpc-status': '8',
      'grpc-message': 'Rate limit exceeded',
    });
  });

  it('gives every error code a gRPC status of the spec', () => {
    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      const g = new GatewayError(code).grpcCode;
      expect(g, code).to.be.within(1, 16);
      expect(grpcCodeName(g)).to.not.match(/^CODE_/);
    }
  });
});
