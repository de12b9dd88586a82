// The objectx plugin: JSON-RPC parsing, past objects and old checkpoints to archive
// in every namespace (sui_, suix_, objectx_), labels, verdicts, options and probe.

import { expect } from 'chai';
import { checkOptions } from '../../../src/sdk/options.js';
import objectx from '../../../plugins/objectx/index.js';
import type { GatewayError } from '../../../src/errors.js';
import type { PoolView } from '../../../src/plugin/contract.js';
import { call, fakeNode, handler, inbound, jsonrpc, post, rejection, thrown } from './helpers.js';

const view: PoolView = { head: 1000, fullEarliest: undefined };

describe('objectx plugin', () => {
  const h = handler(objectx, { fullHistory: 128 });
  const classify = (method: string, params?: unknown, v: PoolView = view) => h.classify(call(method, params), v);

  it('parses JSON-RPC at the root only, ids kept raw', () => {
    const text = '{"jsonrpc":"2.0","id":"x-1","method":"objectx_getBalance","params":["0x1","0x2::sui::SUI"]}';
    const p = jsonrpc(h.parse(post(text)));
    expect(p.batch).to.equal(false);
    expect(p.items[0]).to.include({ id: '"x-1"', raw: text, method: 'objectx_getBalance' });
    expect(jsonrpc(h.parse(post(`[${text},${text}]`))).items).to.have.length(2);
    expect((thrown(() => h.parse(post('[{'))) as GatewayError).code).to.equal('PARSE_ERROR');
    expect(h.parse(inbound({ method: 'GET' }))).to.include({ kind: 'unsupported', status: 405 });
    expect(h.parse(post(text, '/v1'))).to.include({ kind: 'unsupported', status: 404 });
  });

  it('sends past objects and old checkpoints to archive, in every namespace', () => {
    for (const ns of ['sui', 'suix', 'objectx']) {
      expect(classify(`${ns}_tryGetPastObject`, ['0x1', 3]).archive).to.equal(true);
      expect(classify(`${ns}_tryMultiGetPastObjects`, [[{ objectId: '0x1', version: '3' }]]).archive).to.equal(true);
      expect(classify(`${ns}_getCheckpoint`, ['871']).archive).to.equal(true);
      expect(classify(`${ns}_getCheckpoint`, [5]).archive).to.equal(true);
      expect(classify(`${ns}_getCheckpoint`, { id: '5' }).archive).to.equal(true);
      expect(classify(`${ns}_getCheckpoint`, ['872']).archive).to.equal(false);
      expect(classify(`${ns}_getCheckpoint`, ['5'], { head: undefined, fullEarliest: undefined }).archive).to.equal(false);
      // A digest cannot be placed: full nodes first, their pruned answer goes on to archive.
      expect(classify(`${ns}_getCheckpoint`, ['4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S']).archive).to.equal(false);
      expect(classify(`${ns}_getTransactionBlock`, ['digest']).archive).to.equal(false);
      expect(classify(`${ns}_queryTransactionBlocks`, [{}]).archive).to.equal(false);
      expect(classify(`${ns}_getBalance`, ['0x1', '0x2::sui::SUI']).archive).to.equal(false);
    }
  });

  it('lets unknown methods through and keeps labels bounded', () => {
    expect(classify('suix_getBalance', [])).to.include({ label: 'suix_getBalance', cost: 1 });
    expect(classify('objectx_getBalance', [])).to.include({ label: 'objectx_getBalance' });
    expect(classify('sui_brandNew', [])).to.deep.equal({ archive: false, cost: 1, label: 'other' });
    expect(classify('eth_tryGetPastObject', [])).to.deep.equal({ archive: false, cost: 1, label: 'other' });
    expect(classify('sui_queryEvents', [{}]).cost).to.equal(5);
    const only = handler(objectx, { namespaces: ['objectx'], costs: { getObject: 2 } });
    expect(only.classify(call('sui_tryGetPastObject', []), view)).to.include({ archive: false, label: 'other' });
    expect(only.classify(call('objectx_getObject', []), view)).to.include({ cost: 2, label: 'objectx_getObject' });
  });

  it('caches certified checkpoints and the chain identifier, not writes', () => {
    expect(classify('sui_getCheckpoint', ['900'])).to.include({ cacheTtlMs: 3_600_000, cacheHeight: 900 });
    expect(classify('sui_getCheckpoint', ['2000']).cacheTtlMs).to.equal(undefined);
    expect(classify('sui_getChainIdentifier').cacheTtlMs).to.equal(Infinity);
    expect(classify('sui_executeTransactionBlock', ['tx', ['sig']]).cacheTtlMs).to.equal(undefined);
  });

  it('judges answers', () => {
    const judge = (status: number, text: string, error?: { code: number; message: string }) =>
      h.judge(call('sui_getCheckpoint'), { status, text, error });
    const errText = '{"jsonrpc":"2.0","id":1,"error":{}}';
    expect(judge(200, errText, { code: -32602, message: 'Checkpoint 5 was pruned' })).to.equal('pruned');
    expect(judge(200, errText, { code: -32602, message: 'Object version 3 is not available on this fullnode' })).to.equal('pruned');
    expect(judge(200, errText, { code: -32602, message: 'Invalid params' })).to.equal('chain_error');
    expect(judge(200, '{"jsonrpc":"2.0","id":1,"result":{}}')).to.equal('ok');
    expect(judge(429, '')).to.equal('throttled');
    expect(judge(503, '{}')).to.equal('node_failure');
    expect(judge(200, '<html>')).to.equal('node_failure');
    expect(judge(200, '{"jsonrpc":"2.0","id":1,"result":{"seq')).to.equal('node_failure');
  });

  it('validates options', () => {
    expect(checkOptions(objectx, { namespaces: ['sui'], fullHistory: 10, costs: { queryEvents: 3 } })).to.deep.equal([]);
    expect(checkOptions(objectx, { namespaces: 'sui', fullHistory: 0, finalityDepth: 3 })).to.deep.equal([
      ['finalityDepth', 'is not a known option (known: namespaces, fullHistory, costs, blockTimeMs)'],
      ['namespaces', 'must be a non-empty list of names (letters and digits) like [sui, suix, objectx]'],
      ['fullHistory', 'must be a positive integer'],
    ]);
  });

  it('probes the latest checkpoint in the first namespace', async () => {
    const node = fakeNode(200, '{"jsonrpc":"2.0","id":1,"result":"123456"}');
    expect(await handler(objectx, { namespaces: ['objectx'] }).probe(node, 100)).to.deep.equal({ height: 123456 });
    expect(node.seen[0]).to.deep.equal({
      method: 'POST',
      path: '/',
      body: '{"jsonrpc":"2.0","id":1,"method":"objectx_getLatestCheckpointSequenceNumber","params":[]}',
    });
    await h.probe(node, 100);
    expect(String(node.seen[1]?.body)).to.include('"sui_getLatestCheckpointSequenceNumber"');
    for (const [status, text] of [
      [500, '{"result":"1"}'],
      [200, '{"result":1}'],
      [200, '{"result":"0x1"}'],
      [200, '{"error":{"code":1,"message":"x"}}'],
      [200, 'garbage'],
    ] as const) {
      expect(await rejection(h.probe(fakeNode(status, text), 100))).to.be.instanceOf(Error);
    }
  });
});
