// Properties of the JSON-RPC parser and the path normaliser over generated input:
// any input gives a parse or a table error (never another exception), ids survive
// byte for byte, and normalised paths hold no dot segments or empty segments.

import { expect } from 'chai';
import fc from 'fast-check';
import { ERRORS, GatewayError } from '../../../src/errors.js';
import { parseJsonRpcBody } from '../../../src/jsonrpc/envelope.js';
import { normalizePath } from '../../../src/http/path.js';
import { isInvalid } from '../../../src/plugin.js';

const TABLE_CODES = new Set(Object.keys(ERRORS));

function outcome(text: string): 'ok' | 'table-error' {
  try {
    parseJsonRpcBody(text);
    return 'ok';
  } catch (err) {
    if (err instanceof GatewayError && TABLE_CODES.has(err.code)) return 'table-error';
    throw err;
  }
}

const idArb = fc.oneof(
  fc.string().map((s) => JSON.stringify(s)),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
  fc.constant('null'),
);

describe('properties', () => {
  it('the parser answers any text with items or a table error', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        outcome(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('the parser answers any JSON value with items or a table error', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        outcome(JSON.stringify(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps every id byte for byte, in single requests and batches, whatever the spacing', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(idArb, fc.jsonValue({ maxDepth: 3 }), fc.constantFrom('', ' ', '\n\t')), { minLength: 1, maxLength: 8 }),
        (rows) => {
          const items = rows.map(
            ([id, params, ws]) => `{${ws}"params":${ws}${JSON.stringify([params])},"jsonrpc":"2.0","id":${ws}${id}${ws},"method":"m"}`,
          );
          const batch = parseJsonRpcBody(`[${items.join(',')}]`);
          expect(batch.items.map((i) => i.id)).to.deep.equal(rows.map(([id]) => id));
          for (const it of batch.items) expect(isInvalid(it)).to.equal(false);
          const single = parseJsonRpcBody(items[0] as string);
          expect(single.items[0]?.id).to.equal(rows[0]?.[0]);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('normalised paths have no dot, empty or encoded-separator segments, or a table error', () => {
    const segment = fc.oneof(
      fc.constantFrom('.', '..', '', '%2e', '%2E%2e', 'a', 'hub', 'rest', '%2F', '%5c', '\\', 'x.y'),
      fc.string({ maxLength: 6 }).filter((s) => !s.includes('/') && !s.includes('?')),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 12 }), (parts) => {
        const path = `/${parts.join('/')}`;
        let out: string;
        try {
          out = normalizePath(path, 2048);
        } catch (err) {
          expect(err).to.be.instanceOf(GatewayError);
          expect((err as GatewayError).code).to.equal('INVALID_REQUEST');
          return;
        }
        expect(out.startsWith('/')).to.equal(true);
        const segs = out.split('/').slice(1);
        for (const [i, s] of segs.entries()) {
          const decoded = s.replace(/%2e/gi, '.');
          expect(decoded === '.' || decoded === '..', out).to.equal(false);
          if (i < segs.length - 1) expect(s, out).to.not.equal('');
        }
        expect(out.toLowerCase()).to.not.match(/%2f|%5c/);
      }),
      { numRuns: 3000 },
    );
  });
});
