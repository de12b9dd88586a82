import { expect } from 'chai';
import { fewOpenings, memberRaw, nestingDepth, splitArray } from '../../../src/jsonrpc/raw-json.js';

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

describe('opening count', () => {
  it('bounds nesting by counting brackets and braces, strings included', () => {
    expect(fewOpenings('{"a":[1,{"b":2}]}', 3)).to.equal(true);
    expect(fewOpenings('{"a":[1,{"b":2}]}', 2)).to.equal(false);
    expect(fewOpenings('"[[[["', 3)).to.equal(false);
    expect(fewOpenings('1', 0)).to.equal(true);
  });
});
