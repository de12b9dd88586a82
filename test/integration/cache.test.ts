// The response cache and coalescing, finality-aware: what is cached and what never
// is, hits answered under the caller's id as sent (HTTP and WebSocket) without a node
// call, per-height keys, reorg eviction, 100 identical calls sharing one node call,
// the byte bound, accounting, metrics, and the Redis cache shared by instances.

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { Gateway } from '../../src/app/gateway.js';
import { get, redisHot, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { deleteUnderPrefix, keysUnder } from '../support/redis.js';
import { until } from '../support/until.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

const EVM: ChainSpec = {
  name: 'l1',
  plugin: 'evm',
  path: '/l1',
  cache: 'memory',
  extra: '    options: { blockTimeMs: 150, finalityDepth: 10 }',
  nodes: [{ name: 'c-full-1', role: 'full' }],
};
const REST: ChainSpec = {
  name: 'hub-rest',
  plugin: 'sdk-rest',
  path: '/hub/rest',
  network: 'hub',
  cache: 'memory',
  nodes: [{ name: 'c-rest-archive', role: 'archive' }],
};
const TIERS = `
  enterprise: { rate: unlimited, archive: true }
  metered: { rate: 1, burst: 2 }
  freehits: { rate: 1, burst: 2, cacheHitsFree: true }
`;

describe('response cache and coalescing', function () {
  this.timeout(30_000);
  let stack: Stack;
  let h: Record<string, string>;
  const node = () => stack.devnet.node('c-full-1');
  const block = (n: number, id: unknown = 1) => ({
    jsonrpc: '2.0',
    id,
    method: 'eth_getBlockByNumber',
    params: [`0x${n.toString(16)}`, false],
  });
  const calls = (marker: string) => node().received.filter((r) => r.body.includes(marker)).length;
  const metric = async (re: RegExp): Promise<number> => Number(re.exec((await get(stack.admin('/metrics'))).text)?.[1] ?? 0);

  before(async () => {
    stack = await startStack({ chains: [EVM, REST], tiers: TIERS, serverYaml: undefined, extraYaml: 'cache: { maxBytes: 40000 }' });
    h = { apikey: stack.key };
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
  });
  after(() => stack.close());

  it('serves a finalized block from the cache after the first call', async () => {
    node().clearReceived();
    const head = stack.devnet.chains.get('l1')?.height() as number;
    const first = await rpc(stack.url('/l1'), block(head - 20, 'a'), h);
    const second = await rpc(stack.url('/l1'), block(head - 20, 'b'), h);
    expect(first.headers.get('x-cache')).to.equal('MISS');
    expect(second.headers.get('x-cache')).to.equal('HIT');
    expect((second.json as { id: string }).id).to.equal('b');
    expect((second.json as { result: unknown }).result).to.deep.equal((first.json as { result: unknown }).result);
    expect(calls('getBlockByNumber')).to.equal(1);
    expect(await metric(/noderouter_cache_lookups_total\{chain="l1",result="hit"\} (\d+)/)).to.be.greaterThan(0);
  });

  it("answers a hit with the kept result under the caller's id as sent, byte for byte, and asks no node", async () => {
    const primed = await rpc(stack.url('/l1'), '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', h);
    const result = (primed.text.match(/"result":("[^"]*")/) as RegExpMatchArray)[1] as string;
    node().clearReceived();
    const hits = await metric(/noderouter_cache_lookups_total\{chain="l1",result="hit"\} (\d+)/);
    // Ids as the client wrote them: never read as a JS number or re-escaped.
    const ids = ['7', '1.0', '-0', '1e2', '18446744073709551615', '"abc"', '"q\\"u\\\\o\\u00e9 é"', '""'];
    for (const id of ids) {
      const a = await rpc(stack.url('/l1'), `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId"}`, h);
      expect(a.status, id).to.equal(200);
      expect(a.headers.get('x-cache'), id).to.equal('HIT');
      expect(a.text, id).to.equal(`{"jsonrpc":"2.0","id":${id},"result":${result}}`);
    }
    const batch = await rpc(
      stack.url('/l1'),
      '[{"jsonrpc":"2.0","id":"x","method":"eth_chainId"},{"jsonrpc":"2.0","id":2.50,"method":"eth_chainId"}]',
      h,
    );
    expect(batch.headers.get('x-cache')).to.equal('HIT');
    expect(batch.text).to.equal(`[{"jsonrpc":"2.0","id":"x","result":${result}},{"jsonrpc":"2.0","id":2.50,"result":${result}}]`);
    expect(calls('chainId')).to.equal(0);
    expect(await metric(/noderouter_cache_lookups_total\{chain="l1",result="hit"\} (\d+)/)).to.equal(hits + ids.length + 2);
  });

  it("answers hits over WebSocket like over HTTP: the caller's id, no node call, charged, limited and counted", async () => {
    await rpc(stack.url('/l1'), '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', h);
    node().clearReceived();
    const metered = await stack.createKey('metered');
    const s = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: { apikey: metered.value } });
    try {
      const answers = [];
      for (const id of ['"a\\"b"', '1.0', '3']) answers.push(await s.send(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId"}`, id));
      expect(answers[0]?.raw).to.match(/^\{"jsonrpc":"2.0","id":"a\\"b","result":"0x[0-9a-f]+"\}$/);
      expect(answers[1]?.raw).to.match(/^\{"jsonrpc":"2.0","id":1\.0,"result":"0x[0-9a-f]+"\}$/);
      // The tier's rate (1 a second, burst 2) holds for hits too: they are not free on it.
      expect(answers[2]?.error?.code).to.equal(-32005);
    } finally {
      await s.close();
    }
    expect(calls('chainId')).to.equal(0);
    const rows = await stack.gateway.services.bundle.limiter.usage(metered.id);
    expect(rows[0]).to.include({ calls: 2, limited: 1 });
    expect(await metric(/noderouter_requests_total\{chain="l1",method="eth_chainId",outcome="ok",transport="ws"\} (\d+)/)).to.equal(2);
  });

  it('keeps a latest read only about a block time, and never pending', async () => {
    node().clearReceived();
    const latest = { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['latest', false] };
    const a = await rpc(stack.url('/l1'), latest, h);
    stack.devnet.chains.get('l1')?.advance(1);
    // The block time is 150 ms: within ten of them the read is asked of the node again.
    let b = a;
    await until(async () => (b = await rpc(stack.url('/l1'), latest, h)).headers.get('x-cache') === 'MISS', {
      what: 'the latest read is no longer cached',
      timeoutMs: 1_500,
    });
    expect((b.json as { result: { number: string } }).result.number).to.not.equal((a.json as { result: { number: string } }).result.number);
    const pending = { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['pending', false] };
    await rpc(stack.url('/l1'), pending, h);
    const p2 = await rpc(stack.url('/l1'), pending, h);
    expect(p2.headers.get('x-cache')).to.equal(null);
    expect(node().received.filter((r) => r.body.includes('pending'))).to.have.length(2);
  });

  it('never caches an error or an empty answer that may fill later', async () => {
    node().clearReceived();
    const revert = {
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_call',
      params: [{ to: '0x00000000000000000000000000000000000000aa', data: '0xdeadbeef' }, 'latest'],
    };
    await rpc(stack.url('/l1'), revert, h);
    await rpc(stack.url('/l1'), revert, h);
    expect(calls('deadbeef')).to.equal(2);
    const future = block(10_000_000);
    await rpc(stack.url('/l1'), future, h);
    await rpc(stack.url('/l1'), future, h);
    expect(calls('0x989680')).to.equal(2);
  });

  it('caches a height-pinned REST query per height', async () => {
    const archive = stack.devnet.node('c-rest-archive');
    archive.clearReceived();
    const path = stack.url('/hub/rest/cosmos/bank/v1beta1/balances/cosmos1xyz');
    const at = (height: string) => get(path, { ...h, 'x-cosmos-block-height': height });
    expect((await at('5')).headers.get('x-cache')).to.equal('MISS');
    const again = await at('5');
    expect(again.headers.get('x-cache')).to.equal('HIT');
    expect(again.headers.get('grpc-metadata-x-cosmos-block-height')).to.equal('5');
    expect((await at('6')).headers.get('x-cache')).to.equal('MISS');
    expect(archive.received.filter((r) => r.path.includes('balances'))).to.have.length(2);
  });

  it('evicts what a reorg touched', async () => {
    const rt = stack.gateway.runtimes().find((c) => c.name === 'l1');
    await rt?.prober.probeAll();
    const head = stack.devnet.chains.get('l1')?.height() as number;
    const before = await rpc(stack.url('/l1'), block(head - 1), h);
    expect((await rpc(stack.url('/l1'), block(head - 1), h)).headers.get('x-cache')).to.equal('HIT');
    stack.devnet.chains.get('l1')?.reorg(3);
    await rt?.prober.probeAll();
    const after = await rpc(stack.url('/l1'), block(head - 1), h);
    expect(after.headers.get('x-cache')).to.equal('MISS');
    expect((after.json as { result: { hash: string } }).result.hash).to.not.equal(
      (before.json as { result: { hash: string } }).result.hash,
    );
  });

  it('lets 100 identical concurrent calls reach the node once, each answered with its own id', async () => {
    node().clearReceived();
    // The node holds its answer until all 100 calls are in the gateway.
    await node().setFaults({ hold: true });
    const head = stack.devnet.chains.get('l1')?.height() as number;
    const n = head - 30;
    const pending = Promise.all(Array.from({ length: 100 }, (_, i) => rpc(stack.url('/l1'), block(n, `c${i}`), h)));
    const rt = stack.gateway.runtimes().find((c) => c.name === 'l1');
    await until(() => rt?.load.inFlight === 100, { what: 'all 100 calls are in' });
    await node().clearFaults();
    const answers = await pending;
    expect(calls('getBlockByNumber')).to.equal(1);
    answers.forEach((a, i) => {
      expect(a.status).to.equal(200);
      expect((a.json as { id: string }).id).to.equal(`c${i}`);
      expect((a.json as { result: { number: string } }).result.number).to.equal(`0x${n.toString(16)}`);
    });
    expect(await metric(/noderouter_cache_coalesced_total\{chain="l1"\} (\d+)/)).to.equal(99);
  });

  it('stays within its byte bound', async () => {
    const head = stack.devnet.chains.get('l1')?.height() as number;
    for (let i = 0; i < 60; i++) await rpc(stack.url('/l1'), block(head - 100 - i), h);
    const bytes = await metric(/noderouter_cache_bytes (\d+)/);
    expect(bytes).to.be.greaterThan(0);
    expect(bytes).to.be.at.most(40_000);
  });

  it('counts cached answers against limits and usage unless the tier makes them free', async () => {
    const head = stack.devnet.chains.get('l1')?.height() as number;
    await rpc(stack.url('/l1'), block(head - 50), h);
    const metered = await stack.createKey('metered');
    const free = await stack.createKey('freehits');
    const statuses = async (key: string): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < 4; i++) out.push((await rpc(stack.url('/l1'), block(head - 50), { apikey: key })).status);
      return out;
    };
    expect(await statuses(metered.value)).to.deep.equal([200, 200, 429, 429]);
    expect(await statuses(free.value)).to.deep.equal([200, 200, 200, 200]);
    const rows = await stack.gateway.services.bundle.limiter.usage(metered.id);
    expect(rows[0]).to.include({ calls: 2, limited: 2 });
  });
});

describe('response cache in Redis, shared by instances', function () {
  this.timeout(30_000);
  const prefix = `nrcache:${randomBytes(4).toString('hex')}:`;
  let stack: Stack;
  let other: Gateway;

  before(async () => {
    stack = await startStack({
      chains: [{ ...EVM, cache: 'redis' }],
      tiers: TIERS,
      hotYaml: redisHot(prefix),
    });
    other = await stack.startAnother();
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
  });
  after(async () => {
    await stack.close();
    await deleteUnderPrefix(prefix);
  });

  it('answers on one instance what another cached', async () => {
    const head = stack.devnet.chains.get('l1')?.height() as number;
    const call = { jsonrpc: '2.0', id: 9, method: 'eth_getBlockByNumber', params: [`0x${(head - 20).toString(16)}`, false] };
    const a = await rpc(`${stack.gateway.url}/l1`, call, { apikey: stack.key });
    expect(a.headers.get('x-cache')).to.equal('MISS');
    // The answer is stored after it is sent.
    await until(async () => (await keysUnder(`${prefix}cache:`)).some((k) => !k.startsWith(`${prefix}cache:h:`)), {
      what: 'the answer is in Redis',
    });
    const b = await rpc(`${other.url}/l1`, call, { apikey: stack.key });
    expect(b.headers.get('x-cache')).to.equal('HIT');
    expect(b.text).to.equal(a.text);
    const hex = `0x${(head - 20).toString(16)}`;
    expect(stack.devnet.node('c-full-1').received.filter((r) => r.body.includes(hex))).to.have.length(1);
  });
});
