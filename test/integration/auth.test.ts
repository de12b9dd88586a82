// API keys on every request: where a key may be given, every refusal per the error
// table, and that no node ever sees a customer's key.

import { expect } from 'chai';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { recordBytes, sqlitePath } from '../support/record.js';

const CALL = { jsonrpc: '2.0', id: 42, method: 'eth_blockNumber' };

describe('API keys', function () {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.close());

  function expectRpcError(res: { status: number; json: unknown }, status: number, code: number, id: unknown): void {
    expect(res.status).to.equal(status);
    const body = res.json as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
    expect(body.jsonrpc).to.equal('2.0');
    expect(body.id).to.deep.equal(id);
    expect(body.error.code).to.equal(code);
    expect(body.error.message).to.be.a('string').and.not.equal('');
  }

  // A refusal of the whole request never reads the body for ids: one error object, id null.
  it('refuses a request without a key: 401, -32016, id null', async () => {
    expectRpcError(await rpc(stack.url('/l1'), CALL), 401, -32016, null);
  });

  it('refuses an unknown key the same way, without reaching a node', async () => {
    for (const n of stack.devnet.nodes.values()) n.clearReceived();
    expectRpcError(await rpc(stack.url('/l1'), CALL, { apikey: 'nrk_' + 'x'.repeat(32) }), 401, -32016, null);
    const reached = [...stack.devnet.nodes.values()].flatMap((n) => n.received);
    expect(reached).to.have.length(0);
  });

  it('remembers unknown keys, so a flood of one bad key asks the store once', async () => {
    const bad = 'nrk_' + 'z'.repeat(32);
    const metric = async (): Promise<number> => {
      const text = (await get(stack.admin('/metrics'))).text;
      return Number(/noderouter_key_cache_lookups_total\{result="miss"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const before = await metric();
    for (let i = 0; i < 20; i++) expect((await rpc(stack.url('/l1'), CALL, { apikey: bad })).status).to.equal(401);
    expect((await metric()) - before).to.equal(1);
  });

  it('refuses a malformed key (too long, bad characters) with the same answer', async () => {
    expectRpcError(await rpc(stack.url('/l1'), CALL, { apikey: 'k'.repeat(300) }), 401, -32016, null);
    expectRpcError(await rpc(stack.url('/l1'), CALL, { apikey: 'bad key!' }), 401, -32016, null);
  });

  it('answers a batch without a key with one error object, never one per item', async () => {
    const batch = Array.from({ length: 1000 }, (_, i) => ({ ...CALL, id: i }));
    const res = await rpc(stack.url('/l1'), batch);
    expectRpcError(res, 401, -32016, null);
    // A fixed, small answer whatever the request's size: refusing costs less than the request did.
    expect(res.text.length).to.be.below(200);
    expect(res.text.length).to.be.below(JSON.stringify(batch).length / 100);
  });

  for (const name of ['apikey', 'APIKEY', 'ApiKey', 'apiKey']) {
    it(`accepts the key in header "${name}"`, async () => {
      const res = await rpc(stack.url('/l1'), CALL, { [name]: stack.key });
      expect(res.status).to.equal(200);
      expect((res.json as { result: string }).result).to.match(/^0x/);
    });
  }

  it('accepts the key as ?apikey= on JSON-RPC too', async () => {
    const res = await rpc(stack.url(`/l1?apikey=${stack.key}`), CALL);
    expect(res.status).to.equal(200);
  });

  it('accepts the same key given twice', async () => {
    const res = await rpc(stack.url(`/l1?apikey=${stack.key}`), CALL, { apikey: stack.key });
    expect(res.status).to.equal(200);
  });

  it('refuses two different keys in one request', async () => {
    const other = await stack.createKey('enterprise');
    expectRpcError(await rpc(stack.url(`/l1?apikey=${other.value}`), CALL, { apikey: stack.key }), 401, -32016, null);
  });

  it('answers REST endpoints in the REST error shape', async () => {
    const res = await get(stack.url('/hub/rest/sdk/auth/v1beta1/params'));
    expect(res.status).to.equal(401);
    const body = res.json as { error: { code: number; message: string } };
    expect(body.error.code).to.equal(-32016);
    expect(body.error.message).to.be.a('string');
  });

  it('never lets a node see the key, in headers, path or body', async () => {
    for (const n of stack.devnet.nodes.values()) n.clearReceived();
    await rpc(stack.url('/l1'), CALL, { apikey: stack.key });
    await rpc(stack.url(`/objectx?apikey=${stack.key}`), { jsonrpc: '2.0', id: 1, method: 'suix_getReferenceGasPrice' });
    await get(stack.url(`/hub/rest/cosmos/auth/v1beta1/params?apikey=${stack.key}&x=1`));
    await get(stack.url('/hub/rpc/status'), { APIKEY: stack.key });
    const seen = [...stack.devnet.nodes.values()].flatMap((n) => n.received);
    expect(seen.length).to.be.greaterThan(3);
    for (const r of seen) {
      const all = JSON.stringify(r);
      expect(all).to.not.contain(stack.key);
      expect(Object.keys(r.headers).map((k) => k.toLowerCase())).to.not.include('apikey');
      expect(r.path.toLowerCase()).to.not.contain('apikey');
    }
    const rest = seen.find((r) => r.path.includes('auth/v1beta1/params'));
    expect(rest?.path).to.equal('/cosmos/auth/v1beta1/params?x=1');
  });

  it('stores only hashes: the record never holds a key value', async () => {
    const text = (await recordBytes(sqlitePath(stack.gateway.config.store.record))).toString('latin1');
    expect(text).to.not.contain(stack.key);
    expect(text).to.contain(stack.key.slice(0, 8));
  });
});
