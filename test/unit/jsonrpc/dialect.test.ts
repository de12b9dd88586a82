// JSON-RPC dialects (src/jsonrpc/dialect.ts, parseJsonRpcBody's `dialect`): 1.0 items
// read as Bitcoin Core reads them ("jsonrpc" absent, null, "1.0" or "2.0"; params null;
// any id; an item without id answered under id null, a "2.0" one without id a
// notification), 2.0 endpoints as strict as before; and every kind of text the gateway
// writes itself, in each dialect.

import { expect } from 'chai';
import { JSONRPC_1, JSONRPC_2, rpcWriter } from '../../../src/jsonrpc/dialect.js';
import { parseJsonRpcBody, withParams } from '../../../src/jsonrpc/envelope.js';
import type { InvalidItem, JsonRpcCall, RpcItem } from '../../../src/plugin/contract.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';

const legacy = (text: string): readonly RpcItem[] => parseJsonRpcBody(text, DEFAULT_JSONRPC_LIMITS, { dialect: '1.0' }).items;
const call = (item: RpcItem | undefined): JsonRpcCall => {
  if (item?.kind !== 'jsonrpc') throw new Error(`expected a call, got ${JSON.stringify(item)}`);
  return item;
};
const refusal = (item: RpcItem | undefined): InvalidItem => {
  if (item?.kind !== 'invalid') throw new Error(`expected an invalid item, got ${JSON.stringify(item)}`);
  return item;
};

describe('JSON-RPC dialects (src/jsonrpc/dialect.ts)', () => {
  describe('reading 1.0 requests', () => {
    it('reads Bitcoin Core’s requests, keeping the item text as sent', () => {
      const [plain] = legacy('{"method":"getblockcount","params":[],"id":"curltest"}');
      expect(call(plain)).to.include({
        method: 'getblockcount',
        id: '"curltest"',
        raw: '{"method":"getblockcount","params":[],"id":"curltest"}',
      });
      for (const v of ['"1.0"', '"2.0"', 'null']) {
        expect(call(legacy(`{"jsonrpc":${v},"method":"m","id":1}`)[0]).id).to.equal('1');
      }
    });

    it('refuses a version Bitcoin Core does not speak, as it words it', () => {
      const [other, number] = legacy('[{"jsonrpc":"1.1","method":"m","id":1},{"jsonrpc":2,"method":"m","id":2}]');
      expect(refusal(other)).to.deep.equal({ kind: 'invalid', id: '1', message: 'Invalid request: JSON-RPC version not supported' });
      expect(refusal(number)).to.deep.equal({ kind: 'invalid', id: '2', message: 'Invalid request: "jsonrpc" must be a string' });
    });

    it('takes params null as none and any id, as Bitcoin Core does; other params are refused', () => {
      const [nullParams, objectId, badParams] = legacy(
        '[{"method":"m","params":null,"id":1},{"method":"m","id":{"n":1}},{"method":"m","params":7,"id":3}]',
      );
      expect(call(nullParams).params).to.equal(null);
      expect(call(objectId).id).to.equal('{"n":1}');
      expect(refusal(badParams).message).to.equal('Invalid request: "params" must be an array or an object');
    });

    it('answers a legacy item without id under id null, and leaves a "2.0" one without id a notification', () => {
      const [noId, notification] = legacy('[ {"method":"m","params":[]} ,{"jsonrpc":"2.0","method":"n"}]');
      // Sent to the node under id null, so its answer pairs.
      expect(call(noId)).to.include({ id: 'null', raw: '{"id":null,"method":"m","params":[]}' });
      expect(call(notification).id).to.equal(undefined);
    });

    it('keeps a 2.0 endpoint as strict as before: a legacy item is refused', () => {
      const [item] = parseJsonRpcBody('{"method":"m","params":[],"id":1}').items;
      expect(refusal(item).message).to.equal('Invalid request: "jsonrpc" must be "2.0"');
      expect(refusal(parseJsonRpcBody('{"jsonrpc":"2.0","method":"m","params":null,"id":1}').items[0]).message).to.contain('params');
    });
  });

  describe('what the gateway writes', () => {
    it('writes 1.0 answers as Bitcoin Core does: result, error and id, one of them null, no "jsonrpc"', () => {
      expect(JSONRPC_1.result('7', '{"n":1.50}')).to.equal('{"result":{"n":1.50},"error":null,"id":7}');
      expect(JSONRPC_1.error('"a"', '{"code":-5,"message":"x"}')).to.equal('{"result":null,"error":{"code":-5,"message":"x"},"id":"a"}');
      expect(JSONRPC_1.failure(undefined, -32005, 'Rate limit exceeded')).to.equal(
        '{"result":null,"error":{"code":-32005,"message":"Rate limit exceeded"},"id":null}',
      );
      expect(JSONRPC_1.failure('18446744073709551615', -32600, 'bad', { at: 1 })).to.equal(
        '{"result":null,"error":{"code":-32600,"message":"bad","data":{"at":1}},"id":18446744073709551615}',
      );
      expect(JSONRPC_1.request(3, '"sub"', '["a"]')).to.equal('{"method":"sub","params":["a"],"id":3}');
      expect(JSONRPC_1.request(4, '"sub"', undefined)).to.equal('{"method":"sub","params":[],"id":4}');
    });

    it('writes 2.0 answers as before', () => {
      expect(JSONRPC_2.result('7', 'true')).to.equal('{"jsonrpc":"2.0","id":7,"result":true}');
      expect(JSONRPC_2.error(undefined, '{"code":1,"message":"x"}')).to.equal(
        '{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}',
      );
      expect(JSONRPC_2.failure('1', -32700, 'Parse error')).to.equal(
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32700,"message":"Parse error"}}',
      );
      expect(JSONRPC_2.request(3, '"eth_subscribe"', '["newHeads"]')).to.equal(
        '{"jsonrpc":"2.0","id":3,"method":"eth_subscribe","params":["newHeads"]}',
      );
      expect(rpcWriter(undefined)).to.equal(JSONRPC_2);
      expect(rpcWriter('1.0')).to.equal(JSONRPC_1);
    });

    it('rewrites a client’s item for a node in the version the client named, its method and params as sent', () => {
      const [bare, v1, v2] = legacy(
        '[{"method":"m","params":[1.50],"id":"x"},{"jsonrpc":"1.0","method":"m","id":2},{"id":3,"jsonrpc":"2.0","method":"m"}]',
      );
      expect(JSONRPC_1.item(call(bare), 0, '[1.50]')).to.equal('{"id":0,"method":"m","params":[1.50]}');
      expect(JSONRPC_1.item(call(v1), 1, undefined)).to.equal('{"jsonrpc":"1.0","id":1,"method":"m"}');
      expect(JSONRPC_1.item(call(v2), 2, undefined)).to.equal('{"jsonrpc":"2.0","id":2,"method":"m"}');
      // withParams (pinning, splitting) keeps it too, on either dialect.
      expect(withParams(call(bare), [7]).raw).to.equal('{"id":"x","method":"m","params":[7]}');
      const strict = call(parseJsonRpcBody('{"id":1,"method":"m","jsonrpc":"2.0","params":[]}').items[0]);
      expect(withParams(strict, ['0x1']).raw).to.equal('{"jsonrpc":"2.0","id":1,"method":"m","params":["0x1"]}');
    });
  });
});
