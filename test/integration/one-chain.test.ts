// Issue 19: a dApp behind a pool sees one chain. Real anvil nodes (two full, one
// archive) with viem and ethers for filters, transactions and getLogs; devnet nodes
// for a stalled and a hung node. Probes are driven by hand (probeAll).

import { expect } from 'chai';
import { FetchRequest, JsonRpcProvider, Wallet } from 'ethers';
import { createPublicClient, createWalletClient, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createLogger } from '../../src/ops/log.js';
import { Anvil, mineAll } from '../support/anvil.js';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const OTHER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
/** init code returning runtime `PUSH1 0 PUSH1 0 LOG0 STOP` (one empty log per call). */
const LOGGER = '0x6006600c60003960066000f360006000a000';

const count = (n: Anvil, method: string): number => n.received.filter((r) => r.body.includes(`"${method}"`)).length;

describe('one chain for every client', function () {
  this.timeout(60_000);

  describe('on real nodes (anvil): filters, transactions, getLogs', () => {
    let full1: Anvil;
    let full2: Anvil;
    let archive: Anvil;
    let stack: Stack;
    let block = 0;
    const lines: string[] = [];
    const all = (): Anvil[] => [full1, full2, archive];
    const mine = async (n = 1): Promise<void> => {
      for (let i = 0; i < n; i++) await mineAll(all(), ++block);
      for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    };
    const url = (path = '/anvil'): string => stack.url(path);
    const client = (key = stack.key) => createPublicClient({ transport: http(url(), { fetchOptions: { headers: { apikey: key } } }) });
    const servedBy = (method: string): string[] =>
      lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((r) => r.msg === 'request' && r.method === method)
        .map((r) => String(r.node));

    before(async () => {
      [full1, full2, archive] = await Promise.all([Anvil.start(), Anvil.start(), Anvil.start()]);
      const nodes = [
        { name: 'anvil-full-1', role: 'full' as const },
        { name: 'anvil-full-2', role: 'full' as const },
        { name: 'anvil-archive', role: 'archive' as const },
      ];
      stack = await startStack({
        chains: [
          { name: 'anvil', plugin: 'evm', path: '/anvil', extra: '    options: { getLogsMaxRange: 4 }', nodes },
          {
            name: 'strict',
            plugin: 'evm',
            path: '/strict',
            extra: '    options: { getLogsMaxRange: 4, getLogsSplit: false }',
            nodes: nodes.map((n) => ({ ...n, name: `strict-${n.name}`, sameAs: n.name })),
          },
        ],
        externalNodes: new Map([
          ['anvil-full-1', full1.url],
          ['anvil-full-2', full2.url],
          ['anvil-archive', archive.url],
        ]),
        logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
      });
      await mine(3);
    });
    after(async () => {
      await stack?.close();
      await Promise.all(all().map((n) => n?.stop()));
    });

    it('sends a transaction once to every full node, and reads its receipt back at once (viem)', async () => {
      const account = privateKeyToAccount(KEY);
      const transport = http(url(), { fetchOptions: { headers: { apikey: stack.key } } });
      const wallet = createWalletClient({ account, transport });
      const before = all().map((n) => count(n, 'eth_sendRawTransaction'));
      const request = await wallet.prepareTransactionRequest({ account, to: OTHER, value: 1n, chain: null, gas: 21_000n });
      const raw = await wallet.signTransaction({ ...request, chain: null });
      const hash = await client().sendRawTransaction({ serializedTransaction: raw });
      const after = all().map((n) => count(n, 'eth_sendRawTransaction'));
      expect(after.map((n, i) => n - (before[i] as number))).to.deep.equal([1, 1, 0]);
      // The archive learns of it as a network would (gossip), then every node mines it.
      await archive.rpc('eth_sendRawTransaction', [raw]);
      await mine();
      const receipt = await client().waitForTransactionReceipt({ hash, pollingInterval: 50 });
      expect(receipt.status).to.equal('success');
      expect(['anvil-full-1', 'anvil-full-2']).to.include(servedBy('eth_getTransactionReceipt').pop());
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_broadcast_results_total\{chain="anvil",node="anvil-full-1",result="accepted"\} 1/);
      expect(metrics).to.match(/noderouter_broadcast_results_total\{chain="anvil",node="anvil-full-2",result="accepted"\} 1/);
    });

    it('sends a transaction once to every full node, and waits for it (ethers)', async () => {
      const req = new FetchRequest(url());
      req.setHeader('apikey', stack.key);
      const provider = new JsonRpcProvider(req, 31337, { staticNetwork: true, pollingInterval: 50 });
      const wallet = new Wallet(KEY, provider);
      const before = all().map((n) => count(n, 'eth_sendRawTransaction'));
      const signed = await wallet.signTransaction(await wallet.populateTransaction({ to: OTHER, value: 1n, gasLimit: 21_000n }));
      const tx = await provider.broadcastTransaction(signed);
      expect(all().map((n, i) => count(n, 'eth_sendRawTransaction') - (before[i] as number))).to.deep.equal([1, 1, 0]);
      await archive.rpc('eth_sendRawTransaction', [signed]);
      const mined = tx.wait();
      await mine();
      expect((await mined)?.status).to.equal(1);
      provider.destroy();
    });

    it('keeps a block filter on the node that made it through 20 polls, and no other key can poll it', async () => {
      const c = client();
      const filter = await c.createBlockFilter();
      const seen: Hex[] = [];
      for (let i = 0; i < 20; i++) {
        if (i % 4 === 0) await mine();
        seen.push(...(await c.getFilterChanges({ filter })));
      }
      expect(seen).to.have.length(5);
      const nodes = new Set([...servedBy('eth_newBlockFilter'), ...servedBy('eth_getFilterChanges')]);
      expect(nodes.size).to.equal(1);
      // The client holds the gateway's id, never the node's.
      const made = [full1, full2, archive].flatMap((n) => n.received).filter((r) => r.body.includes('eth_getFilterChanges'));
      expect(made.every((r) => !r.body.includes(filter.id))).to.equal(true);
      const stranger = (await stack.createKey('enterprise')).value;
      const res = await rpc(url(), { jsonrpc: '2.0', id: 1, method: 'eth_getFilterChanges', params: [filter.id] }, { apikey: stranger });
      expect((res.json as { error: { code: number; message: string } }).error).to.deep.equal({ code: -32000, message: 'filter not found' });
    });

    it('answers "filter not found" once the filter’s node has left rotation, and viem’s watchEvent carries on', async () => {
      const c = client();
      const filter = await c.createBlockFilter();
      const owner = servedBy('eth_newBlockFilter').pop();
      const rt = stack.gateway.runtimes().find((r) => r.name === 'anvil');
      const node = rt?.pool.nodes.find((n) => n.name === owner);
      if (node === undefined) throw new Error('no owner');
      node.inRotation = false;
      try {
        const res = await rpc(url(), { jsonrpc: '2.0', id: 1, method: 'eth_getFilterChanges', params: [filter.id] }, { apikey: stack.key });
        expect((res.json as { error: { message: string } }).error.message).to.equal('filter not found');
        // viem makes a new filter and keeps watching.
        const got: bigint[] = [];
        const unwatch = c.watchBlockNumber({ onBlockNumber: (n) => got.push(n), pollingInterval: 50, emitOnBegin: true });
        await until(() => got.length > 0, { what: 'viem reads the block number' });
        await mine();
        await until(() => got.length >= 2, { what: 'viem sees the new block' });
        unwatch();
        expect((got[1] as bigint) > (got[0] as bigint)).to.equal(true);
      } finally {
        node.inRotation = true;
      }
    });

    it('splits a wide getLogs into parts that fit, matching the archive’s own answer; refuses it where splitting is off', async () => {
      const account = privateKeyToAccount(KEY);
      const transport = http(url(), { fetchOptions: { headers: { apikey: stack.key } } });
      const wallet = createWalletClient({ account, transport });
      const sendRaw = async (data: Hex, to?: Hex): Promise<Hex> => {
        const request = await wallet.prepareTransactionRequest({ account, to: to ?? null, data, chain: null, gas: 200_000n });
        const raw = await wallet.signTransaction({ ...request, chain: null });
        const hash = await client().sendRawTransaction({ serializedTransaction: raw });
        await archive.rpc('eth_sendRawTransaction', [raw]);
        await mine();
        return hash;
      };
      const first = block + 1;
      const deployed = await client().getTransactionReceipt({ hash: await sendRaw(LOGGER) });
      for (let i = 0; i < 6; i++) await sendRaw('0x', deployed.contractAddress as Hex);
      const filter = { fromBlock: `0x${first.toString(16)}`, toBlock: `0x${block.toString(16)}`, address: deployed.contractAddress };
      const body = { jsonrpc: '2.0', id: 7, method: 'eth_getLogs', params: [filter] };
      const direct = await archive.rpc('eth_getLogs', [filter]);
      const res = await rpc(url(), body, { apikey: stack.key });
      expect((res.json as { result: unknown[] }).result).to.deep.equal(direct);
      expect((direct as unknown[]).length).to.equal(6);
      expect((await get(stack.admin('/metrics'))).text).to.match(/noderouter_split_calls_total\{chain="anvil",reason="limit"\} [1-9]/);
      const before = all().map((n) => count(n, 'eth_getLogs'));
      const refused = await rpc(url('/strict'), body, { apikey: stack.key });
      const error = (refused.json as { error: { code: number; message: string } }).error;
      expect(error.code).to.equal(-32602);
      expect(error.message).to.contain('at most 4 blocks');
      expect(all().map((n) => count(n, 'eth_getLogs'))).to.deep.equal(before);
    });
  });

  describe('on devnet nodes: a stalled node and a hung node', () => {
    let stack: Stack;
    const lines: string[] = [];
    before(async () => {
      stack = await startStack({
        chains: [
          {
            name: 'l1',
            plugin: 'evm',
            path: '/l1',
            extra:
              '    attemptTimeoutMs: 20000\n    hedge: { minDelayMs: 20, maxDelayMs: 100, perSecond: 1000 }\n    breaker: { resetTimeoutMs: 600000 }',
            nodes: [
              { name: 'a', role: 'full' },
              { name: 'b', role: 'full' },
              { name: 'c', role: 'full' },
            ],
          },
        ],
        logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
      });
    });
    after(() => stack.close());
    const probe = async (): Promise<void> => {
      for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    };
    const call = async (method: string, params: unknown[] = []): Promise<unknown> =>
      ((await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method, params }, { apikey: stack.key })).json as { result: unknown }).result;

    it('never answers a head lower than one it gave, with a node stalled a few blocks behind; the stalled node still serves old blocks', async () => {
      await probe();
      await stack.devnet.node('c').setFaults({ stalled: true });
      stack.devnet.chains.get('l1')?.advance(3);
      await probe();
      const heads: number[] = [];
      for (let i = 0; i < 30; i++) {
        heads.push(parseInt(String(await call('eth_blockNumber')), 16));
        const latest = (await call('eth_getBlockByNumber', ['latest', false])) as { number: string };
        heads.push(parseInt(latest.number, 16));
      }
      for (let i = 1; i < heads.length; i++) expect(heads[i], `read ${i}`).to.be.at.least(heads[i - 1] as number);
      stack.devnet.node('c').clearReceived();
      // A block below the stalled node's head: it can answer that, so it still does its share.
      for (let i = 0; i < 6; i++) expect(await call('eth_getBlockByNumber', ['0x3e0', false])).to.have.property('number', '0x3e0');
      expect(stack.devnet.node('c').received.length).to.be.above(0);
      const served = (await get(stack.admin('/metrics'))).text;
      expect(served).to.match(/noderouter_served_head_height\{chain="l1"\} \d+/);
      await stack.devnet.node('c').clearFaults();
    });

    it('pins reads at latest to the served head when a node is ahead of the majority', async () => {
      await probe();
      await stack.devnet.node('b').setFaults({ stalled: true });
      await stack.devnet.node('c').setFaults({ stalled: true });
      stack.devnet.chains.get('l1')?.advance(2);
      await probe();
      const rt = stack.gateway.runtimes()[0];
      const served = rt?.pool.servedHead as number;
      expect(stack.devnet.node('a').height()).to.equal(served + 2);
      for (const n of ['a', 'b', 'c']) stack.devnet.node(n).clearReceived();
      for (let i = 0; i < 6; i++) await call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', 'latest']);
      const bodies = ['a', 'b', 'c']
        .flatMap((n) => stack.devnet.node(n).received.map((r) => r.body))
        .filter((b) => b.includes('eth_getBalance'));
      // Six calls; a hedge (a node slow on a loaded machine) sends one to a second node, pinned all the same.
      expect(bodies.length).to.be.at.least(6);
      // Every node got the call at the served head's number, never at its own latest.
      for (const b of bodies)
        expect(b)
          .to.contain(`"0x${served.toString(16)}"`)
          .and.not.contain('latest');
      for (const n of ['b', 'c']) await stack.devnet.node(n).clearFaults();
    });

    it('answers every read while one node holds every answer back: a hedge to another node wins, and the hung node leaves', async () => {
      await probe();
      const from = lines.length;
      const b = stack.devnet.node('b');
      const nodeB = stack.gateway.runtimes()[0]?.pool.nodes.find((n) => n.name === 'b');
      await b.setFaults({ hold: true });
      try {
        // Were any answer waiting on node b, this loop would never end: b answers only once released.
        // Outrun on every call it is asked, b is ejected as an outlier at its third in a row.
        for (let i = 0; i < 200 && nodeB?.inRotation === true; i++)
          expect(await call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0x3e0'])).to.match(/^0x/);
        expect(nodeB?.outReason).to.match(/^ejected: 3 consecutive timeouts/);
        b.clearReceived();
        for (let i = 0; i < 10; i++)
          expect(await call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0x3e0'])).to.match(/^0x/);
        expect(b.received.filter((r) => r.body.includes('eth_getBalance'))).to.deep.equal([]);
      } finally {
        await b.clearFaults();
      }
      const text = (await get(stack.admin('/metrics'))).text;
      const won = Number(/noderouter_hedges_total\{chain="l1",result="won"\} (\d+)/.exec(text)?.[1] ?? 0);
      expect(won).to.be.at.least(1);
      const byB = lines
        .slice(from)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((r) => r.msg === 'request' && r.method === 'eth_getBalance' && r.node === 'b');
      expect(byB).to.deep.equal([]);
    });
  });

  describe('submits of every family go once to every full node', () => {
    let stack: Stack;
    const b64 = (text: string): string => Buffer.from(text).toString('base64');
    before(async () => {
      stack = await startStack({
        chains: [
          {
            name: 'objx',
            plugin: 'objectx',
            path: '/objx',
            nodes: [
              { name: 'o1', role: 'full' },
              { name: 'o2', role: 'full' },
              { name: 'oa', role: 'archive' },
            ],
          },
          {
            name: 'hub',
            plugin: 'sdk-rpc',
            path: '/hub',
            network: 'hub',
            nodes: [
              { name: 'r1', role: 'full' },
              { name: 'r2', role: 'full' },
            ],
          },
          {
            name: 'rest',
            plugin: 'sdk-rest',
            path: '/rest',
            network: 'hub',
            nodes: [
              { name: 's1', role: 'full' },
              { name: 's2', role: 'full' },
            ],
          },
        ],
      });
      for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    });
    after(() => stack.close());
    const sent = (node: string, what: string): number =>
      stack.devnet.node(node).received.filter((r) => (r.path + r.body).includes(what)).length;

    it('objectx executeTransactionBlock: once to each full node, none to the archive, the first execution answered', async () => {
      const body = { jsonrpc: '2.0', id: 1, method: 'sui_executeTransactionBlock', params: [b64('move call 1'), ['c2lnbmF0dXJl']] };
      const res = await rpc(stack.url('/objx'), body, { apikey: stack.key });
      expect((res.json as { result?: { digest?: string } }).result?.digest).to.be.a('string');
      expect(['o1', 'o2', 'oa'].map((n) => sent(n, 'executeTransactionBlock'))).to.deep.equal([1, 1, 0]);
    });

    it('CometBFT broadcast_tx_sync and the REST broadcast: once to each full node', async () => {
      const res = await rpc(
        stack.url('/hub'),
        { jsonrpc: '2.0', id: 1, method: 'broadcast_tx_sync', params: { tx: b64('send 9') } },
        { apikey: stack.key },
      );
      expect((res.json as { result?: { hash?: string } }).result?.hash).to.be.a('string');
      expect(['r1', 'r2'].map((n) => sent(n, 'broadcast_tx_sync'))).to.deep.equal([1, 1]);
      const post = await fetch(stack.url('/rest/cosmos/tx/v1beta1/txs'), {
        method: 'POST',
        headers: { apikey: stack.key, 'content-type': 'application/json' },
        body: JSON.stringify({ tx_bytes: b64('send 10'), mode: 'BROADCAST_MODE_SYNC' }),
      });
      expect(post.status).to.equal(200);
      expect(['s1', 's2'].map((n) => sent(n, '/cosmos/tx/v1beta1/txs'))).to.deep.equal([1, 1]);
    });
  });
});
