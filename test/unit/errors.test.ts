// The error catalogue agrees with the one error table in DESIGN.md and docs/errors.md.

import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { ERRORS, GatewayError, type ErrorCode } from '../../src/errors.js';

describe('error catalogue', () => {
  it('gives every code its status, JSON-RPC code and gRPC status', () => {
    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      const e = new GatewayError(code);
      expect(e.code).to.equal(code);
      expect(e.status).to.equal(ERRORS[code].status);
      expect(e.rpcCode).to.equal(ERRORS[code].rpc);
      expect(e.grpcCode).to.equal(ERRORS[code].grpc);
      expect(e.message).to.equal(ERRORS[code].message);
    }
  });

  it('matches the error table of docs/errors.md row by row', async () => {
    const page = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    // The data plane's table: the rows before the control-plane part.
    const end = page.indexOf('\n## Control plane errors\n');
    expect(end).to.be.greaterThan(0);
    const section = page.slice(0, end);
    const rows = section.split('\n').filter((l) => /^\| `[A-Z_]+` \|/.test(l));
    const seen = new Set<string>();
    for (const row of rows) {
      const [, code, status, rpc, grpc] = row.split('|').map((c) => c.trim());
      const key = (code as string).replace(/`/g, '') as ErrorCode;
      expect(ERRORS[key], `docs/errors.md names unknown code ${key}`).to.not.equal(undefined);
      expect(Number(status), key).to.equal(ERRORS[key].status);
      expect(Number(rpc), key).to.equal(ERRORS[key].rpc);
      // "16 UNAUTHENTICATED": the number, then its name.
      expect(Number((grpc as string).split(' ')[0]), key).to.equal(ERRORS[key].grpc);
      seen.add(key);
    }
    expect([...seen].sort()).to.deep.equal(Object.keys(ERRORS).sort());
  });

  it('maps the DESIGN.md table cases to these codes', () => {
    const table: Array<[ErrorCode, number, number]> = [
      ['PARSE_ERROR', 400, -32700],
      ['INVALID_REQUEST', 400, -32600],
      ['MISSING_KEY', 401, -32016],
      ['CONFLICTING_KEYS', 401, -32016],
      ['INVALID_KEY', 401, -32016],
      ['FORBIDDEN', 403, -32004],
      ['METHOD_NOT_FOUND', 200, -32601],
      ['RATE_LIMITED', 429, -32005],
      ['QUOTA_EXCEEDED', 429, -32005],
      ['BODY_TOO_LARGE', 413, -32600],
      ['BATCH_TOO_LARGE', 413, -32600],
      ['HEADERS_TOO_LARGE', 431, -32600],
      ['NO_HEALTHY_NODE', 503, -32603],
      ['UPSTREAM_FAILED', 502, -32603],
      ['UPSTREAM_TIMEOUT', 504, -32603],
    ];
    for (const [code, status, rpc] of table) expect([ERRORS[code].status, ERRORS[code].rpc], code).to.deep.equal([status, rpc]);
  });

  it('maps the DESIGN.md gRPC cases to UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED', () => {
    const table: Array<[ErrorCode, number]> = [
      ['MISSING_KEY', 16],
      ['CONFLICTING_KEYS', 16],
      ['INVALID_KEY', 16],
      ['FORBIDDEN', 7],
      ['RATE_LIMITED', 8],
      ['QUOTA_EXCEEDED', 8],
      ['NO_HEALTHY_NODE', 14],
      ['UNAVAILABLE', 14],
      ['UPSTREAM_FAILED', 14],
      ['UPSTREAM_TIMEOUT', 4],
      ['INVALID_REQUEST', 3],
      ['ENDPOINT_NOT_FOUND', 12],
      ['METHOD_NOT_FOUND', 12],
    ];
    for (const [code, grpc] of table) expect(ERRORS[code].grpc, code).to.equal(grpc);
  });
});
