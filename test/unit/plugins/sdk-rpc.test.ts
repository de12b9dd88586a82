// The sdk-rpc plugin (CometBFT RPC): JSON-RPC at / and /<method>, the GET URI form
// as a passthrough, height routing against the full nodes' earliest height, verdicts
// on CometBFT's answers (pruned heights in `data`, URI errors with HTTP 500), probe.

import { expect } from 'chai';
import { checkOptions } from '../../../src/sdk/options.js';
import sdkRpc from '../../../plugins/sdk-rpc/index.js';
import type { GatewayError } from '../../../src/errors.js';
import type { Call, PoolView } from '../../../src/plugin/contract.js';
import { call, fakeNode, handler, inbound, jsonrpc, passthrough, post, rejection, thrown } from './helpers.js';

const view: PoolView = { head: 1000, fullEarliest: 900 };
const unreported: PoolView = { head: 1000, fullEarliest: undefined };

describe('sdk-rpc plugin', () => {
  const h = handler(sdkRpc);

  describe('parse', () => {
    it('reads JSON-RPC at the root and at /<method>, the body’s method as is', () => {
      const body = '{"jsonrpc":"2.0","id":5,"method":"abci_info"}';
      for (const path of ['/', '/abci_info', '/status']) {
        const p = jsonrpc(h.parse(post(body, path)));
        expect(p.items[0]).to.include({ method: 'abci_info', id: '5', raw: body });
      }
      expect(jsonrpc(h.parse(post(`[${body},${body}]`))).batch).to.equal(true);
      expect((thrown(() => h.parse(post('nope'))) as GatewayError).code).to.equal('PARSE_ERROR');
      expect(h.parse(post(body, '/a/b'))).to.include({ kind: 'unsupported', status: 404 });
    });

    it('passes the GET URI form through, query kept', () => {
      const p = passthrough(h.parse(inbound({ path: '/block', query: 'height=5' })));
      expect(p.call.request).to.deep.equal({ method: 'GET', path: '/block?height=5' });
      expect(p.call).to.deep.include({ kind: 'passthrough', method: 'block', meta: { height: 5 } });
      expect(passthrough(h.parse(inbound({ path: '/status' }))).call.request).to.deep.equal({ method: 'GET', path: '/status' });
      const q = 'path=%22/store/bank/key%22&data=0x01&height=7';
      expect(passthrough(h.parse(inbound({ path: '/abci_query', query: q }))).call.request.path).to.equal(`/abci_query?${q}`);
      expect(passthrough(h.parse(inbound({ method: 'HEAD', path: '/health' }))).call.request.method).to.equal('GET');
    });

    it('does not serve GET / or other HTTP methods', () => {
      expect(h.parse(inbound({ path: '/' }))).to.include({ kind: 'unsupported', status: 404 });
      expect(h.parse(inbound({ path: '/block/5' }))).to.include({ kind: 'unsupported', status: 404 });
      expect(h.parse(inbound({ method: 'DELETE', path: '/status' }))).to.include({ kind: 'unsupported', status: 405 });
      expect(h.parse(inbound({ method: 'PUT' }))).to.include({ kind: 'unsupported', status: 405 });
    });

    it('accepts the -1 id CometBFT answers abci_info with', () => {
      expect(h.raw.jsonrpc?.fixedReplyIds).to.deep.equal(['-1']);
    });
  });

  describe('classify', () => {
    it('reads a URI height however it is encoded or quoted, as CometBFT decodes it', () => {
      for (const query of ['height=5', 'height=%35', 'height=%225%22', 'height="5"', '%68eight=5']) {
        const call = passthrough(h.parse(inbound({ path: '/block', query }))).call;
        expect(h.classify(call, view), query).to.include({ archive: true, minHeight: 5 });
      }
    });

    const uri = (path: string, query: string): Call => passthrough(h.parse(inbound({ path, query }))).call;

    it('pins heights, sending those below the full nodes’ earliest to archive, in every form', () => {
      for (const m of ['block', 'block_results', 'commit', 'validators', 'header']) {
        expect(h.classify(call(m, { height: '5' }), view), m).to.include({ archive: true, minHeight: 5 });
        expect(h.classify(call(m, ['5']), view), m).to.include({ archive: true, minHeight: 5 });
        expect(h.classify(call(m, { height: 899 }), view), m).to.include({ archive: true, minHeight: 899 });
        expect(h.classify(call(m, { height: '900' }), view), m).to.include({ archive: false, minHeight: 900 });
        expect(h.classify(uri(`/${m}`, 'height=5'), view), m).to.include({ archive: true, minHeight: 5 });
      }
      expect(h.classify(call('abci_query', ['/store', '00', '7', false]), view)).to.include({ archive: true, minHeight: 7 });
      expect(h.classify(call('abci_query', { path: '/store', data: '00', height: '950' }), view)).to.include({
        archive: false,
        minHeight: 950,
      });
      expect(h.classify(uri('/abci_query', 'path="/store"&height="7"'), view)).to.include({ archive: true, minHeight: 7 });
      expect(h.classify(uri('/abci_query', 'path=%22/x%22&height=%227%22'), view)).to.include({ archive: true, minHeight: 7 });
      expect(h.classify(call('blockchain', { minHeight: '3', maxHeight: '10' }), view)).to.include({ archive: true, minHeight: 3 });
      expect(h.classify(call('blockchain', ['950', '960']), view)).to.include({ archive: false, minHeight: 950 });
      expect(h.classify(uri('/blockchain', 'minHeight=3&maxHeight=10'), view)).to.include({ archive: true, minHeight: 3 });
    });

    it('falls back to head - fullHistory when nodes do not report earliest', () => {
      expect(h.classify(call('block', { height: '871' }), unreported)).to.include({ archive: true, minHeight: 871 });
      expect(h.classify(call('block', { height: '872' }), unreported)).to.include({ archive: false, minHeight: 872 });
      const short = handler(sdkRpc, { fullHistory: 10 });
      expect(short.classify(call('block', { height: '989' }), unreported).archive).to.equal(true);
      expect(h.classify(call('block', { height: '1' }), { head: undefined, fullEarliest: undefined })).to.include({
        archive: false,
        minHeight: 1,
      });
    });

    it('treats calls without a height (or height 0, the latest) as ordinary', () => {
      expect(h.classify(call('status'), view))
        .to.include({ archive: false, label: 'status' })
        .and.not.have.property('minHeight');
      expect(h.classify(call('block', { height: '0' }), view))
        .to.include({ archive: false })
        .and.not.have.property('minHeight');
      expect(h.classify(call('block', {}), view).minHeight).to.equal(undefined);
      expect(h.classify(uri('/block', 'hash=0xab'), view).minHeight).to.equal(undefined);
      expect(h.classify(call('tx', { hash: 'AB' }), view)).to.include({ archive: false, label: 'tx' });
    });

    it('labels known methods only, and charges searches more', () => {
      expect(h.classify(call('abci_info'), view).label).to.equal('abci_info');
      expect(h.classify(call('cosmos1secretaddressmethod'), view)).to.deep.equal({ archive: false, cost: 1, label: 'other' });
      expect(h.classify(call('tx_search', { query: 'tx.height=5' }), view).cost).to.equal(5);
      expect(handler(sdkRpc, { costs: { 'broadcast_*': 3 } }).classify(call('broadcast_tx_sync'), view).cost).to.equal(3);
    });

    it('caches committed heights long, latest reads a block time, broadcasts never', () => {
      expect(h.classify(call('block', { height: '950' }), view)).to.include({ cacheTtlMs: 3_600_000, cacheHeight: 950 });
      expect(h.classify(call('block', { height: '5000' }), view).cacheTtlMs).to.equal(undefined);
      expect(h.classify(call('status'), view).cacheTtlMs).to.equal(2000);
      expect(h.classify(call('broadcast_tx_sync', { tx: 'AA' }), view).cacheTtlMs).to.equal(undefined);
    });
  });

  describe('judge', () => {
    const pruned =
      '{"jsonrpc":"2.0","id":-1,"error":{"code":-32603,"message":"Internal error","data":"height 3 is not available, lowest height is 900"}}';
    const uriCall = passthrough(h.parse(inbound({ path: '/block', query: 'height=3' }))).call;

    it('reads the pruned answer in data, for JSON-RPC items and URI answers (HTTP 500)', () => {
      const e = { code: -32603, message: 'Internal error' };
      expect(h.judge(call('block'), { status: 200, text: pruned, error: e })).to.equal('pruned');
      expect(h.judge(uriCall, { status: 500, text: pruned })).to.equal('pruned');
    });

    it('relays other errors as the chain’s answer, ids as the node sent them', () => {
      const notFound = '{"jsonrpc":"2.0","id":-1,"error":{"code":-32603,"message":"Internal error","data":"tx (AB) not found"}}';
      expect(h.judge(call('tx'), { status: 200, text: notFound, error: { code: -32603, message: 'Internal error' } })).to.equal(
        'chain_error',
      );
      expect(h.judge(uriCall, { status: 500, text: notFound })).to.equal('chain_error');
      const noMethod = '{"jsonrpc":"2.0","id":-1,"error":{"code":-32601,"message":"Method not found"}}';
      expect(h.judge(uriCall, { status: 404, text: noMethod })).to.equal('chain_error');
      // Go's http.NotFound for GET /<unknown>: the answer to this request, not node trouble.
      expect(h.judge(uriCall, { status: 404, text: '404 page not found\n' })).to.equal('chain_error');
      expect(h.judge(call('abci_info'), { status: 200, text: '{"jsonrpc":"2.0","id":-1,"result":{"response":{}}}' })).to.equal('ok');
    });

    it('blames the node for 429, gateway errors, non-JSON and truncated answers', () => {
      expect(h.judge(uriCall, { status: 429, text: '' })).to.equal('throttled');
      expect(h.judge(uriCall, { status: 502, text: pruned })).to.equal('node_failure');
      expect(h.judge(uriCall, { status: 503, text: '<html>down</html>' })).to.equal('node_failure');
      expect(h.judge(uriCall, { status: 500, text: '<html>down</html>' })).to.equal('node_failure');
      expect(h.judge(uriCall, { status: 500, text: '{"jsonrpc":"2.0","id":-1,"result":{}}' })).to.equal('node_failure');
      expect(h.judge(uriCall, { status: 200, text: 'oops' })).to.equal('node_failure');
      expect(h.judge(uriCall, { status: 200, text: '{"jsonrpc":"2.0","id":-1,"result":{"bl' })).to.equal('node_failure');
      expect(h.judge(call('block'), { status: 404, text: '404 page not found' })).to.equal('node_failure');
      expect(h.judge(call('block'), { status: 200, text: '"x"' })).to.equal('node_failure');
    });
  });

  it('validates options', () => {
    expect(checkOptions(sdkRpc, { fullHistory: 100, costs: { tx_search: 2 } })).to.deep.equal([]);
    expect(checkOptions(sdkRpc, { namespaces: ['x'], fullHistory: 'many', costs: { tx_search: 'two' } })).to.deep.equal([
      ['namespaces', 'is not a known option (known: fullHistory, costs, blockTimeMs, allowMethods, openMethods)'],
      ['fullHistory', 'must be a positive integer'],
      ['costs.tx_search', 'must be a positive integer'],
    ]);
  });

  it('probes /status for the latest and earliest heights and the hash', async () => {
    const status = {
      jsonrpc: '2.0',
      id: -1,
      result: { sync_info: { latest_block_height: '1000', earliest_block_height: '900', latest_block_hash: 'ABCD', catching_up: false } },
    };
    const node = fakeNode(200, JSON.stringify(status));
    expect(await h.probe(node, 100)).to.deep.equal({ height: 1000, earliest: 900, hash: 'ABCD' });
    expect(node.seen[0]).to.deep.equal({ method: 'GET', path: '/status' });
    const noEarliest = { result: { sync_info: { latest_block_height: '1000' } } };
    expect(await h.probe(fakeNode(200, JSON.stringify(noEarliest)), 100)).to.deep.equal({ height: 1000 });
    for (const [st, text] of [
      [500, JSON.stringify(status)],
      [200, 'not json'],
      [200, '{"result":{}}'],
      [200, '{"result":{"sync_info":{"latest_block_height":"abc"}}}'],
      [200, 'null'],
    ] as const) {
      expect(await rejection(h.probe(fakeNode(st, text), 100))).to.be.instanceOf(Error);
    }
  });
});
