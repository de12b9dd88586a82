// The sdk-rest plugin (Cosmos SDK REST): passthrough of GET and POST, the height from
// x-cosmos-block-height or ?height=, archive routing by height, route-template labels
// (never a raw path), gRPC-gateway verdicts, options and probe.

import { expect } from 'chai';
import { checkOptions } from '../../../src/sdk/options.js';
import sdkRest from '../../../plugins/sdk-rest/index.js';
import { GatewayError } from '../../../src/errors.js';
import type { InboundRequest, PoolView } from '../../../src/plugin/contract.js';
import { fakeNode, handler, inbound, passthrough, rejection, thrown } from './helpers.js';

const view: PoolView = { head: 1000, fullEarliest: 900 };
const unreported: PoolView = { head: 1000, fullEarliest: undefined };
const ADDRESS = 'cosmos1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc5lzv7xu';

describe('sdk-rest plugin', () => {
  const h = handler(sdkRest);
  const parsed = (over: Partial<InboundRequest>) => passthrough(h.parse(inbound(over)));
  const route = (over: Partial<InboundRequest>, v: PoolView = view) => h.classify(parsed(over).call, v);

  describe('parse', () => {
    it('passes GET through with its path and query, the call named by the path alone', () => {
      const p = parsed({ path: '/sdk/auth/v1beta1/params' });
      expect(p.call.request).to.deep.equal({ method: 'GET', path: '/sdk/auth/v1beta1/params' });
      expect(p.call).to.deep.include({
        kind: 'passthrough',
        method: '/sdk/auth/v1beta1/params',
        meta: { height: undefined, write: false },
      });
      const q = parsed({ path: '/cosmos/tx/v1beta1/txs', query: 'events=tx.height%3D5&pagination.limit=10' });
      expect(q.call.request.path).to.equal('/cosmos/tx/v1beta1/txs?events=tx.height%3D5&pagination.limit=10');
      expect(q.call.method).to.equal('/cosmos/tx/v1beta1/txs');
      expect(parsed({ method: 'HEAD', path: '/cosmos/auth/v1beta1/params' }).call.request.method).to.equal('GET');
    });

    it('forwards a valid x-cosmos-block-height and refuses a malformed one', () => {
      const p = parsed({ path: `/cosmos/bank/v1beta1/balances/${ADDRESS}`, headers: { 'x-cosmos-block-height': '5' } });
      expect(p.call.request.headers).to.deep.equal({ 'x-cosmos-block-height': '5' });
      for (const bad of ['abc', '-5', '5.0', '0x10', ' 5', '']) {
        const e = thrown(() => h.parse(inbound({ path: '/x', headers: { 'x-cosmos-block-height': bad } })));
        expect(e, bad).to.be.instanceOf(GatewayError);
        expect((e as GatewayError).code).to.equal('INVALID_REQUEST');
        expect(e.message).to.equal('x-cosmos-block-height must be a decimal height');
      }
      expect(() => h.parse(inbound({ path: '/x', headers: { 'x-cosmos-block-height': ['5', '6'] } }))).to.throw(GatewayError);
    });

    it('passes POST (broadcast) through with its body and content type', () => {
      const body = Buffer.from('{"tx_bytes":"AA==","mode":"BROADCAST_MODE_SYNC"}');
      const p = parsed({
        method: 'POST',
        path: '/cosmos/tx/v1beta1/txs',
        body,
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(p.call.request).to.deep.equal({
        method: 'POST',
        path: '/cosmos/tx/v1beta1/txs',
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body,
      });
      expect(parsed({ method: 'POST', path: '/cosmos/tx/v1beta1/txs', body }).call.request.headers).to.deep.equal({
        'content-type': 'application/json',
      });
    });

    it('refuses other HTTP methods', () => {
      for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        expect(h.parse(inbound({ method, path: '/cosmos/auth/v1beta1/params' })), method).to.include({ kind: 'unsupported', status: 405 });
      }
    });
  });

  describe('classify', () => {
    it('reads a height query however it is encoded, as the node decodes it, and the oldest of several', () => {
      const bal = `/cosmos/bank/v1beta1/balances/${ADDRESS}`;
      for (const query of ['height=5', 'height=%35', '%68eight=5', 'a=1;height=5', 'height=950&height=5']) {
        expect(route({ path: bal, query }), query).to.include({ archive: true, minHeight: 5 });
      }
      // A height in the path counts as much as one in a header or query: the older decides.
      expect(route({ path: '/cosmos/base/tendermint/v1beta1/blocks/5' })).to.include({ archive: true, minHeight: 5 });
      expect(route({ path: '/cosmos/base/tendermint/v1beta1/blocks/950', headers: { 'x-cosmos-block-height': '5' } })).to.include({
        minHeight: 5,
      });
    });

    it('routes header and query heights below the full nodes’ earliest to archive', () => {
      const path = `/cosmos/bank/v1beta1/balances/${ADDRESS}`;
      expect(route({ path, headers: { 'x-cosmos-block-height': '5' } })).to.include({ archive: true, minHeight: 5 });
      expect(route({ path, headers: { 'x-cosmos-block-height': '899' } })).to.include({ archive: true, minHeight: 899 });
      expect(route({ path, headers: { 'x-cosmos-block-height': '900' } })).to.include({ archive: false, minHeight: 900 });
      expect(route({ path, query: 'height=5' })).to.include({ archive: true, minHeight: 5 });
      expect(route({ path, query: 'pagination.limit=2&height=950' })).to.include({ archive: false, minHeight: 950 });
      expect(route({ path, query: 'blockheight=5' }))
        .to.include({ archive: false })
        .and.not.have.property('minHeight');
      // The header wins over the query.
      expect(route({ path, query: 'height=5', headers: { 'x-cosmos-block-height': '950' } })).to.include({ minHeight: 950 });
    });

    it('falls back to head - fullHistory, and reads height 0 as the latest', () => {
      const path = '/cosmos/auth/v1beta1/params';
      expect(route({ path, query: 'height=871' }, unreported)).to.include({ archive: true, minHeight: 871 });
      expect(route({ path, query: 'height=872' }, unreported)).to.include({ archive: false, minHeight: 872 });
      expect(route({ path, query: 'height=1' }, { head: undefined, fullEarliest: undefined })).to.include({ archive: false, minHeight: 1 });
      expect(route({ path, headers: { 'x-cosmos-block-height': '0' } }))
        .to.include({ archive: false })
        .and.not.have.property('minHeight');
      expect(route({ path })).to.include({ archive: false }).and.not.have.property('minHeight');
    });

    it('labels by route template under every namespace, never by raw path', () => {
      const label = (path: string) => route({ path }).label;
      expect(label('/sdk/auth/v1beta1/params')).to.equal('/sdk/auth/v1beta1/params');
      expect(label('/cosmos/auth/v1beta1/params')).to.equal('/cosmos/auth/v1beta1/params');
      expect(label(`/cosmos/bank/v1beta1/balances/${ADDRESS}`)).to.equal('/cosmos/bank/v1beta1/balances/{address}');
      expect(label(`/sdk/bank/v1beta1/balances/${ADDRESS}/by_denom`)).to.equal('/sdk/bank/v1beta1/balances/{address}/by_denom');
      expect(label('/cosmos/base/tendermint/v1beta1/blocks/latest')).to.equal('/cosmos/base/tendermint/v1beta1/blocks/latest');
      expect(label('/cosmos/base/tendermint/v1beta1/blocks/42')).to.equal('/cosmos/base/tendermint/v1beta1/blocks/{height}');
      expect(label(`/cosmos/staking/v1beta1/validators/cosmosvaloper1x/delegations/${ADDRESS}`)).to.equal(
        '/cosmos/staking/v1beta1/validators/{validator_addr}/delegations/{delegator_addr}',
      );
      for (const path of [
        `/cosmos/unknown/route/${ADDRESS}`,
        `/cosmos/bank/v1beta1/balances/${ADDRESS}/extra/${ADDRESS}`,
        `/cosmos/bank/v1beta1/balances/${ADDRESS}/`,
        `/ibc/core/channel/v1/channels/${ADDRESS}`,
        `/${ADDRESS}`,
        '/',
        '/cosmos',
        '/cosmos/',
        '/cosmosx/auth/v1beta1/params',
      ]) {
        const l = label(path);
        expect(l, path).to.equal('other');
        expect(l).to.not.include(ADDRESS);
      }
      const only = handler(sdkRest, { namespaces: ['sdk'] });
      expect(only.classify(parsed({ path: '/cosmos/auth/v1beta1/params' }).call, view).label).to.equal('other');
    });

    it('charges by template or path pattern, 1 otherwise', () => {
      const c = handler(sdkRest, { costs: { '/cosmos/bank/v1beta1/balances/{address}': 3, '/cosmwasm/*': 4 } });
      const cost = (path: string) => c.classify(passthrough(c.parse(inbound({ path }))).call, view).cost;
      expect(cost(`/cosmos/bank/v1beta1/balances/${ADDRESS}`)).to.equal(3);
      expect(cost('/cosmwasm/wasm/v1/code')).to.equal(4);
      expect(cost('/cosmos/auth/v1beta1/params')).to.equal(1);
      expect(route({ path: '/anything' }).cost).to.equal(1);
    });

    it('caches pinned heights long and params a while, never writes', () => {
      const bal = `/cosmos/bank/v1beta1/balances/${ADDRESS}`;
      expect(route({ path: bal, headers: { 'x-cosmos-block-height': '950' } })).to.include({ cacheTtlMs: 3_600_000, cacheHeight: 950 });
      expect(route({ path: bal }).cacheTtlMs).to.equal(2000);
      expect(route({ path: '/cosmos/auth/v1beta1/params' }).cacheTtlMs).to.equal(10_000);
      // Writes are never cached, and never sent to a second node once one may have taken them.
      const post = route({ method: 'POST', path: '/cosmos/tx/v1beta1/txs', body: Buffer.from('{}') });
      expect(post).to.deep.equal({
        archive: false,
        fullHolds: true,
        cost: 1,
        label: '/cosmos/tx/v1beta1/txs',
        retry: 'never',
        broadcast: true,
      });
      const sim = route({ method: 'POST', path: '/cosmos/tx/v1beta1/simulate', headers: { 'x-cosmos-block-height': '5' } });
      expect(sim).to.deep.equal({ archive: true, fullHolds: false, minHeight: 5, cost: 1, label: '/cosmos/tx/v1beta1/simulate' });
      // A read pinned by the height header: the header is part of the cache key.
      expect(route({ path: bal, headers: { 'x-cosmos-block-height': '950' } }).cacheVary).to.deep.equal(['x-cosmos-block-height']);
    });
  });

  describe('judge', () => {
    const judge = (status: number, text: string) => h.judge(parsed({ path: '/x' }).call, { status, text });

    it('sends pruned-height answers on to archive', () => {
      expect(
        judge(400, '{"code":3,"message":"failed to load state at height 5; version does not exist (latest height: 1000): invalid height"}'),
      ).to.equal('pruned');
      expect(judge(400, '{"code":3,"message":"height 5 is not available, lowest height is 900"}')).to.equal('pruned');
      expect(judge(500, '{"code":2,"message":"version 5 was pruned"}')).to.equal('pruned');
      expect(judge(200, '{"message":"pruned"}')).to.equal('ok');
    });

    it('relays 4xx and the app’s gRPC statuses as the chain’s answer', () => {
      expect(judge(200, '{"params":{}}')).to.equal('ok');
      expect(judge(400, '{"code":3,"message":"invalid address","details":[]}')).to.equal('chain_error');
      expect(judge(404, '{"code":5,"message":"not found"}')).to.equal('chain_error');
      expect(judge(404, '404 page not found')).to.equal('chain_error');
      expect(judge(500, '{"code":13,"message":"internal"}')).to.equal('chain_error');
      expect(judge(501, '{"code":12,"message":"unimplemented"}')).to.equal('chain_error');
    });

    it('blames the node for 429, UNAVAILABLE, other 5xx, HTML and non-JSON 2xx', () => {
      expect(judge(429, '{"code":8,"message":"too many"}')).to.equal('throttled');
      expect(judge(503, '{"code":14,"message":"unavailable"}')).to.equal('node_failure');
      expect(judge(502, '<html><body>Bad Gateway</body></html>')).to.equal('node_failure');
      expect(judge(500, '{"error":"boom"}')).to.equal('node_failure');
      expect(judge(500, '{"code":"13","message":"x"}')).to.equal('node_failure');
      expect(judge(200, '<!doctype html><html></html>')).to.equal('node_failure');
      expect(judge(200, '{"params":{"max_memo')).to.equal('node_failure');
      expect(judge(302, '')).to.equal('node_failure');
    });
  });

  it('validates options', () => {
    expect(checkOptions(sdkRest, { namespaces: ['cosmos'], fullHistory: 5, costs: { '/cosmos/tx/*': 2 } })).to.deep.equal([]);
    expect(checkOptions(sdkRest, { namespaces: ['/cosmos'], fullHistory: 0, costs: 3, header: 'x' })).to.deep.equal([
      ['header', 'is not a known option (known: namespaces, fullHistory, costs, blockTimeMs)'],
      ['namespaces[0]', 'must be a name of letters and digits, like those of [cosmos, sdk]'],
      ['fullHistory', 'must be a positive integer'],
      ['costs', 'must map names or patterns ending in * to positive integers, e.g. { "/cosmos/tx/v1beta1/txs": 2, "/cosmwasm/*": 3 }'],
    ]);
  });

  it('probes the latest block under the first namespace', async () => {
    const node = fakeNode(200, '{"block_id":{"hash":"q83v"},"block":{"header":{"chain_id":"hub","height":"1234"}}}');
    expect(await handler(sdkRest, { namespaces: ['sdk', 'cosmos'] }).probe(node, 100)).to.deep.equal({ height: 1234, hash: 'q83v' });
    expect(node.seen[0]).to.deep.equal({ method: 'GET', path: '/sdk/base/tendermint/v1beta1/blocks/latest' });
    await h.probe(node, 100);
    expect(node.seen[1]?.path).to.equal('/cosmos/base/tendermint/v1beta1/blocks/latest');
    for (const [status, text] of [
      [500, '{"block":{"header":{"height":"1"}}}'],
      [200, '<html>'],
      [200, '{"block":{"header":{}}}'],
      [200, '{"block":{"header":{"height":"12a"}}}'],
      [200, 'null'],
    ] as const) {
      expect(await rejection(h.probe(fakeNode(status, text), 100))).to.be.instanceOf(Error);
    }
  });
});
