// Issue 27, point 1: archive state only for archive access, on every path. A key whose
// tier has no archive access asks for state by block hash (a call the EVM plugin cannot
// place by height): with the full nodes down, or one down and the other slow enough to be
// hedged, with `consensus` asking three nodes, or under `prefer-archive`, the archive
// node is never asked for it on that key's behalf, and no answer an archive node gave
// reaches that key through the cache. Keys with archive access still get the archive's
// answer. What each devnet node received is the evidence.

import { expect } from 'chai';
import type { ChainRuntime } from '../../src/chain/runtime.js';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

const ADDR = '0x00000000000000000000000000000000000000aa';

const CHAINS: ChainSpec[] = [
  {
    name: 'l1',
    plugin: 'evm',
    path: '/l1',
    cache: 'memory',
    extra: '    attemptTimeoutMs: 5000\n    hedge: { minDelayMs: 20, maxDelayMs: 50, perSecond: 1000 }',
    nodes: [
      { name: 'a-full-1', role: 'full' },
      { name: 'a-full-2', role: 'full' },
      { name: 'a-archive-1', role: 'archive' },
    ],
  },
  {
    // The consensus example of docs/answers-checked.md.
    name: 'l1-checked',
    plugin: 'evm',
    path: '/l1-checked',
    network: 'l1',
    extra: '    consensus: { methods: [eth_getBalance, eth_call], ask: 3, agree: 2, onDisagree: answer-majority, minCompared: 1000 }',
    nodes: [
      { name: 'c-full-1', role: 'full' },
      { name: 'c-full-2', role: 'full' },
      { name: 'c-archive-1', role: 'archive' },
    ],
  },
  {
    name: 'l1-prefer',
    plugin: 'evm',
    path: '/l1-prefer',
    network: 'l1',
    extra: '    consensus: { ask: 2, agree: 2, onDisagree: prefer-archive, minCompared: 1000 }',
    nodes: [
      { name: 'p-full-1', role: 'full' },
      { name: 'p-full-2', role: 'full' },
      { name: 'p-archive-1', role: 'archive' },
    ],
  },
];

interface Answer {
  status: number;
  headers: Headers;
  json: { result?: unknown; error?: { code: number; message: string } };
}

describe('archive state only for archive access (issue 27.1)', function () {
  this.timeout(30_000);
  let stack: Stack;

  const runtime = (name: string): ChainRuntime => {
    const rt = stack.gateway.runtimes().find((c) => c.name === name);
    if (rt === undefined) throw new Error(`no chain ${name}`);
    return rt;
  };
  const received = (node: string, marker: string): number =>
    stack.devnet.node(node).received.filter((r) => r.body.includes(marker) || r.path.includes(marker)).length;
  const call = async (path: string, method: string, params: unknown[], key: string): Promise<Answer> => {
    const r = await rpc(stack.url(path), { jsonrpc: '2.0', id: 1, method, params }, { apikey: key });
    return { status: r.status, headers: r.headers, json: r.json as Answer['json'] };
  };
  /** What a devnet node answers itself (asked directly, not through the gateway). */
  const truth = async (node: string, method: string, params: unknown[]): Promise<unknown> =>
    ((await rpc(stack.devnet.node(node).url, { jsonrpc: '2.0', id: 1, method, params })).json as { result: unknown }).result;
  const head = (): number => stack.devnet.chains.get('l1')?.height() as number;
  /** The hash of the block at `height`, as an archive node gives it (its record is cleared before it counts). */
  const hashAt = async (node: string, height: number): Promise<string> =>
    ((await truth(node, 'eth_getBlockByNumber', [`0x${height.toString(16)}`, false])) as { hash: string }).hash;
  /** Probe until each named node of the chain is in (or out of) rotation. */
  const rotation = async (chain: string, nodes: readonly string[], inRotation: boolean): Promise<void> => {
    const rt = runtime(chain);
    for (let i = 0; i < 10; i++) {
      await rt.prober.probeAll();
      if (rt.pool.nodes.filter((n) => nodes.includes(n.name)).every((n) => n.inRotation === inRotation)) return;
    }
    throw new Error(`${nodes.join(', ')} did not go ${inRotation ? 'in' : 'out'}`);
  };

  before(async () => {
    stack = await startStack({ chains: CHAINS });
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
  });
  after(() => stack?.close());

  describe('the last-resort fallback, hedges and the cache', () => {
    afterEach(async () => {
      for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).clearFaults();
      await rotation('l1', ['a-full-1', 'a-full-2'], true);
    });

    it('with both full nodes down, a free key’s read by block hash gets 503 and never reaches the archive node; nothing crosses through the cache', async () => {
      const blockHash = await hashAt('a-archive-1', head() - 220);
      const params = [ADDR, { blockHash }];
      for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).setFaults({ down: true });
      await rotation('l1', ['a-full-1', 'a-full-2'], false);
      stack.devnet.node('a-archive-1').clearReceived();

      const free = await stack.createKey('free');
      const refused = await call('/l1', 'eth_getTransactionCount', params, free.value);
      expect(refused.status).to.equal(503);
      expect(refused.headers.get('retry-after')).to.equal('1');
      expect(refused.json.result).to.equal(undefined);
      expect(refused.json.error?.code).to.equal(-32603);
      expect(received('a-archive-1', blockHash)).to.equal(0);

      // A key with archive access gets the archive node's answer…
      const archiveTruth = await truth('a-archive-1', 'eth_getTransactionCount', params);
      stack.devnet.node('a-archive-1').clearReceived();
      const paid = await stack.createKey('enterprise');
      const allowed = await call('/l1', 'eth_getTransactionCount', params, paid.value);
      expect(allowed.status).to.equal(200);
      expect(allowed.json.result).to.equal(archiveTruth);
      expect(received('a-archive-1', blockHash)).to.equal(1);

      // …and it is not kept for keys without: with the full nodes back, a second free key
      // gets the full node's refusal, never the cached archive answer.
      for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).clearFaults();
      await rotation('l1', ['a-full-1', 'a-full-2'], true);
      const other = await stack.createKey('free');
      const again = await call('/l1', 'eth_getTransactionCount', params, other.value);
      expect(again.headers.get('x-cache')).to.not.equal('HIT');
      expect(again.status).to.equal(403);
      expect(again.json.error?.code).to.equal(-32004);
      expect(again.json.result).to.equal(undefined);
      expect(received('a-archive-1', blockHash)).to.equal(1);
      // The enterprise key's own answer is not cached either: it came from the archive node.
      const repeat = await call('/l1', 'eth_getTransactionCount', params, paid.value);
      expect(repeat.headers.get('x-cache')).to.not.equal('HIT');
      expect(repeat.json.result).to.equal(archiveTruth);
    });

    it('with both full nodes down, no spelling of an old block takes a free key to the archive node, over HTTP or WebSocket', async () => {
      const old = head() - 223;
      const blockHash = await hashAt('a-archive-1', old);
      // Each a block some node executes as old state: a hash with geth's "0X" prefix, a
      // number with Reth's leading zeros, erigon's decimal string and JSON number, or a
      // value no node places (null, an object without either member).
      const spellings: unknown[] = [`0X${blockHash.slice(2)}`, `0x${old.toString(16).padStart(16, '0')}`, String(old), old, null, {}];
      for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).setFaults({ down: true });
      await rotation('l1', ['a-full-1', 'a-full-2'], false);
      stack.devnet.node('a-archive-1').clearReceived();
      const free = await stack.createKey('free');
      const socket = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: { apikey: free.value } });
      try {
        for (const [i, at] of spellings.entries()) {
          const addr = `0x${(0xa0 + i).toString(16).padStart(40, '0')}`;
          const http = await call('/l1', 'eth_getBalance', [addr, at], free.value);
          expect(http.json.result, JSON.stringify(at)).to.equal(undefined);
          expect([403, 503], JSON.stringify(at)).to.include(http.status);
          const ws = await socket.call('eth_getBalance', [addr, at]);
          expect(ws.result, JSON.stringify(at)).to.equal(undefined);
          expect([-32004, -32603], JSON.stringify(at)).to.include(ws.error?.code);
          expect(received('a-archive-1', addr.slice(2)), JSON.stringify(at)).to.equal(0);
        }
      } finally {
        await socket.close();
      }
    });

    it('with one full node down and the other slow, the hedge of a free key’s read by hash never goes to the archive node', async () => {
      const blockHash = await hashAt('a-archive-1', head() - 221);
      const params = [ADDR, { blockHash }];
      await stack.devnet.node('a-full-1').setFaults({ down: true });
      await rotation('l1', ['a-full-1'], false);
      await stack.devnet.node('a-full-2').setFaults({ latencyMs: 300 });
      for (const n of ['a-full-2', 'a-archive-1']) stack.devnet.node(n).clearReceived();

      const free = await stack.createKey('free');
      const r = await call('/l1', 'eth_getTransactionCount', params, free.value);
      expect(r.status).to.equal(403);
      expect(r.json.error?.code).to.equal(-32004);
      expect(r.json.result).to.equal(undefined);
      expect(received('a-full-2', blockHash)).to.equal(1);
      expect(received('a-archive-1', blockHash)).to.equal(0);
    });

    it('in a batch, a free key’s read by hash is not carried to the archive node with a call that alone could go there', async () => {
      const blockHash = await hashAt('a-archive-1', head() - 222);
      for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).setFaults({ down: true });
      await rotation('l1', ['a-full-1', 'a-full-2'], false);
      stack.devnet.node('a-archive-1').clearReceived();
      const free = await stack.createKey('free');
      const r = await rpc(
        stack.url('/l1'),
        [
          { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
          { jsonrpc: '2.0', id: 2, method: 'eth_getTransactionCount', params: [ADDR, { blockHash }] },
        ],
        { apikey: free.value },
      );
      // The batch goes to nodes as one request, so it goes where its strictest call may:
      // with no full node, nowhere (each item 503's error), and the archive node hears nothing.
      const items = r.json as Array<Answer['json'] & { id: number }>;
      expect(items.map((i) => [i.id, i.result, i.error?.code])).to.deep.equal([
        [1, undefined, -32603],
        [2, undefined, -32603],
      ]);
      expect(received('a-archive-1', 'eth_chainId')).to.equal(0);
      expect(received('a-archive-1', blockHash)).to.equal(0);
      // Alone, the chain id still falls back to the archive node.
      const alone = await call('/l1', 'eth_chainId', [], free.value);
      expect(alone.json.result).to.equal('0x1');
      expect(received('a-archive-1', 'eth_chainId')).to.equal(1);
    });

    it('still lets a free key’s call at the head fall back to the archive node when every full node is out', async () => {
      for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).setFaults({ down: true });
      await rotation('l1', ['a-full-1', 'a-full-2'], false);
      stack.devnet.node('a-archive-1').clearReceived();
      const free = await stack.createKey('free');
      const r = await call('/l1', 'eth_getBalance', [ADDR, 'latest'], free.value);
      expect(r.status).to.equal(200);
      expect(r.json.result).to.match(/^0x/);
      expect(received('a-archive-1', 'eth_getBalance')).to.equal(1);
    });
  });

  describe('what full nodes hold stays shared', () => {
    it('a read by hash a full node answered is cached for every key; a recent block number still falls back to the archive node', async () => {
      const blockHash = await hashAt('a-archive-1', head() - 5);
      const params = [ADDR, { blockHash }];
      const paid = await stack.createKey('enterprise');
      const first = await call('/l1', 'eth_getBalance', params, paid.value);
      expect(first.status).to.equal(200);
      expect(first.headers.get('x-cache')).to.equal('MISS');
      const free = await stack.createKey('free');
      const shared = await call('/l1', 'eth_getBalance', params, free.value);
      expect(shared.headers.get('x-cache')).to.equal('HIT');
      expect(shared.json.result).to.equal(first.json.result);

      const recent = `0x${(head() - 3).toString(16)}`;
      const nonce = await truth('a-full-1', 'eth_getTransactionCount', [ADDR, recent]);
      const oldHash = await hashAt('a-archive-1', head() - 230);
      for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).setFaults({ down: true });
      try {
        await rotation('l1', ['a-full-1', 'a-full-2'], false);
        stack.devnet.node('a-archive-1').clearReceived();
        const r = await call('/l1', 'eth_getTransactionCount', [ADDR, recent], free.value);
        expect(r.status).to.equal(200);
        expect(r.json.result).to.equal(nonce);
        expect(received('a-archive-1', 'eth_getTransactionCount')).to.equal(1);
        // A block by hash is no more placeable than state by hash.
        const byHash = await call('/l1', 'eth_getBlockByHash', [oldHash, false], free.value);
        expect(byHash.status).to.equal(503);
        expect(received('a-archive-1', 'eth_getBlockByHash')).to.equal(0);
      } finally {
        for (const n of ['a-full-1', 'a-full-2']) await stack.devnet.node(n).clearFaults();
        await rotation('l1', ['a-full-1', 'a-full-2'], true);
      }
    });
  });

  describe('consensus', () => {
    it('refuses a free key’s read by hash 403 when the full nodes have pruned it, without asking the archive node', async () => {
      const blockHash = await hashAt('c-archive-1', head() - 250);
      const params = [ADDR, { blockHash }];
      for (const n of ['c-full-1', 'c-full-2', 'c-archive-1']) stack.devnet.node(n).clearReceived();
      const free = await stack.createKey('free');
      const r = await call('/l1-checked', 'eth_getBalance', params, free.value);
      expect(r.status).to.equal(403);
      expect(r.json.error?.code).to.equal(-32004);
      expect(r.json.result).to.equal(undefined);
      expect(received('c-full-1', blockHash) + received('c-full-2', blockHash)).to.be.at.least(1);
      expect(received('c-archive-1', blockHash)).to.equal(0);

      // A key with archive access is answered from the archive node.
      const archiveTruth = await truth('c-archive-1', 'eth_getBalance', params);
      const paid = await stack.createKey('enterprise');
      const ok = await call('/l1-checked', 'eth_getBalance', params, paid.value);
      expect(ok.status).to.equal(200);
      expect(ok.json.result).to.equal(archiveTruth);
    });

    it('asks the archive node under prefer-archive only for keys with archive access', async () => {
      await stack.devnet.node('p-full-2').setFaults({ lie: true });
      try {
        const at = `0x${(head() - 2).toString(16)}`;
        const honest = await truth('p-archive-1', 'eth_getBalance', [ADDR, at]);
        stack.devnet.node('p-archive-1').clearReceived();
        const free = await stack.createKey('free');
        const r = await call('/l1-prefer', 'eth_getBalance', [ADDR, at], free.value);
        // The two full nodes disagree: the free key gets the larger group's answer (answer-majority), no archive node asked.
        expect(r.status).to.equal(200);
        expect(r.json.result).to.match(/^0x/);
        expect(received('p-archive-1', 'eth_getBalance')).to.equal(0);

        const paid = await stack.createKey('enterprise');
        const ok = await call('/l1-prefer', 'eth_getBalance', [ADDR, at], paid.value);
        expect(ok.json.result).to.equal(honest);
        expect(received('p-archive-1', 'eth_getBalance')).to.equal(1);
        const metrics = (await get(stack.admin('/metrics'))).text;
        expect(metrics).to.match(/noderouter_consensus_total\{chain="l1-prefer",outcome="archive"\} 1\b/);
        expect(metrics).to.match(/noderouter_consensus_total\{chain="l1-prefer",outcome="majority"\} 1\b/);
      } finally {
        await stack.devnet.node('p-full-2').clearFaults();
      }
    });
  });
});
