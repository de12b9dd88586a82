// The sdk-grpc plugin (Cosmos SDK gRPC): the height from x-cosmos-block-height metadata
// or GetBlockByHeight's request, archive routing by height, labels from the known
// method table only, costs, verdicts on node statuses, and probes decoded by hand.

import { expect } from 'chai';
import { checkOptions } from '../../../src/sdk/options.js';
import sdkGrpc, { decodeEarliest, decodeLatestBlock } from '../../../plugins/sdk-grpc/index.js';
import { pb } from 'noderouter/devnet';
import { GatewayError } from '../../../src/errors.js';
import type { GrpcCall, GrpcUnaryReply, InboundGrpcCall, NodeClient, PoolView } from '../../../src/plugin/contract.js';
import { handler, rejection, thrown } from './helpers.js';

const view: PoolView = { head: 1000, fullEarliest: 900 };
const unreported: PoolView = { head: 1000, fullEarliest: undefined };
const PARAMS = '/cosmos.auth.v1beta1.Query/Params';
const BY_HEIGHT = '/cosmos.base.tendermint.v1beta1.Service/GetBlockByHeight';

const inbound = (over: Partial<InboundGrpcCall>): InboundGrpcCall => ({ path: PARAMS, metadata: {}, message: Buffer.alloc(0), ...over });

/** A GetLatestBlockResponse as a node sends it: block_id.hash, block (2) and/or sdk_block (3) with header.height. */
function latestBlock(height: number, fields: Array<2 | 3> = [2, 3]): Buffer {
  const w = pb().message(1, pb().bytes(1, Buffer.from('abcd', 'hex')));
  for (const f of fields) w.message(f, pb().message(1, pb().string(2, 'hub-1').uint(3, height)));
  return w.finish();
}

/** A node answering GetLatestBlock and Status from a table of path → reply, counting calls. */
function grpcNode(replies: Record<string, GrpcUnaryReply>): NodeClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    name: 'g1',
    role: 'full',
    asked,
    http: { request: () => Promise.reject(new Error('not an HTTP node')) },
    grpc: {
      unary: async (path) => {
        asked.push(path);
        const r = replies[path];
        if (r === undefined) throw new Error(`no reply for ${path}`);
        return r;
      },
    },
  };
}

describe('sdk-grpc plugin', () => {
  const h = handler(sdkGrpc);
  const parse = (over: Partial<InboundGrpcCall>): GrpcCall => h.parseGrpc(inbound(over));
  const judge = (code: number, message = ''): string => h.judgeGrpc(parse({}), { code, message });

  it('serves gRPC only (its codecs say which listener) and refuses unknown options', () => {
    expect(h.raw.grpc).to.not.equal(undefined);
    expect(h.raw.http).to.equal(undefined);
    expect(h.raw.jsonrpc).to.equal(undefined);
    expect(checkOptions(sdkGrpc, { fullHistory: 64, costs: { [PARAMS]: 2 } })).to.deep.equal([]);
    expect(checkOptions(sdkGrpc, { namespaces: ['x'], fullHistory: 0 }).map(([k]) => k)).to.deep.equal(['namespaces', 'fullHistory']);
  });

  describe('parseGrpc', () => {
    it('names the call by its path and reads the height metadata', () => {
      expect(parse({})).to.deep.include({ kind: 'grpc', method: PARAMS });
      expect(parse({ metadata: { 'x-cosmos-block-height': '42' } }).meta).to.deep.equal({ height: 42 });
      expect(parse({ metadata: { 'x-cosmos-block-height': '0' } }).meta).to.deep.equal({ height: undefined });
    });

    it('refuses a malformed height with INVALID_REQUEST (INVALID_ARGUMENT)', () => {
      for (const bad of ['abc', '-5', '5.0', ' 5', '']) {
        const e = thrown(() => parse({ metadata: { 'x-cosmos-block-height': bad } }));
        expect(e, bad).to.be.instanceOf(GatewayError);
        expect((e as GatewayError).code).to.equal('INVALID_REQUEST');
        expect((e as GatewayError).grpcCode).to.equal(3);
      }
    });

    it('reads the height of GetBlockByHeight from its request, unless metadata names one', () => {
      const request = pb().uint(1, 77).finish();
      expect(parse({ path: BY_HEIGHT, message: request }).meta).to.deep.equal({ height: 77 });
      expect(parse({ path: BY_HEIGHT, message: request, metadata: { 'x-cosmos-block-height': '5' } }).meta).to.deep.equal({ height: 5 });
      // A compressed request (undefined) names a height the relay cannot read: it is marked so (an archive call).
      expect(parse({ path: BY_HEIGHT, message: undefined }).meta).to.deep.equal({ height: undefined, unread: true });
      expect(h.classify(parse({ path: BY_HEIGHT, message: undefined }), view)).to.include({ archive: true });
      // Malformed requests are left to the node.
      expect(parse({ path: BY_HEIGHT, message: Buffer.from([0x08, 0xff]) }).meta).to.deep.equal({ height: undefined });
      expect(parse({ path: PARAMS, message: request }).meta).to.deep.equal({ height: undefined });
    });
  });

  describe('classify', () => {
    it('labels known methods by their path and every other path "other"', () => {
      expect(h.classify(parse({}), view)).to.deep.equal({ archive: false, cost: 1, label: PARAMS });
      expect(h.classify(parse({ path: '/cosmos.bank.v1beta1.Query/Balance' }), view).label).to.equal('/cosmos.bank.v1beta1.Query/Balance');
      expect(h.classify(parse({ path: '/my.custom.v1.Query/Secret' }), view).label).to.equal('other');
    });

    it('sends heights below the full nodes’ earliest to archive, pinned to nodes that hold them', () => {
      const at = (height: string, v: PoolView = view) => h.classify(parse({ metadata: { 'x-cosmos-block-height': height } }), v);
      expect(at('10')).to.deep.include({ archive: true, minHeight: 10, label: PARAMS });
      expect(at('950')).to.deep.include({ archive: false, minHeight: 950 });
      expect(at('871', unreported)).to.deep.include({ archive: true });
      expect(at('873', unreported)).to.deep.include({ archive: false });
      expect(at('10').cacheTtlMs).to.equal(undefined);
    });

    it('charges configured costs, by exact path or prefix', () => {
      const priced = handler(sdkGrpc, { costs: { [PARAMS]: 3, '/cosmwasm.wasm.v1.Query/*': 5 } });
      const c = (path: string) => priced.classify(priced.parseGrpc(inbound({ path })), view);
      expect(c(PARAMS).cost).to.equal(3);
      expect(c('/cosmwasm.wasm.v1.Query/SmartContractState').cost).to.equal(5);
      expect(c('/cosmos.bank.v1beta1.Query/Balance').cost).to.equal(1);
    });
  });

  describe('judgeGrpc', () => {
    it('sends pruned-state answers to archive, whatever their code', () => {
      for (const message of [
        'failed to load state at height 5; version does not exist (latest height: 900): invalid height',
        'height 5 is not available, lowest height is 885',
        'state has been pruned',
      ]) {
        expect(judge(3, message), message).to.equal('pruned');
        expect(judge(2, message), message).to.equal('pruned');
      }
    });

    it('blames the node for UNAVAILABLE, backs off on RESOURCE_EXHAUSTED, relays the rest', () => {
      expect(judge(0)).to.equal('ok');
      expect(judge(14, 'connection refused')).to.equal('node_failure');
      expect(judge(8, 'too many requests')).to.equal('throttled');
      for (const code of [2, 3, 5, 7, 12, 13]) expect(judge(code, 'account not found'), String(code)).to.equal('chain_error');
    });
  });

  describe('probe', () => {
    it('decodes the head from sdk_block, else block, with the block id hash', () => {
      expect(decodeLatestBlock(latestBlock(1234))).to.deep.equal({ height: 1234, hash: 'ABCD' });
      expect(decodeLatestBlock(latestBlock(99, [2])).height).to.equal(99);
      expect(decodeLatestBlock(latestBlock(2 ** 40, [3])).height).to.equal(2 ** 40);
      expect(() => decodeLatestBlock(Buffer.alloc(0))).to.throw(/height/);
      expect(() => decodeLatestBlock(Buffer.from([0x0a, 0x05, 0x01]))).to.throw();
      expect(decodeEarliest(pb().uint(1, 885).uint(2, 1000).finish())).to.equal(885);
      expect(decodeEarliest(pb().uint(2, 1000).finish())).to.equal(undefined);
    });

    it('reads the head from GetLatestBlock and the earliest height from node Status', async () => {
      const node = grpcNode({
        '/cosmos.base.tendermint.v1beta1.Service/GetLatestBlock': { code: 0, message: '', data: latestBlock(1000) },
        '/cosmos.base.node.v1beta1.Service/Status': { code: 0, message: '', data: pb().uint(1, 885).uint(2, 1000).finish() },
      });
      expect(await h.probe(node, 100)).to.deep.equal({ height: 1000, hash: 'ABCD', earliest: 885 });
    });

    it('asks Status no more of a node that does not implement it (SDK before 0.50)', async () => {
      const p = handler(sdkGrpc);
      const node = grpcNode({
        '/cosmos.base.tendermint.v1beta1.Service/GetLatestBlock': { code: 0, message: '', data: latestBlock(7) },
        '/cosmos.base.node.v1beta1.Service/Status': { code: 12, message: 'unknown service', data: Buffer.alloc(0) },
      });
      expect(await p.probe(node, 100)).to.deep.equal({ height: 7, hash: 'ABCD' });
      await p.probe(node, 100);
      expect(node.asked.filter((a) => a.endsWith('/Status'))).to.have.length(1);
    });

    it('fails when GetLatestBlock does not answer OK', async () => {
      const node = grpcNode({
        '/cosmos.base.tendermint.v1beta1.Service/GetLatestBlock': { code: 14, message: 'down', data: Buffer.alloc(0) },
      });
      expect((await rejection(h.probe(node, 100))).message).to.contain('status 14');
    });
  });
});
