// Member names a Go node reads differently from JSON.parse: duplicates (Go keeps the
// last, JSON.parse too, but the gateway must not guess) and case variants (Go matches
// struct fields in any case). Each body is what an attacker would send.

import { expect } from 'chai';
import { parseJsonRpcBody } from '../../../src/jsonrpc/envelope.js';
import { ENVELOPE_NAMES, exactNames, memberNameProblem, unambiguousId } from '../../../src/jsonrpc/member-names.js';
import type { RpcItem } from '../../../src/plugin/contract.js';

const isInvalid = (item: RpcItem | undefined): item is Extract<RpcItem, { kind: 'invalid' }> => item?.kind === 'invalid';

const EVM_NAMES = exactNames(['fromBlock', 'toBlock', 'blockHash', 'blockNumber']);

function only(text: string, names = EVM_NAMES): RpcItem {
  const { items } = parseJsonRpcBody(text, undefined, { names });
  expect(items).to.have.length(1);
  return items[0] as RpcItem;
}

function refused(text: string, names = EVM_NAMES): string {
  const item = only(text, names);
  expect(isInvalid(item), text).to.equal(true);
  return (item as { message: string }).message;
}

describe('member names a Go node reads otherwise', () => {
  it('refuses an envelope member given twice: the node would run the last one', () => {
    expect(refused('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","method":"debug_setHead","params":["0x0"]}')).to.match(
      /"method" appears twice/,
    );
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab","latest"],"params":["0xab","0x0"]}');
    refused('{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"eth_chainId"}');
  });

  it('refuses envelope names in another case, alone or beside the real one', () => {
    // Alone: JSON.parse sees no params (latest), geth runs PARAMS (block 0).
    expect(refused('{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","PARAMS":["0xab","0x0"]}')).to.match(
      /"PARAMS" is "params" in another case/,
    );
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","Method":"debug_setHead"}');
    refused('{"JsonRpc":"2.0","jsonrpc":"2.0","id":1,"method":"eth_chainId"}');
    refused('{"jsonrpc":"2.0","id":1,"Id":2,"method":"eth_chainId"}');
    // Go's folding also maps some non-ASCII letters onto ASCII ones.
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","paramſ":["x"]}');
    refused('{"jsonrpc":"2.0","\u0130d":1,"method":"eth_chainId"}');
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","meth\\u006fD":"debug_setHead"}');
  });

  it('answers a refused item with its id only when the id is beyond doubt', () => {
    expect(only('{"jsonrpc":"2.0","id":7,"method":"a","Method":"b"}').id).to.equal('7');
    expect(only('{"jsonrpc":"2.0","id":7,"ID":8,"method":"a"}').id).to.equal(undefined);
    expect(only('{"jsonrpc":"2.0","id":7,"id":8,"method":"a"}').id).to.equal(undefined);
    expect(only('{"jsonrpc":"2.0","id":{"x":1},"method":"a","Method":"b"}').id).to.equal(undefined);
    expect(unambiguousId(' {"a":{"id":1}, "id" : "x" ,"b":2}')).to.equal('"x"');
    expect(unambiguousId('{"\\u0069d":5,"method":"m"}')).to.equal('5');
  });

  it('refuses duplicates and case variants inside params, at any depth', () => {
    // eth_getLogs: the gateway would classify fromBlock, geth would run FromBlock.
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"latest","FromBlock":"0x0"}]}');
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"latest","fromBlock":"0x0"}]}');
    // EIP-1898 block objects and eth_call objects.
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab",{"blockHash":"0x01","BlockHash":"0x02"}]}');
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x01","data":"0x","to":"0x02"},"latest"]}');
    refused('{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[{"b":{"deep":1,"DEEP":2}}]}}');
    // Escaped names are compared decoded; lone surrogates are U+FFFD to Go.
    refused('{"jsonrpc":"2.0","id":1,"method":"m","params":[{"to":1,"\\u0074o":2}]}');
    refused('{"jsonrpc":"2.0","id":1,"method":"m","params":[{"\\ud800":1,"\\udc00":2}]}');
    refused('{"jsonrpc":"2.0","id":1,"method":"m","params":[{"\u00e9":1,"\u00c9":2}]}');
  });

  it("refuses the plugin's names spelt otherwise inside params, even alone", () => {
    // geth reads {"BlockNumber":"0x0"} as block 0; JSON.parse sees no block (latest).
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab",{"BlockNumber":"0x0"}]}');
    refused('{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"FROMBLOCK":"0x0"}]}');
    // Without those names (another plugin), a lone variant inside params is the node's business.
    expect(isInvalid(only('{"jsonrpc":"2.0","id":1,"method":"m","params":[{"FromBlock":"0x0"}]}', ENVELOPE_NAMES))).to.equal(false);
  });

  it('keeps what Go reads the same way: same names in different objects, exact spellings', () => {
    const ok = [
      '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x1","toBlock":"latest","address":["0xab"],"topics":[null]}]}',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":[{"a":1},{"a":2},{"A":3}]}',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":{"x":{"x":1}},"y":"x"}}',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":["Method","METHOD",{"s":"\\"method\\":1,"}]}',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":[{"\u00df":1,"ss":2}]}',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":[{}],"extra":{}}',
    ];
    for (const text of ok) expect(isInvalid(only(text)), text).to.equal(false);
  });

  it('forgets the names of a closed object, escaped ones included', () => {
    // The inner object's escaped name must not stand in for the outer "b" afterwards.
    expect(memberNameProblem('{"a":{"x\\u0031":1},"b":2,"B":3}')).to.match(/"B" appears twice/);
    expect(memberNameProblem('{"a":{"b":1},"b":2}')).to.equal(undefined);
  });

  it('finds duplicates in objects of any size, in linear time', () => {
    const members = Array.from({ length: 20_000 }, (_, i) => `"k${i}":${i}`);
    const big = `{"jsonrpc":"2.0","id":1,"method":"m","params":[{${members.join(',')}}]}`;
    expect(memberNameProblem(big)).to.equal(undefined);
    const dup = `{"jsonrpc":"2.0","id":1,"method":"m","params":[{${members.join(',')},"K19999":0}]}`;
    expect(memberNameProblem(dup)).to.match(/"K19999" appears twice/);
    const early = `{"jsonrpc":"2.0","id":1,"method":"m","params":[{${members.slice(0, 40).join(',')},"K3":0}]}`;
    expect(memberNameProblem(early)).to.match(/"K3" appears twice/);
  });

  it('cuts long names in the message', () => {
    const name = 'a'.repeat(5000);
    const message = memberNameProblem(`{"${name}":1,"${name.toUpperCase()}":2}`) as string;
    expect(message.length).to.be.below(200);
  });

  it('refuses only the offending item of a batch', () => {
    const { batch, items } = parseJsonRpcBody(
      '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","Method":"debug_setHead"},{"jsonrpc":"2.0","id":3,"method":"eth_blockNumber"}]',
    );
    expect(batch).to.equal(true);
    expect(items.map((i) => isInvalid(i))).to.deep.equal([false, true, false]);
    expect(items.map((i) => i.id)).to.deep.equal(['1', '2', '3']);
  });
});
