// The evm plugin: JSON-RPC parsing, archive routing by block parameter (both the
// eth_ and evm_ namespaces), bounded labels, costs, cache policy, verdicts, options, probe.

import { expect } from 'chai';
import { checkOptions } from '../../../src/sdk/options.js';
import evm from '../../../plugins/evm/index.js';
import { GatewayError } from '../../../src/errors.js';
import type { Call, PoolView } from '../../../src/plugin/contract.js';
import { call, fakeNode, handler, inbound, jsonrpc, post, rejection, thrown } from './helpers.js';

const view: PoolView = { head: 1000, fullEarliest: undefined };
const noHead: PoolView = { head: undefined, fullEarliest: undefined };
// head 1000 - fullHistory 128 = 872: 871 (0x367) is archive, 872 (0x368) is not.
const OLD = '0x367';
const EDGE = '0x368';

describe('evm plugin', () => {
  const h = handler(evm, { fullHistory: 128, finalityDepth: 64, blockTimeMs: 1000 });
  const archive = (method: string, params: unknown, v: PoolView = view): boolean => h.classify(call(method, params), v).archive;

  describe('parse', () => {
    it('reads a single call, keeping its raw id and text', () => {
      const text = '{"jsonrpc":"2.0","id":18446744073709551615,"method":"evm_blockNumber"}';
      const p = jsonrpc(h.parse(post(`  ${text}\n`)));
      expect(p.batch).to.equal(false);
      const item = p.items[0] as Call;
      expect(item).to.deep.equal({
        kind: 'jsonrpc',
        method: 'evm_blockNumber',
        params: undefined,
        id: '18446744073709551615',
        raw: text,
        meta: undefined,
      });
    });

    it('reads a batch item by item, invalid items kept in place', () => {
      const a = '{"jsonrpc":"2.0","id":"a","method":"eth_chainId"}';
      const b = '{"jsonrpc":"2.0","id":7,"method":"eth_getBalance","params":["0x1","latest"]}';
      const p = jsonrpc(h.parse(post(`[${a}, ${b}, {"id":3}]`)));
      expect(p.batch).to.equal(true);
      expect(p.items).to.have.length(3);
      expect(p.items[0]).to.include({ id: '"a"', raw: a });
      expect(p.items[1]).to.include({ id: '7', raw: b, method: 'eth_getBalance' });
      expect(p.items[2]?.kind === 'invalid').to.equal(true);
    });

    it('refuses text that is not JSON with PARSE_ERROR', () => {
      const e = thrown(() => h.parse(post('{"jsonrpc":"2.0",')));
      expect(e).to.be.instanceOf(GatewayError);
      expect((e as GatewayError).code).to.equal('PARSE_ERROR');
    });

    it('serves only POST at the root', () => {
      expect(h.parse(inbound({ method: 'GET' }))).to.include({ kind: 'unsupported', status: 405 });
      expect(h.parse(inbound({ method: 'PUT', body: Buffer.from('{}') }))).to.include({ kind: 'unsupported', status: 405 });
      expect(h.parse(post('{}', '/x'))).to.include({ kind: 'unsupported', status: 404 });
    });
  });

  describe('classify', () => {
    const positions: Array<[string, (b: unknown) => unknown[]]> = [
      ['getBalance', (b) => ['0xa', b]],
      ['getCode', (b) => ['0xa', b]],
      ['getTransactionCount', (b) => ['0xa', b]],
      ['call', (b) => [{ to: '0xa' }, b]],
      ['estimateGas', (b) => [{ to: '0xa' }, b]],
      ['getStorageAt', (b) => ['0xa', '0x0', b]],
      ['getProof', (b) => ['0xa', [], b]],
      ['getBlockByNumber', (b) => [b, false]],
      ['getBlockTransactionCountByNumber', (b) => [b]],
      ['getUncleCountByBlockNumber', (b) => [b]],
      ['getTransactionByBlockNumberAndIndex', (b) => [b, '0x0']],
      ['feeHistory', (b) => ['0x4', b, [25, 75]]],
    ];

    it('reads the block parameter at each method’s position, in both namespaces', () => {
      for (const ns of ['eth', 'evm']) {
        for (const [name, params] of positions) {
          const m = `${ns}_${name}`;
          expect(archive(m, params(OLD)), `${m} old`).to.equal(true);
          expect(archive(m, params(EDGE)), `${m} edge`).to.equal(false);
          expect(archive(m, params('latest')), `${m} latest`).to.equal(false);
          expect(archive(m, params('earliest')), `${m} earliest`).to.equal(true);
          expect(archive(m, params({ blockNumber: OLD })), `${m} EIP-1898 number`).to.equal(true);
          expect(archive(m, params({ blockHash: `0x${'ab'.repeat(32)}` })), `${m} EIP-1898 hash`).to.equal(false);
        }
      }
    });

    it('does not read an old number at another position', () => {
      expect(archive('eth_getStorageAt', ['0xa', OLD, 'latest'])).to.equal(false);
      expect(archive('eth_getBalance', [OLD])).to.equal(false);
      expect(archive('eth_feeHistory', [OLD, 'latest', []])).to.equal(false);
      expect(archive('eth_getBalance', ['0xa'])).to.equal(false); // absent: latest
    });

    it('sends tags to full nodes, earliest to archive', () => {
      for (const tag of ['latest', 'pending', 'safe', 'finalized']) expect(archive('eth_getCode', ['0xa', tag]), tag).to.equal(false);
      expect(archive('eth_getCode', ['0xa', 'earliest'])).to.equal(true);
      expect(archive('eth_getCode', ['0xa', { blockNumber: 'earliest' }])).to.equal(true);
      expect(archive('eth_getCode', ['0xa', { blockHash: '0xab', requireCanonical: true }])).to.equal(false);
    });

    it('reads numbers as ordinary before the first probe', () => {
      expect(archive('eth_getBalance', ['0xa', '0x1'], noHead)).to.equal(false);
      expect(archive('eth_getBalance', ['0xa', 'earliest'], noHead)).to.equal(true);
    });

    it('reads getLogs by its lower bound', () => {
      expect(archive('eth_getLogs', [{ fromBlock: OLD, toBlock: 'latest' }])).to.equal(true);
      expect(archive('evm_getLogs', [{ fromBlock: OLD, toBlock: EDGE }])).to.equal(true);
      expect(archive('eth_getLogs', [{ fromBlock: EDGE, toBlock: 'latest' }])).to.equal(false);
      expect(archive('eth_getLogs', [{ fromBlock: 'earliest' }])).to.equal(true);
      expect(archive('eth_getLogs', [{ toBlock: OLD }])).to.equal(false); // from defaults to latest
      expect(archive('eth_getLogs', [{ blockHash: '0xab' }])).to.equal(false);
      expect(archive('eth_getLogs', [])).to.equal(false);
      expect(archive('eth_getLogs', ['junk'])).to.equal(false);
    });

    it('sends debug_ and trace_ to archive, known or not', () => {
      for (const m of ['debug_traceTransaction', 'debug_traceCall', 'trace_block', 'trace_filter', 'debug_somethingNew']) {
        expect(archive(m, ['0xab']), m).to.equal(true);
      }
    });

    it('lets unknown methods through as ordinary calls of cost 1', () => {
      for (const m of ['eth_somethingNew', 'foo_bar', 'nonamespace', 'eth_']) {
        expect(h.classify(call(m, [OLD]), view)).to.deep.equal({ archive: false, cost: 1, label: 'other' });
      }
    });

    it('answers only to its configured namespaces (and net_, web3_, debug_, trace_)', () => {
      const only = handler(evm, { namespaces: ['eth'] });
      expect(only.classify(call('evm_getBalance', ['0xa', OLD]), view)).to.include({ archive: false, label: 'other' });
      expect(only.classify(call('eth_getBalance', ['0xa', OLD]), view)).to.include({ archive: true, label: 'eth_getBalance' });
      expect(only.classify(call('net_version'), view).label).to.equal('net_version');
      expect(only.classify(call('web3_clientVersion'), view).label).to.equal('web3_clientVersion');
    });
  });

  describe('labels and costs', () => {
    it('labels known methods by namespace and name, the rest "other"', () => {
      expect(h.classify(call('eth_blockNumber'), view).label).to.equal('eth_blockNumber');
      expect(h.classify(call('evm_blockNumber'), view).label).to.equal('evm_blockNumber');
      expect(h.classify(call('debug_traceTransaction', []), view).label).to.equal('debug_traceTransaction');
      expect(h.classify(call('eth_0x1234567890abcdef'), view).label).to.equal('other');
      expect(h.classify(call('net_getBalance'), view).label).to.equal('other');
    });

    it('keeps the label set bounded under arbitrary method names', () => {
      const labels = new Set<string>();
      for (let i = 0; i < 2000; i++) labels.add(h.classify(call(`eth_m${i.toString(36)}`), view).label);
      expect([...labels]).to.deep.equal(['other']);
    });

    it('charges getLogs and traces more, and takes costs from options', () => {
      expect(h.classify(call('eth_getLogs', [{}]), view).cost).to.equal(5);
      expect(h.classify(call('evm_getLogs', [{}]), view).cost).to.equal(5);
      expect(h.classify(call('trace_block', []), view).cost).to.equal(10);
      expect(h.classify(call('debug_unknownThing', []), view).cost).to.equal(10);
      expect(h.classify(call('eth_chainId'), view).cost).to.equal(1);
      const custom = handler(evm, { costs: { getBalance: 3, 'trace_*': 20, newThing: 4 } });
      expect(custom.classify(call('evm_getBalance', ['0xa']), view).cost).to.equal(3);
      expect(custom.classify(call('trace_call', []), view).cost).to.equal(20);
      expect(custom.classify(call('eth_newThing', []), view)).to.include({ cost: 4, label: 'other' });
      expect(custom.classify(call('eth_getLogs', [{}]), view).cost).to.equal(5);
    });
  });

  describe('cache policy', () => {
    it('keeps final blocks long, recent ones a block time, pending and writes never', () => {
      const c = (m: string, p?: unknown) => h.classify(call(m, p), view);
      expect(c('eth_chainId').cacheTtlMs).to.equal(Infinity);
      expect(c('eth_getBlockByNumber', ['0x64', false])).to.include({ cacheTtlMs: 3_600_000, cacheHeight: 100 });
      expect(c('eth_getBlockByNumber', ['0x3e0', false])).to.include({ cacheTtlMs: 1000, cacheHeight: 992 });
      expect(c('eth_getBlockByNumber', ['latest', false]).cacheTtlMs).to.equal(1000);
      expect(c('eth_getBlockByNumber', ['pending', false]).cacheTtlMs).to.equal(undefined);
      expect(c('eth_getBlockByNumber', ['0x7d0', false]).cacheTtlMs).to.equal(undefined);
      expect(c('eth_getBlockByHash', ['0xab', false]).cacheTtlMs).to.equal(3_600_000);
      expect(c('eth_sendRawTransaction', ['0x00']).cacheTtlMs).to.equal(undefined);
      expect(c('eth_somethingNew', []).cacheTtlMs).to.equal(undefined);
    });
  });

  describe('judge', () => {
    const judge = (status: number, text: string, error?: { code: number; message: string }) =>
      h.judge(call('eth_call'), { status, text, error });
    const err = (message: string, code = -32000) => judge(200, '{"jsonrpc":"2.0","id":1,"error":{}}', { code, message });

    it('knows the pruned-state answers of the usual clients', () => {
      for (const m of [
        'missing trie node 1a2b (path ) state 0x1 is not available',
        'header not found',
        'BlockOutOfRangeError: block height is 10 but the earliest available is 900',
        'historical state 0xab is not available',
        'state histories haven\u2019t been fully indexed yet'.replace('\u2019', "'"),
        'required historical state unavailable (reexec=128)',
        'This block has been PRUNED',
      ]) {
        expect(err(m), m).to.equal('pruned');
      }
    });

    it('relays the chain’s own errors', () => {
      expect(err('execution reverted: not owner', 3)).to.equal('chain_error');
      expect(err('invalid argument 0: hex string without 0x prefix', -32602)).to.equal('chain_error');
      expect(err('the method eth_foo does not exist/is not available', -32601)).to.equal('chain_error');
    });

    it('backs off on 429 and a node’s own rate limit', () => {
      expect(judge(429, 'slow down')).to.equal('throttled');
      expect(err('request rate limit exceeded', -32005)).to.equal('throttled');
    });

    it('blames the node for 5xx, HTML, truncated or non-object answers', () => {
      expect(judge(200, '{"jsonrpc":"2.0","id":1,"result":"0x"}')).to.equal('ok');
      expect(judge(500, '{"jsonrpc":"2.0","id":1,"result":"0x"}')).to.equal('node_failure');
      expect(judge(502, '<html><body>Bad gateway</body></html>')).to.equal('node_failure');
      expect(judge(200, '<html></html>')).to.equal('node_failure');
      expect(judge(200, '{"jsonrpc":"2.0","id":1,"res')).to.equal('node_failure');
      expect(judge(200, '"0x1"')).to.equal('node_failure');
      expect(judge(404, '{"message":"not found"}')).to.equal('node_failure');
      expect(judge(301, '')).to.equal('node_failure');
    });
  });

  describe('options', () => {
    it('accepts the defaults and names each problem with what is expected', () => {
      expect(checkOptions(evm, {})).to.deep.equal([]);
      expect(checkOptions(evm, { namespaces: ['eth'], fullHistory: 1000, costs: { getLogs: 2, 'trace_*': 3 } })).to.deep.equal([]);
      expect(checkOptions(evm, { fullHistory: -1, colour: 1, namespaces: ['e t'], costs: { getLogs: 0, 'a*b': 2 } })).to.deep.equal([
        [
          'colour',
          'is not a known option (known: namespaces, fullHistory, costs, blockTimeMs, finalityDepth, allowMethods, openMethods, getLogsMaxRange, getLogsSplit)',
        ],
        ['namespaces[0]', 'must be a name of letters and digits, like those of [eth, evm]'],
        ['fullHistory', 'must be a positive integer'],
        ['costs.a*b', 'a pattern may hold one *, at its end (e.g. "trace_*")'],
        ['costs.getLogs', 'must be a positive integer'],
      ]);
      expect(checkOptions(evm, { fullHistory: 1.5, namespaces: [], costs: [] })).to.deep.equal([
        ['namespaces', 'must be a non-empty list of names (letters and digits) like [eth, evm]'],
        ['fullHistory', 'must be a positive integer'],
        ['costs', 'must map names or patterns ending in * to positive integers, e.g. { getLogs: 5, "trace_*": 10 }'],
      ]);
    });
  });

  describe('probe', () => {
    it('reads the latest block’s number and hash, asking in the first namespace', async () => {
      const node = fakeNode(200, '{"jsonrpc":"2.0","id":1,"result":{"number":"0x2a","hash":"0xabc"}}');
      expect(await handler(evm, { namespaces: ['evm', 'eth'] }).probe(node, 100)).to.deep.equal({ height: 42, hash: '0xabc' });
      expect(node.seen[0]).to.deep.equal({
        method: 'POST',
        path: '/',
        body: '{"jsonrpc":"2.0","id":1,"method":"evm_getBlockByNumber","params":["latest",false]}',
      });
      await h.probe(node, 100);
      expect(String(node.seen[1]?.body)).to.include('"eth_getBlockByNumber"');
    });

    it('throws on a bad status, bad JSON or missing fields', async () => {
      for (const [status, text] of [
        [503, '{"jsonrpc":"2.0","id":1,"result":{"number":"0x2a"}}'],
        [200, 'not json'],
        [200, 'null'],
        [200, '{"jsonrpc":"2.0","id":1,"result":null}'],
        [200, '{"jsonrpc":"2.0","id":1,"result":{"hash":"0xabc"}}'],
        [200, '{"jsonrpc":"2.0","id":1,"result":{"number":42}}'],
        [200, '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}'],
      ] as const) {
        expect(await rejection(h.probe(fakeNode(status, text), 100))).to.be.instanceOf(Error);
      }
    });
  });
});
