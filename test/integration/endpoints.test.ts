// The spec's four endpoints through the gateway, exactly as the nodes answer them,
// plus batches, real-network method names and several chains side by side.

import { expect } from 'chai';
import { get, rpc, startStack, type Stack } from '../support/harness.js';

describe('the spec endpoints through the gateway', function () {
  let stack: Stack;
  let h: Record<string, string>;

  before(async () => {
    stack = await startStack();
    h = { apikey: stack.key };
  });
  after(() => stack.close());

  describe('EVM (endpoint 1)', () => {
    for (const method of ['evm_blockNumber', 'eth_blockNumber']) {
      it(`answers ${method} with a 0x hex height and the caller's id`, async () => {
        const res = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method }, h);
        expect(res.status).to.equal(200);
        expect(res.headers.get('content-type')).to.match(/application\/json/);
        const body = res.json as { jsonrpc: string; id: number; result: string };
        expect(body.jsonrpc).to.equal('2.0');
        expect(body.id).to.equal(1);
        expect(body.result).to.match(/^0x[0-9a-f]+$/);
        expect(Number(body.result)).to.equal(stack.devnet.chains.get('l1')?.height());
      });
    }

    it('relays the node answer byte for byte', async () => {
      const res = await rpc(stack.url('/l1'), '{"jsonrpc":"2.0","id":"abc","method":"eth_chainId"}', h);
      const direct = await rpc(stack.devnet.node('l1-archive-1').url, '{"jsonrpc":"2.0","id":"abc","method":"eth_chainId"}');
      expect(res.text).to.equal(direct.text);
    });

    it('keeps ids byte-identical, even past JS number precision', async () => {
      const res = await rpc(stack.url('/l1'), '{"jsonrpc":"2.0","id":18446744073709551615,"method":"eth_blockNumber"}', h);
      expect(res.text).to.contain('"id":18446744073709551615');
    });

    it('answers a batch in order with every id', async () => {
      const batch = [
        { jsonrpc: '2.0', id: 'a', method: 'eth_blockNumber' },
        { jsonrpc: '2.0', id: 2, method: 'evm_chainId' },
        { jsonrpc: '2.0', id: 'c', method: 'eth_getBalance', params: ['0x00000000000000000000000000000000000000aa', 'latest'] },
      ];
      const res = await rpc(stack.url('/l1'), batch, h);
      expect(res.status).to.equal(200);
      const items = res.json as Array<{ id: unknown; result: string }>;
      expect(items.map((i) => i.id)).to.deep.equal(['a', 2, 'c']);
      for (const i of items) expect(i.result).to.match(/^0x/);
    });

    it('serves several EVM chains side by side', async () => {
      const a = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, h);
      const b = await rpc(stack.url('/l2-rollup'), { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, h);
      expect((a.json as { result: string }).result).to.not.equal((b.json as { result: string }).result);
    });
  });

  describe('object chain (endpoint 2)', () => {
    const owner = '0x' + '11'.repeat(32);
    for (const method of ['objectx_getBalance', 'suix_getBalance']) {
      it(`answers ${method} with the balance object`, async () => {
        const res = await rpc(stack.url('/objectx'), { jsonrpc: '2.0', id: 7, method, params: [owner, '0x2::sui::SUI'] }, h);
        expect(res.status).to.equal(200);
        const body = res.json as { id: number; result: Record<string, unknown> };
        expect(body.id).to.equal(7);
        expect(body.result.coinType).to.equal('0x2::sui::SUI');
        expect(body.result.coinObjectCount).to.be.a('number');
        expect(body.result.totalBalance).to.be.a('string').and.match(/^\d+$/);
        expect(body.result.lockedBalance).to.be.an('object');
      });
    }

    it('answers a batch in order', async () => {
      const res = await rpc(
        stack.url('/objectx'),
        [
          { jsonrpc: '2.0', id: 2, method: 'objectx_getBalance', params: [owner, '0x2::sui::SUI'] },
          { jsonrpc: '2.0', id: 1, method: 'sui_getLatestCheckpointSequenceNumber' },
        ],
        h,
      );
      const items = res.json as Array<{ id: number; result: unknown }>;
      expect(items.map((i) => i.id)).to.deep.equal([2, 1]);
      expect(items[1]?.result).to.be.a('string').and.match(/^\d+$/);
    });
  });

  describe('SDK chain JSON-RPC (endpoint 3)', () => {
    it('answers POST /abci_info with id -1 and the node info', async () => {
      const res = await rpc(stack.url('/hub/rpc/abci_info'), { jsonrpc: '2.0', id: 5, method: 'abci_info' }, h);
      expect(res.status).to.equal(200);
      const body = res.json as { id: number; result: { response: Record<string, unknown> } };
      expect(body.id).to.equal(-1);
      const r = body.result.response;
      expect(r.data).to.be.a('string');
      expect(r.version).to.be.a('string');
      expect(r.last_block_height).to.be.a('string').and.match(/^\d+$/);
      expect(r.last_block_app_hash).to.be.a('string');
    });

    it('answers a JSON-RPC POST at the root', async () => {
      const res = await rpc(stack.url('/hub/rpc'), { jsonrpc: '2.0', id: 9, method: 'abci_info' }, h);
      expect((res.json as { id: number }).id).to.equal(-1);
    });

    it('answers the GET URI form (/status, /abci_info)', async () => {
      const status = await get(stack.url('/hub/rpc/status'), h);
      expect(status.status).to.equal(200);
      const s = status.json as { result: { sync_info: { latest_block_height: string } } };
      expect(s.result.sync_info.latest_block_height).to.match(/^\d+$/);
      const info = await get(stack.url('/hub/rpc/abci_info'), h);
      expect((info.json as { result: { response: { data: string } } }).result.response.data).to.be.a('string');
    });
  });

  describe('SDK chain REST (endpoint 4)', () => {
    for (const path of ['/sdk/auth/v1beta1/params', '/cosmos/auth/v1beta1/params']) {
      it(`answers GET ${path} with string params`, async () => {
        const res = await get(stack.url(`/hub/rest${path}`), h);
        expect(res.status).to.equal(200);
        const params = (res.json as { params: Record<string, unknown> }).params;
        for (const f of [
          'max_memo_characters',
          'tx_sig_limit',
          'tx_size_cost_per_byte',
          'sig_verify_cost_ed25519',
          'sig_verify_cost_secp256k1',
        ]) {
          expect(params[f], f).to.be.a('string').and.match(/^\d+$/);
        }
      });
    }

    it('serves the archive-node variant from archive nodes only', async () => {
      const archive = stack.devnet.node('hub-rest-archive-1');
      const full = stack.devnet.node('hub-rest-full-1');
      archive.clearReceived();
      full.clearReceived();
      for (let i = 0; i < 4; i++) {
        const res = await get(stack.url('/hub/rest-archive/sdk/auth/v1beta1/params'), h);
        expect(res.status).to.equal(200);
      }
      expect(archive.received.filter((r) => r.path.includes('auth/v1beta1/params'))).to.have.length(4);
      expect(full.received.filter((r) => r.path.includes('auth/v1beta1/params'))).to.have.length(0);
    });

    it('accepts the key as a query parameter and does not forward it', async () => {
      const archive = stack.devnet.node('hub-rest-archive-1');
      const full = stack.devnet.node('hub-rest-full-1');
      archive.clearReceived();
      full.clearReceived();
      const res = await get(stack.url(`/hub/rest/sdk/auth/v1beta1/params?apikey=${stack.key}`));
      expect(res.status).to.equal(200);
      const seen = [...archive.received, ...full.received].filter((r) => r.path.includes('params'));
      expect(seen).to.have.length(1);
      expect(seen[0]?.path).to.equal('/sdk/auth/v1beta1/params');
    });
  });

  it('answers 404 in the REST error shape for an address that is no endpoint', async () => {
    const res = await get(stack.url('/nowhere'), h);
    expect(res.status).to.equal(404);
    expect((res.json as { error: { code: number; message: string } }).error.message).to.be.a('string');
  });
});
