// gRPC status on the wire: grpc-message percent-encoding, grpc-timeout, and the
// trailers-only answers of refusals.

import { expect } from 'chai';
import { ERRORS, GatewayError, type ErrorCode } from '../../../src/errors.js';
import {
  decodeGrpcMessage,
  encodeGrpcMessage,
  formatGrpcTimeout,
  grpcCodeName,
  parseGrpcTimeout,
  refusalHeaders,
  statusOf,
} from '../../../src/grpc-wire/status.js';

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
