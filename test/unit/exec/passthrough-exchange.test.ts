// The passthrough exchange (src/exec/exchanges/passthrough-exchange.ts) against a real node on
// loopback: the plugin's request sent below the node's base path, the answer relayed
// with its status, content type and the headers the plugin names; the plugin's
// verdicts; and cache keys that take in the request headers the plugin says the
// answer varies with, through the call path.

import { expect } from 'chai';
import { isGatewayError } from '../../../src/errors.js';
import { newOutcome } from '../../../src/exec/request-record.js';
import type { PassthroughExchange } from '../../../src/exec/exchanges/passthrough-exchange.js';
import type { PassthroughCall, Routing, UpstreamRequest } from '../../../src/plugin/contract.js';
import { NodeFailure, NodeThrottled } from '../../../src/pool/failures.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { bench, chainConfig, scriptedPlugin, type Bench } from '../../support/chain.js';
import { startRpcNode, type RpcNode } from '../../support/rpc-node.js';
import { rejection } from '../../support/rejection.js';

const call = (request: UpstreamRequest, method = request.path): PassthroughCall => ({
  kind: 'passthrough',
  method,
  request,
  meta: undefined,
});

describe('passthrough exchange (src/exec/exchanges/passthrough-exchange.ts)', () => {
  let rpc: RpcNode;
  let b: Bench;
  let x: PassthroughExchange;
  let node: PoolNode;

  beforeEach(async () => {
    rpc = await startRpcNode(
      (req) => ({
        status: 200,
        body: `{"path":"${req.path}"}`,
        headers: { 'content-type': 'application/json; charset=utf-8', 'x-node-height': '42', 'x-secret': 'no' },
      }),
      '/base/token-abc',
    );
    b = await bench(await chainConfig([{ name: 'n', url: rpc.url, role: 'full' }]), scriptedPlugin());
    x = b.rt.passthrough as PassthroughExchange;
    node = b.rt.pool.nodes[0] as PoolNode;
  });

  afterEach(async () => {
    await b.close();
    await rpc.close();
  });

  it('sends the request below the node’s base path and relays the answer with the headers the plugin names', async () => {
    const [sent] = await x.send(
      node,
      [call({ method: 'GET', path: '/cosmos/bank/v1/balances/x?pagination.limit=1', headers: { 'x-height': '7' } })],
      1_000,
    );
    expect(rpc.received.map((r) => [r.method, r.path, r.headers['x-height']])).to.deep.equal([
      ['GET', '/base/token-abc/cosmos/bank/v1/balances/x?pagination.limit=1', '7'],
    ]);
    expect(sent).to.deep.equal({
      answer: {
        status: 200,
        text: '{"path":"/base/token-abc/cosmos/bank/v1/balances/x?pagination.limit=1"}',
        contentType: 'application/json; charset=utf-8',
        relayHeaders: { 'x-node-height': '42' },
      },
      verdict: 'ok',
      sure: true,
    });
  });

  it('sends a POST body as it is, as JSON unless the plugin says otherwise', async () => {
    await x.send(node, [call({ method: 'POST', path: '/tx', body: '{"tx":"AQID"}' })], 1_000);
    await x.send(
      node,
      [call({ method: 'POST', path: '/raw', body: Buffer.from([1, 2]), headers: { 'content-type': 'application/octet-stream' } })],
      1_000,
    );
    expect(rpc.received.map((r) => [r.path, r.headers['content-type'], r.body])).to.deep.equal([
      ['/base/token-abc/tx', 'application/json', '{"tx":"AQID"}'],
      ['/base/token-abc/raw', 'application/octet-stream', '\u0001\u0002'],
    ]);
  });

  it('gives the plugin’s verdict with the answer, and throws for what blames the node', async () => {
    const get = call({ method: 'GET', path: '/x' });
    rpc.handler = () => ({ status: 404, body: '{"code":5,"message":"not found"}' });
    const [missing] = await x.send(node, [get], 1_000);
    expect([missing?.verdict, missing?.answer?.status]).to.deep.equal(['chain_error', 404]);
    rpc.handler = () => ({ status: 429, body: '' });
    expect(await rejection(x.send(node, [get], 1_000))).to.be.instanceOf(NodeThrottled);
    rpc.handler = () => ({ status: 502, body: '<html></html>' });
    expect(await rejection(x.send(node, [get], 1_000)))
      .to.be.instanceOf(NodeFailure)
      .with.property('reason', 'garbage');
  });

  describe('cache codec', () => {
    const ttl: Routing = { archive: false, cost: 1, label: 'x', cacheTtlMs: 1_000 };

    it('keys GETs by path and query, and by the headers the plugin names; never a POST or a call without a lifetime', () => {
      const at = (h: string | undefined): PassthroughCall =>
        call({ method: 'GET', path: '/blocks/latest?x=1', headers: h === undefined ? {} : { 'x-height': h, 'x-other': h } });
      expect(x.key(at('5'), ttl)).to.equal(x.key(at('6'), ttl));
      const vary = { ...ttl, cacheVary: ['x-height'] };
      expect(x.key(at('5'), vary)).to.not.equal(x.key(at('6'), vary));
      expect(x.key(at('5'), vary)).to.equal(x.key(at('5'), vary));
      expect(x.key(call({ method: 'GET', path: '/blocks/latest?x=2' }), ttl)).to.not.equal(x.key(at(undefined), ttl));
      expect(x.key(call({ method: 'POST', path: '/blocks/latest?x=1', body: '{}' }), ttl)).to.equal(undefined);
      expect(x.key(at('5'), { ...ttl, cacheTtlMs: undefined })).to.equal(undefined);
    });

    it('keeps only a 200 answer, with its content type and relayed headers', () => {
      const reply = { status: 200, text: '{}', contentType: 'application/json', relayHeaders: { 'x-node-height': '1' } };
      const kept = x.keep(reply);
      expect(kept).to.deep.equal({ status: 200, body: '{}', contentType: 'application/json', headers: { 'x-node-height': '1' } });
      expect(x.give(kept as NonNullable<typeof kept>)).to.deep.equal(reply);
      expect(x.keep({ ...reply, status: 404 })).to.equal(undefined);
    });

    it('answers identical GETs from the cache, and GETs whose named headers differ from the node', async () => {
      // A plugin that gives this path a lifetime and names the header its answer varies with.
      await b.close();
      b = await bench(
        await chainConfig([{ name: 'n', url: rpc.url, role: 'full' }]),
        scriptedPlugin({ '/abci_query': { cacheTtlMs: 60_000, cacheVary: ['x-height'] } }),
      );
      x = b.rt.passthrough as PassthroughExchange;
      const run = (height: string) =>
        b.path.run({
          chain: b.rt,
          principal: b.principal(),
          calls: [call({ method: 'GET', path: '/abci_query', headers: { 'x-height': height } })],
          exchange: x,
          cache: x,
          deadline: Date.now() + 1_000,
          trace: newOutcome(),
        });
      expect((await run('5')).cache).to.equal('MISS');
      const hit = await run('5');
      expect(hit.cache).to.equal('HIT');
      const r = hit.results[0];
      if (r === undefined || isGatewayError(r)) throw new Error('expected an answer');
      expect(r.answer).to.deep.equal({
        status: 200,
        text: '{"path":"/base/token-abc/abci_query"}',
        contentType: 'application/json; charset=utf-8',
        relayHeaders: { 'x-node-height': '42' },
      });
      expect((await run('6')).cache).to.equal('MISS');
      expect(rpc.received).to.have.length(2);
    });
  });
});
