// What each built-in plugin makes of calls: archive routing by block parameter and
// height, labels kept bounded, costs, cache policy, and verdicts on node answers.

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import objectx from '../../../plugins/objectx/index.js';
import sdkRest from '../../../plugins/sdk-rest/index.js';
import sdkRpc from '../../../plugins/sdk-rpc/index.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import type { Call, ChainPlugin, InboundRequest, NodeClient, PoolView } from '../../../src/plugin.js';

const limits = DEFAULT_JSONRPC_LIMITS;
const view: PoolView = { head: 1000, fullEarliest: 900 };
const call = (method: string, params?: unknown): Call => ({ method, params, id: '1', raw: '' });
const handler = (p: ChainPlugin, options: Record<string, unknown> = {}) => p.create({ chain: 'c', options, limits });
const inbound = (over: Partial<InboundRequest>): InboundRequest => ({
  method: 'GET',
  path: '/',
  query: '',
  headers: {},
  body: Buffer.alloc(0),
  ...over,
});

describe('evm plugin', () => {
  const h = handler(evm, { fullHistory: 128, finalityDepth: 64, blockTimeMs: 1000 });
  const archive = (method: string, params: unknown): boolean => h.classify(call(method, params), view).archive;

  it('reads the block parameter at each method’s position, in both namespaces', () => {
    for (const ns of ['eth', 'evm']) {
      expect(archive(`${ns}_getBalance`, ['0xa', '0x1'])).to.equal(true);
      expect(archive(`${ns}_getBalance`, ['0xa', 'latest'])).to.equal(false);
      expect(archive(`${ns}_getStorageAt`, ['0xa', '0x0', '0x2'])).to.equal(true);
      expect(archive(`${ns}_getProof`, ['0xa', [], '0x3'])).to.equal(true);
      expect(archive(`${ns}_getBlockByNumber`, ['0x10', false])).to.equal(true);
      expect(archive(`${ns}_call`, [{}, '0x3e7'])).to.equal(false);
      expect(archive(`${ns}_feeHistory`, ['0x4', '0x1', []])).to.equal(false);
    }
  });

  it('knows tags, earliest, EIP-1898 objects, getLogs ranges and debug/trace', () => {
    for (const tag of ['latest', 'pending', 'safe', 'finalized']) expect(archive('eth_getCode', ['0xa', tag])).to.equal(false);
    expect(archive('eth_getCode', ['0xa', 'earliest'])).to.equal(true);
    expect(archive('eth_getCode', ['0xa', { blockNumber: '0x5' }])).to.equal(true);
    expect(archive('eth_getCode', ['0xa', { blockHash: '0xab' }])).to.equal(false);
    expect(archive('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'latest' }])).to.equal(true);
    expect(archive('eth_getLogs', [{ fromBlock: '0x3e0', toBlock: 'latest' }])).to.equal(false);
    expect(archive('eth_getLogs', [{ blockHash: '0xab' }])).to.equal(false);
    expect(archive('debug_traceTransaction', ['0xab'])).to.equal(true);
    expect(archive('trace_block', ['0x3e8'])).to.equal(true);
    expect(h.classify(call('eth_getBalance', ['0xa', '0x1']), { head: undefined, fullEarliest: undefined }).archive).to.equal(false);
  });

  it('labels known methods and folds the rest, and charges getLogs and traces more', () => {
    expect(h.classify(call('eth_blockNumber'), view).label).to.equal('eth_blockNumber');
    expect(h.classify(call('evm_blockNumber'), view).label).to.equal('evm_blockNumber');
    expect(h.classify(call('eth_0x1234567890abcdef'), view).label).to.equal('other');
    expect(h.classify(call('foo_bar'), view).label).to.equal('other');
    expect(h.classify(call('eth_getLogs', [{}]), view).cost).to.equal(5);
    expect(h.classify(call('trace_block', []), view).cost).to.equal(10);
    expect(h.classify(call('eth_chainId'), view).cost).to.equal(1);
  });

  it('says how long an answer may be cached', () => {
    expect(h.classify(call('eth_chainId'), view).cacheTtlMs).to.equal(Infinity);
    expect(h.classify(call('eth_getBlockByNumber', ['0x64', false]), view)).to.include({ cacheTtlMs: 3_600_000, cacheHeight: 100 });
    expect(h.classify(call('eth_getBlockByNumber', ['0x3e0', false]), view)).to.include({ cacheTtlMs: 1000, cacheHeight: 992 });
    expect(h.classify(call('eth_getBlockByNumber', ['latest', false]), view).cacheTtlMs).to.equal(1000);
    expect(h.classify(call('eth_getBlockByNumber', ['pending', false]), view).cacheTtlMs).to.equal(undefined);
    expect(h.classify(call('eth_getBlockByNumber', ['0x7d0', false]), view).cacheTtlMs).to.equal(undefined);
    expect(h.classify(call('eth_sendRawTransaction', ['0x00']), view).cacheTtlMs).to.equal(undefined);
  });

  it('judges answers: pruned state, the chain’s own errors, failures and 429', () => {
    const judge = (status: number, text: string, error?: { code: number; message: string }) =>
      h.judge(call('eth_call'), { status, text, error });
    expect(judge(200, '{"result":"0x"}')).to.equal('ok');
    expect(judge(200, '{"error":{}}', { code: -32000, message: 'missing trie node abc (path ) state 0x1 is not available' })).to.equal(
      'pruned',
    );
    expect(judge(200, '{"error":{}}', { code: -32000, message: 'header not found' })).to.equal('pruned');
    expect(judge(200, '{"error":{}}', { code: -32000, message: 'BlockOutOfRangeError: block height is 10' })).to.equal('pruned');
    expect(judge(200, '{"error":{}}', { code: 3, message: 'execution reverted' })).to.equal('chain-error');
    expect(judge(429, 'slow down')).to.equal('throttled');
    expect(judge(502, '{}')).to.equal('node-failure');
    expect(judge(200, '<html></html>')).to.equal('node-failure');
    expect(judge(200, '{"jsonrpc":"2.0","id":1,"res')).to.equal('node-failure');
  });

  it('parses only POST at the root, and refuses bad options by path', () => {
    expect(h.parse(inbound({ method: 'GET' })).kind).to.equal('unsupported');
    expect(h.parse(inbound({ method: 'POST', path: '/x', body: Buffer.from('{}') })).kind).to.equal('unsupported');
    const parsed = h.parse(inbound({ method: 'POST', body: Buffer.from('[{"jsonrpc":"2.0","id":7,"method":"eth_chainId"}]') }));
    expect(parsed).to.deep.include({ kind: 'jsonrpc', batch: true });
    expect(evm.validateOptions?.({ fullHistory: -1, colour: 1, namespaces: ['e t'], costs: { getLogs: 0 } })).to.deep.equal([
      ['colour', 'is not a known option (known: namespaces, fullHistory, costs, blockTimeMs, finalityDepth)'],
      ['namespaces', 'must be a non-empty list of names like [eth, evm]'],
      ['fullHistory', 'must be a positive integer'],
      ['costs.getLogs', 'must be a positive integer'],
    ]);
  });

  it('probes the latest block', async () => {
    const node: NodeClient = {
      name: 'n',
      role: 'full',
      request: async () => ({ status: 200, text: '{"jsonrpc":"2.0","id":1,"result":{"number":"0x2a","hash":"0xabc"}}' }),
    };
    expect(await h.probe(node, 100)).to.deep.equal({ height: 42, hash: '0xabc' });
    const broken: NodeClient = { ...node, request: async () => ({ status: 200, text: '{"result":null}' }) };
    let failed = false;
    await h.probe(broken, 100).catch(() => (failed = true));
    expect(failed).to.equal(true);
  });
});

describe('objectx plugin', () => {
  const h = handler(objectx, { fullHistory: 128 });
  it('sends past objects and old checkpoints to archive, in every namespace', () => {
    for (const ns of ['sui', 'suix', 'objectx']) {
      expect(h.classify(call(`${ns}_tryGetPastObject`, ['0x1', 3]), view).archive).to.equal(true);
      expect(h.classify(call(`${ns}_getCheckpoint`, ['5']), view).archive).to.equal(true);
      expect(h.classify(call(`${ns}_getCheckpoint`, ['990']), view).archive).to.equal(false);
      expect(h.classify(call(`${ns}_getBalance`, ['0x1', '0x2::sui::SUI']), view).archive).to.equal(false);
    }
    expect(h.classify(call('suix_getBalance', []), view).label).to.equal('suix_getBalance');
    expect(
      h.judge(call('sui_getCheckpoint'), { status: 200, text: '{}', error: { code: -32602, message: 'Checkpoint 5 was pruned' } }),
    ).to.equal('pruned');
  });
});

describe('sdk-rpc plugin', () => {
  const h = handler(sdkRpc);
  it('routes heights below the full nodes’ earliest to archive, in every form', () => {
    expect(h.classify(call('block', { height: '5' }), view)).to.include({ archive: true, minHeight: 5 });
    expect(h.classify(call('block', ['5']), view)).to.include({ archive: true, minHeight: 5 });
    expect(h.classify(call('block', { height: '950' }), view)).to.include({ archive: false, minHeight: 950 });
    expect(h.classify(call('abci_query', ['/path', '00', '7', false]), view)).to.include({ archive: true, minHeight: 7 });
    expect(h.classify(call('blockchain', { minHeight: '3', maxHeight: '10' }), view)).to.include({ archive: true });
    expect(h.classify(call('status'), view).archive).to.equal(false);
  });

  it('parses POST at / and /<method>, and the GET URI form as a passthrough', () => {
    const body = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"abci_info"}');
    expect(h.parse(inbound({ method: 'POST', path: '/abci_info', body })).kind).to.equal('jsonrpc');
    expect(h.parse(inbound({ method: 'POST', path: '/', body })).kind).to.equal('jsonrpc');
    const get = h.parse(inbound({ path: '/block', query: 'height=5' }));
    expect(get.kind).to.equal('passthrough');
    if (get.kind === 'passthrough') {
      expect(get.upstream).to.deep.equal({ method: 'GET', path: '/block?height=5' });
      expect(h.classify(get.call, view)).to.include({ archive: true, minHeight: 5 });
    }
    expect(h.parse(inbound({ method: 'DELETE' })).kind).to.equal('unsupported');
    expect(h.fixedReplyIds).to.deep.equal(['-1']);
  });

  it('knows CometBFT’s pruned answer', () => {
    const text =
      '{"jsonrpc":"2.0","id":-1,"error":{"code":-32603,"message":"Internal error","data":"height 3 is not available, lowest height is 900"}}';
    expect(h.judge(call('block'), { status: 500, text })).to.equal('pruned');
    expect(h.judge(call('block'), { status: 200, text: '{"result":{}}' })).to.equal('ok');
    expect(h.judge(call('block'), { status: 200, text: 'oops' })).to.equal('node-failure');
  });
});

describe('sdk-rest plugin', () => {
  const h = handler(sdkRest);
  it('takes the height from the header or the query and routes old ones to archive', () => {
    const viaHeader = h.parse(inbound({ path: '/cosmos/bank/v1beta1/balances/cosmos1abc', headers: { 'x-cosmos-block-height': '5' } }));
    expect(viaHeader.kind).to.equal('passthrough');
    if (viaHeader.kind === 'passthrough') {
      expect(viaHeader.upstream.headers).to.deep.equal({ 'x-cosmos-block-height': '5' });
      expect(h.classify(viaHeader.call, view)).to.include({ archive: true, minHeight: 5, label: '/cosmos/bank/v1beta1/balances/{}' });
    }
    const viaQuery = h.parse(inbound({ path: '/sdk/auth/v1beta1/params', query: 'height=950' }));
    if (viaQuery.kind === 'passthrough')
      expect(h.classify(viaQuery.call, view)).to.include({ archive: false, minHeight: 950, label: '/sdk/auth/v1beta1/params' });
    expect(() => h.parse(inbound({ path: '/x', headers: { 'x-cosmos-block-height': 'abc' } }))).to.throw();
  });

  it('never labels a raw path, and judges gRPC-gateway answers', () => {
    const p = h.parse(inbound({ path: '/cosmos/unknown/route/cosmos1secretaddress' }));
    if (p.kind === 'passthrough') expect(h.classify(p.call, view).label).to.equal('other');
    const judge = (status: number, text: string) => h.judge(call('/x'), { status, text });
    expect(
      judge(400, '{"code":3,"message":"failed to load state at height 5; version does not exist (latest height: 1000): invalid height"}'),
    ).to.equal('pruned');
    expect(judge(404, '{"code":5,"message":"not found"}')).to.equal('chain-error');
    expect(judge(500, '{"code":13,"message":"internal"}')).to.equal('chain-error');
    expect(judge(503, '{"code":14,"message":"unavailable"}')).to.equal('node-failure');
    expect(judge(502, '<html>')).to.equal('node-failure');
    expect(judge(200, '{"params":{}}')).to.equal('ok');
  });
});
