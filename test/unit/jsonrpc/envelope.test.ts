// JSON-RPC envelopes: raw ids and item text kept, invalid items marked without failing
// the batch, error answers written with the raw id; and, over generated input, the
// parser answers anything with items or a table error, ids surviving byte for byte.

import { expect } from 'chai';
import fc from 'fast-check';
import { ERRORS, GatewayError } from '../../../src/errors.js';
import { parseJsonRpcBody, replyError, rpcErrorText } from '../../../src/jsonrpc/envelope.js';
import { memberNameProblem } from '../../../src/jsonrpc/member-names.js';

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

/** Params without names equal ignoring case in one object (those items are refused: member-names). */
const paramsArb = fc.jsonValue({ maxDepth: 3 }).filter((v) => memberNameProblem(JSON.stringify([[v]])) === undefined);

const idArb = fc.oneof(
  fc.string().map((s) => JSON.stringify(s)),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
  fc.constant('null'),
);

describe('JSON-RPC envelopes', () => {
  it('keeps the raw id and item text of single requests and batches', () => {
    const single = parseJsonRpcBody(' {"jsonrpc":"2.0","id":1.0,"method":"m"} ');
    expect(single.batch).to.equal(false);
    expect(single.items[0]).to.include({ id: '1.0', method: 'm', raw: '{"jsonrpc":"2.0","id":1.0,"method":"m"}' });
    const batch = parseJsonRpcBody('[{"jsonrpc":"2.0","id":"a","method":"m"},{"jsonrpc":"2.0","method":"n"}]');
    expect(batch.items.map((i) => i.id)).to.deep.equal(['"a"', undefined]);
  });

  it('refuses what is not JSON, an empty batch and deep nesting', () => {
    expect(() => parseJsonRpcBody('{nope'))
      .to.throw(GatewayError)
      .with.property('code', 'PARSE_ERROR');
    expect(() => parseJsonRpcBody('[]'))
      .to.throw(GatewayError)
      .with.property('code', 'INVALID_REQUEST');
    expect(() => parseJsonRpcBody('['.repeat(100) + ']'.repeat(100)))
      .to.throw(GatewayError)
      .with.property('code', 'INVALID_REQUEST');
  });

  it('marks invalid items without failing the batch', () => {
    const { items } = parseJsonRpcBody(
      '[{"jsonrpc":"1.0","id":1,"method":"m"},{"jsonrpc":"2.0","id":2},{"jsonrpc":"2.0","id":{},"method":"m"},5,{"jsonrpc":"2.0","id":3,"method":"m","params":7},{"jsonrpc":"2.0","id":4,"method":"ok"}]',
    );
    expect(items.map((i) => i.kind === 'invalid')).to.deep.equal([true, true, true, true, true, false]);
    expect(items.map((i) => i.id)).to.deep.equal(['1', '2', undefined, undefined, '3', '4']);
  });

  it('writes error answers with the raw id', () => {
    expect(rpcErrorText('18446744073709551615', -32016, 'x')).to.equal(
      '{"jsonrpc":"2.0","id":18446744073709551615,"error":{"code":-32016,"message":"x"}}',
    );
    expect(rpcErrorText(undefined, -32700, 'y')).to.contain('"id":null');
  });

  it('reads the error member of an answer only when there is one', () => {
    expect(replyError('{"jsonrpc":"2.0","id":1,"result":"0x1"}')).to.equal(undefined);
    expect(replyError('{"jsonrpc":"2.0","id":1,"result":{"error":"inner"}}')).to.equal(undefined);
    expect(replyError('{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted"}}')).to.deep.equal({
      code: 3,
      message: 'execution reverted',
    });
  });
});

describe('JSON-RPC envelope properties', () => {
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
      fc.property(fc.array(fc.tuple(idArb, paramsArb, fc.constantFrom('', ' ', '\n\t')), { minLength: 1, maxLength: 8 }), (rows) => {
        const items = rows.map(
          ([id, params, ws]) => `{${ws}"params":${ws}${JSON.stringify([params])},"jsonrpc":"2.0","id":${ws}${id}${ws},"method":"m"}`,
        );
        const batch = parseJsonRpcBody(`[${items.join(',')}]`);
        expect(batch.items.map((i) => i.id)).to.deep.equal(rows.map(([id]) => id));
        for (const it of batch.items) expect(it.kind).to.equal('jsonrpc');
        const single = parseJsonRpcBody(items[0] as string);
        expect(single.items[0]?.id).to.equal(rows[0]?.[0]);
      }),
      { numRuns: 500 },
    );
  });
});
