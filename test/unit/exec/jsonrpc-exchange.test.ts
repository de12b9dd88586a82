// The JSON-RPC exchange (src/exec/exchanges/jsonrpc-exchange.ts) against a real node on
// loopback: batch items go out under the gateway's ids and come back paired by them
// whatever ids the client chose, answers carry the client's ids byte for byte, fixed
// reply ids are paired by position and never cached; a lone call is relayed as sent and
// its answer's id checked; and how its answers are kept in and given from the cache.

import { expect } from 'chai';
import type { Sent } from '../../../src/exec/exchanges/exchange.js';
import { JsonRpcExchange } from '../../../src/exec/exchanges/jsonrpc-exchange.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import { splitArray } from '../../../src/jsonrpc/raw-json.js';
import type { JsonRpcCall, JsonRpcCodec, Routing } from '../../../src/plugin/contract.js';
import { NodeFailure, NodeThrottled } from '../../../src/pool/failures.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { chainConfig, item, scriptedPlugin } from '../../support/chain.js';
import { echoNode, startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { rejection } from '../../support/rejection.js';

const codec = (fixedReplyIds?: string[]): JsonRpcCodec<undefined> =>
  scriptedPlugin({}, fixedReplyIds === undefined ? {} : { fixedReplyIds }).create({
    chain: 'c',
    options: {},
    limits: DEFAULT_JSONRPC_LIMITS,
  }).jsonrpc as JsonRpcCodec<undefined>;

function callsOf(c: JsonRpcCodec<undefined>, body: string): JsonRpcCall[] {
  return c.parse(body).items.filter((i): i is JsonRpcCall<undefined> => i.kind === 'jsonrpc');
}

/** A node answering a batch's items in reverse order, each with its method and raw params. */
function reversing(req: { body: string }): { status: number; body: string } {
  const items = (splitArray(req.body) ?? []).filter((i) => i.includes('"id"'));
  const answers = items.map((i) => {
    const { id, method } = JSON.parse(i) as { id: number; method: string };
    return `{"jsonrpc":"2.0","id":${id},"result":"${method}"}`;
  });
  return { status: 200, body: `[${answers.reverse().join(',')}]` };
}

describe('JSON-RPC exchange (src/exec/exchanges/jsonrpc-exchange.ts)', () => {
  let rpc: RpcNode;
  let pool: NodePool;
  let node: PoolNode;
  const plain = new JsonRpcExchange(codec());

  beforeEach(async () => {
    rpc = await startRpcNode(echoNode('n'));
    pool = new NodePool(await chainConfig([{ name: 'n', url: rpc.url, role: 'full' }]));
    node = pool.nodes[0] as PoolNode;
  });

  afterEach(async () => {
    await pool.close();
    await rpc.close();
  });

  const answers = (sent: Array<Sent<string>>): Array<string | undefined> => sent.map((s) => s.answer);

  describe('batches', () => {
    it('sends each item under the gateway’s id and gives each answer back under the client’s id, byte for byte, even when client ids collide', async () => {
      rpc.handler = reversing;
      const ids = ['1', '1', '"1"', '1.0', '18446744073709551615', '"\\u0041"'];
      const body = `[${ids.map((id, k) => `{"jsonrpc":"2.0","id":${id},"method":"m${k}","params":[1.50,"\\u00e9"]}`).join(',')}]`;
      const calls = callsOf(codec(), body);
      const sent = await plain.send(node, calls, 1_000);
      expect(rpc.bodies()).to.deep.equal([
        `[${ids.map((_, k) => `{"jsonrpc":"2.0","id":${k},"method":"m${k}","params":[1.50,"\\u00e9"]}`).join(',')}]`,
      ]);
      expect(answers(sent)).to.deep.equal(ids.map((id, k) => `{"jsonrpc":"2.0","id":${id},"result":"m${k}"}`));
      expect(sent.map((s) => [s.verdict, s.sure])).to.deep.equal(ids.map(() => ['ok', true]));
    });

    it('sends each item as the client wrote it with only its id’s value changed, and splices the client’s id into answers wherever the node put it', async () => {
      rpc.handler = (req) => ({
        status: 200,
        body: `[ ${(splitArray(req.body) ?? []).map((i) => `{ "result" : ${JSON.stringify(JSON.parse(i).method)} , "id" : ${JSON.stringify(JSON.parse(i).id)} }`).join(' , ')} ]`,
      });
      const items = [
        '{ "method" : "a" , "params" : { "id" : 5 } , "id" : "x" , "jsonrpc" : "2.0" , "extra" : [1] }',
        '{"jsonrpc":"2.0","\\u0069d":"x","method":"b"}',
      ];
      const sent = await plain.send(node, callsOf(codec(), `[${items.join(',')}]`), 1_000);
      expect(rpc.bodies()).to.deep.equal([
        `[${(items[0] as string).replace('"id" : "x"', '"id" : 0')},${(items[1] as string).replace('"x"', '1')}]`,
      ]);
      expect(answers(sent)).to.deep.equal(['{ "result" : "a" , "id" : "x" }', '{ "result" : "b" , "id" : "x" }']);
    });

    it('relays notifications as sent, expecting no answer for them', async () => {
      rpc.handler = reversing;
      const calls = callsOf(codec(), `[${item('"a"', 'm0')},${item(undefined, 'note', [1])},${item('"b"', 'm2')}]`);
      const sent = await plain.send(node, calls, 1_000);
      expect(rpc.bodies()).to.deep.equal([
        '[{"jsonrpc":"2.0","id":0,"method":"m0"},{"jsonrpc":"2.0","method":"note","params":[1]},{"jsonrpc":"2.0","id":2,"method":"m2"}]',
      ]);
      expect(answers(sent)).to.deep.equal([
        '{"jsonrpc":"2.0","id":"a","result":"m0"}',
        undefined,
        '{"jsonrpc":"2.0","id":"b","result":"m2"}',
      ]);
    });

    it('pairs answers given under a fixed id by position among the rest, relays them as given, and marks them unsure', async () => {
      rpc.handler = () => ({
        status: 200,
        body: '[{"jsonrpc":"2.0","id":-1,"result":"first"},{"jsonrpc":"2.0","id":1,"result":"mine"},{"jsonrpc":"2.0","id":-1,"result":"third"}]',
      });
      const fixed = new JsonRpcExchange(codec(['-1']));
      const sent = await fixed.send(node, callsOf(codec(), `[${item('7', 'a')},${item('8', 'b')},${item('9', 'c')}]`), 1_000);
      expect(answers(sent)).to.deep.equal([
        '{"jsonrpc":"2.0","id":-1,"result":"first"}',
        '{"jsonrpc":"2.0","id":8,"result":"mine"}',
        '{"jsonrpc":"2.0","id":-1,"result":"third"}',
      ]);
      expect(sent.map((s) => s.sure)).to.deep.equal([false, true, false]);
      // Without the plugin's say-so, a fixed id is an answer the gateway did not ask for.
      const err = await rejection(plain.send(node, callsOf(codec(), `[${item('7', 'a')},${item('8', 'b')},${item('9', 'c')}]`), 1_000));
      expect(err).to.be.instanceOf(NodeFailure).with.property('reason', 'garbage');
    });

    it('takes a batch answer it cannot pair for the node failing', async () => {
      const calls = callsOf(codec(), `[${item('1', 'a')},${item('2', 'b')}]`);
      const cases = [
        '[{"jsonrpc":"2.0","id":0,"result":1},{"jsonrpc":"2.0","id":7,"result":2}]',
        '[{"jsonrpc":"2.0","id":0,"result":1},{"jsonrpc":"2.0","id":0,"result":2}]',
        '[{"jsonrpc":"2.0","id":0,"result":1}]',
        '[{"jsonrpc":"2.0","id":"0","result":1},{"jsonrpc":"2.0","id":1,"result":2}]',
        '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batches not supported"}}',
      ];
      for (const body of cases) {
        rpc.handler = () => ({ status: 200, body });
        const err = await rejection(plain.send(node, calls, 1_000));
        expect(err, body).to.be.instanceOf(NodeFailure).with.property('reason', 'garbage');
      }
    });
  });

  describe('a lone call', () => {
    it('is relayed as the client sent it, and its answer as the node sent it', async () => {
      const raw = '{ "id" : 1.0 , "jsonrpc":"2.0", "method":"m", "params":[1.50] }';
      rpc.handler = () => ({ status: 200, body: '{"jsonrpc":"2.0","id":1.0,"result":{"n":1.50}}' });
      const sent = await plain.send(node, callsOf(codec(), raw), 1_000);
      expect(rpc.bodies()).to.deep.equal([raw.trim()]);
      expect(sent).to.deep.equal([{ answer: '{"jsonrpc":"2.0","id":1.0,"result":{"n":1.50}}', verdict: 'ok', sure: true }]);
    });

    it('accepts its id as an equal JSON value or a fixed reply id, and nothing else', async () => {
      const call = callsOf(codec(), item('1.0', 'm'));
      rpc.handler = () => ({ status: 200, body: '{"jsonrpc":"2.0","id":1,"result":"x"}' });
      expect((await plain.send(node, call, 1_000))[0]?.answer).to.equal('{"jsonrpc":"2.0","id":1,"result":"x"}');
      for (const body of [
        '{"jsonrpc":"2.0","id":2,"result":"x"}',
        '{"jsonrpc":"2.0","id":"1","result":"x"}',
        '{"jsonrpc":"2.0","result":"x"}',
      ]) {
        rpc.handler = () => ({ status: 200, body });
        expect(await rejection(plain.send(node, call, 1_000)), body)
          .to.be.instanceOf(NodeFailure)
          .with.property('reason', 'garbage');
      }
      rpc.handler = () => ({ status: 200, body: '{"jsonrpc":"2.0","id":-1,"result":"x"}' });
      expect(await new JsonRpcExchange(codec(['-1'])).send(node, call, 1_000)).to.deep.equal([
        { answer: '{"jsonrpc":"2.0","id":-1,"result":"x"}', verdict: 'ok', sure: true },
      ]);
    });

    it('expects no answer to a notification', async () => {
      rpc.handler = () => ({ status: 200, body: '' });
      expect(await plain.send(node, callsOf(codec(), item(undefined, 'note')), 1_000)).to.deep.equal([
        { answer: undefined, verdict: 'ok', sure: true },
      ]);
    });

    it('gives the plugin’s verdict with each answer, and throws for what blames the node', async () => {
      const call = callsOf(codec(), item('1', 'm'));
      const answer = (body: string, status = 200) => {
        rpc.handler = () => ({ status, body });
        return plain.send(node, call, 1_000);
      };
      expect((await answer('{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted"}}'))[0]?.verdict).to.equal(
        'chain_error',
      );
      expect((await answer('{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"missing trie node 00"}}'))[0]?.verdict).to.equal(
        'pruned',
      );
      expect(await rejection(answer('{"jsonrpc":"2.0","id":1,"result":1}', 429))).to.be.instanceOf(NodeThrottled);
      expect(await rejection(answer('{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"rate limit exceeded"}}'))).to.be.instanceOf(
        NodeThrottled,
      );
      expect(await rejection(answer('{"jsonrpc":"2.0","id":1,"result":1}', 503)))
        .to.be.instanceOf(NodeFailure)
        .with.property('reason', 'status');
      expect(await rejection(answer('<html>bad gateway</html>')))
        .to.be.instanceOf(NodeFailure)
        .with.property('reason', 'garbage');
    });
  });

  describe('cache codec', () => {
    const cached: Routing = { archive: false, cost: 1, label: 'm', cacheTtlMs: 1_000 };
    const only = (body: string): JsonRpcCall => callsOf(codec(), body)[0] as JsonRpcCall;
    const [one, two, other, note] = [
      only(item('1', 'm', [{ a: 1 }])),
      only(item('"x"', 'm', [{ a: 1 }])),
      only(item('1', 'm', [{ a: 2 }])),
      only(item(undefined, 'm', [{ a: 1 }])),
    ];

    it('keys a call by its method and params, never its id, and only when the plugin gives it a lifetime', () => {
      expect(plain.key(one, cached)).to.be.a('string');
      expect(plain.key(one, cached)).to.equal(plain.key(two, cached));
      expect(plain.key(one, cached)).to.not.equal(plain.key(other, cached));
      expect(plain.key(one, { ...cached, cacheTtlMs: undefined })).to.equal(undefined);
      expect(plain.key(note, cached)).to.equal(undefined);
    });

    it('keys by the params as sent: numbers a double cannot tell apart are different calls', () => {
      const raw = (n: string): JsonRpcCall => only(`{"jsonrpc":"2.0","id":1,"method":"m","params":[${n}]}`);
      expect(plain.key(raw('12345678901234567890'), cached)).to.not.equal(plain.key(raw('12345678901234567891'), cached));
    });

    it('keeps a result’s raw text only, never an error or null, and gives it back under another caller’s id', () => {
      expect(plain.keep('{"jsonrpc":"2.0","id":1,"result":{"n":1.50}}')).to.deep.equal({ status: 200, body: '{"n":1.50}' });
      expect(plain.keep('{"jsonrpc":"2.0","id":1,"result":null}')).to.equal(undefined);
      expect(plain.keep('{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"x"}}')).to.equal(undefined);
      expect(plain.give({ status: 200, body: '{"n":1.50}' }, two)).to.equal('{"jsonrpc":"2.0","id":"x","result":{"n":1.50}}');
    });

    it('shares a leader’s answer, result or error, under a follower’s id', () => {
      expect(plain.share('{"jsonrpc":"2.0","id":1,"result":[1.0]}', two)).to.equal('{"jsonrpc":"2.0","id":"x","result":[1.0]}');
      expect(plain.share('{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"x"}}', two)).to.equal(
        '{"jsonrpc":"2.0","id":"x","error":{"code":3,"message":"x"}}',
      );
    });
  });
});
