import { expect } from 'chai';
import { fewOpenings, memberRaw, nestingDepth, splitArray } from '../../../src/jsonrpc/raw-json.js';
import { parseJsonRpcBody, replyError, rpcErrorText } from '../../../src/jsonrpc/envelope.js';
import { GatewayError } from '../../../src/errors.js';
import { isInvalid } from '../../../src/plugin.js';

describe('raw JSON views', () => {
  it('splits a batch into the raw text of each member', () => {
    expect(splitArray(' [ {"a":[1,2]} , "x,]" ,3, {"s":"\\"}"} ] ')).to.deep.equal(['{"a":[1,2]}', '"x,]"', '3', '{"s":"\\"}"}']);
    expect(splitArray('[]')).to.deep.equal([]);
    expect(splitArray('{"a":1}')).to.equal(undefined);
    expect(splitArray('[1,2')).to.equal(undefined);
  });

  it('finds the raw text of a member, skipping nested values and strings', () => {
    const text = '{"params":[{"id":9}],"s":"\\"id\\":7","id":18446744073709551615,"x":1}';
    expect(memberRaw(text, 'id')).to.equal('18446744073709551615');
    expect(memberRaw('{"id":"\\u0041"}', 'id')).to.equal('"\\u0041"');
    expect(memberRaw('{"\\u0069d":1.0}', 'id')).to.equal('1.0');
    expect(memberRaw('{"a":1}', 'id')).to.equal(undefined);
  });

  it('measures nesting depth and stops early past the limit', () => {
    expect(nestingDepth('{"a":[[1]]}', 10)).to.equal(3);
    expect(nestingDepth('"[[[["', 10)).to.equal(0);
    expect(nestingDepth('['.repeat(100) + ']'.repeat(100), 10)).to.equal(11);
  });
});

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
    expect(items.map((i) => isInvalid(i))).to.deep.equal([true, true, true, true, true, false]);
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

describe('opening count', () => {
  it('bounds nesting by counting brackets and braces, strings included', () => {
    expect(fewOpenings('{"a":[1,{"b":2}]}', 3)).to.equal(true);
    expect(fewOpenings('{"a":[1,{"b":2}]}', 2)).to.equal(false);
    expect(fewOpenings('"[[[["', 3)).to.equal(false);
    expect(fewOpenings('1', 0)).to.equal(true);
  });
});
