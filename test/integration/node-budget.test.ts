// Issue 27, point 2: node work is bounded and charged. One client call (each batch item)
// may cause at most its tier's `nodeCalls` node calls, whatever splits, agreement or
// broadcasts it takes; past them it is answered -32005 and nothing more is sent. A getLogs
// the gateway cuts into parts is charged per part, like calls of their spans; agreement
// and broadcasts per node asked when the tier's `chargeFanout` says so. Every node call is
// in noderouter_upstream_requests_total, and noderouter_node_calls_per_call shows them per
// client call. The devnet's maxLogsRange fault plays a provider's "range too large".

import { expect } from 'chai';
import { privateKeyToAccount } from 'viem/accounts';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { pause, until } from '../support/until.js';

const TIERS = `
  free: { rate: unlimited, burst: unlimited, daily: 1000000, archive: false }
  tight: { rate: unlimited, burst: unlimited, archive: false, nodeCalls: 3 }
  once: { rate: unlimited, burst: unlimited, archive: true }
  fanout: { rate: unlimited, burst: unlimited, archive: true, chargeFanout: true }
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 1000, archive: true }
`;

const L1_NODES = ['l1-full-1', 'l1-full-2', 'l1-archive-1'];
const shared = (prefix: string): ChainSpec['nodes'] =>
  L1_NODES.map((n) => ({ name: `${prefix}-${n}`, role: n.includes('archive') ? ('archive' as const) : ('full' as const), sameAs: n }));

const CHAINS: ChainSpec[] = [
  {
    name: 'l1',
    plugin: 'evm',
    path: '/l1',
    nodes: [
      { name: 'l1-full-1', role: 'full' },
      { name: 'l1-full-2', role: 'full' },
      { name: 'l1-archive-1', role: 'archive' },
    ],
  },
  // The same nodes behind an endpoint that cuts ranges itself, at 10 blocks a call.
  { name: 'l1-cut', plugin: 'evm', path: '/l1-cut', network: 'l1', extra: '    options: { getLogsMaxRange: 10 }', nodes: shared('cut') },
  // And behind one that checks balances by agreement of three nodes.
  {
    name: 'l1-agree',
    plugin: 'evm',
    path: '/l1-agree',
    network: 'l1',
    extra: '    consensus: { ask: 3, agree: 2, minCompared: 1000 }',
    nodes: shared('agree'),
  },
];

const ADDRESS = '0x00000000000000000000000000000000000000aa';
const ACCOUNT = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');

interface RpcError {
  error?: { code: number; message: string };
  result?: unknown;
}

describe('node work per client call: bounded and charged', function () {
  this.timeout(30_000);
  let stack: Stack;

  const getLogs = (from: number, to: number, id: unknown = 1): object => ({
    jsonrpc: '2.0',
    id,
    method: 'eth_getLogs',
    params: [{ fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` }],
  });
  /** eth_getLogs calls the l1 devnet nodes have received (every endpoint here uses them); a batch's items each count. */
  const logCalls = (): number =>
    L1_NODES.reduce((n, node) => n + stack.devnet.node(node).received.reduce((k, r) => k + r.body.split('"eth_getLogs"').length - 1, 0), 0);
  const received = (method: string): number =>
    L1_NODES.reduce((n, node) => n + stack.devnet.node(node).received.filter((r) => r.body.includes(method)).length, 0);
  const head = (): number => stack.devnet.chains.get('l1')?.height() as number;
  const calls = async (id: string, chain: string): Promise<number> =>
    (await stack.gateway.services.bundle.limiter.usage(id)).filter((r) => r.chain === chain).reduce((n, r) => n + r.calls, 0);
  const metrics = async (): Promise<string> => (await get(stack.admin('/metrics'))).text;
  const series = (text: string, name: string, labels: string): number => {
    let sum = 0;
    for (const line of text.split('\n')) if (line.startsWith(`${name}{`) && line.includes(labels)) sum += Number(line.split(' ').pop());
    return sum;
  };
  const upstream = async (prefix: string): Promise<number> =>
    series(await metrics(), 'noderouter_upstream_requests_total', `node="${prefix}`);
  const limitNodes = async (max: number | undefined): Promise<void> => {
    for (const n of L1_NODES) {
      if (max === undefined) await stack.devnet.node(n).clearFaults();
      else await stack.devnet.node(n).setFaults({ maxLogsRange: max });
    }
  };

  before(async () => {
    stack = await startStack({ chains: CHAINS, tiers: TIERS });
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
  });
  after(() => stack?.close());

  describe('getLogs on nodes that answer one block at a time (maxLogsRange: 1)', () => {
    before(() => limitNodes(1));
    after(() => limitNodes(undefined));

    it('stops a 120-block range at the budget: -32005 with the nodes’ limit, at most 16 node calls, each charged', async () => {
      const { id, value } = await stack.createKey('free');
      const h = head();
      const sentBefore = logCalls();
      const upstreamBefore = await upstream('l1-');
      const m0 = await metrics();
      const res = await rpc(stack.url('/l1'), getLogs(h - 119, h, 'logs-1'), { apikey: value });
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.equal({
        jsonrpc: '2.0',
        id: 'logs-1',
        error: { code: -32005, message: 'range too large: split it into ranges of 1 block' },
      });
      const sent = logCalls() - sentBefore;
      // Before the budget: 248–289 calls for this one request.
      expect(sent).to.be.at.most(16);
      expect(sent).to.be.at.least(8);
      // Nothing more goes out once the answer is given: a part still coming would be sent within this pause.
      await pause(200);
      expect(logCalls() - sentBefore).to.equal(sent);
      // Every part sent is charged like a getLogs call of its span (5 units up to 1000 blocks).
      expect(await calls(id, 'l1')).to.equal(5 * sent);
      // Every node call is in the upstream counter, and the call's count in the histogram.
      expect((await upstream('l1-')) - upstreamBefore).to.equal(sent);
      const m1 = await metrics();
      const sum = (t: string): number => series(t, 'noderouter_node_calls_per_call_sum', 'chain="l1"');
      const count = (t: string): number => series(t, 'noderouter_node_calls_per_call_count', 'chain="l1"');
      expect(sum(m1) - sum(m0)).to.equal(sent);
      expect(count(m1) - count(m0)).to.equal(1);
      expect(series(m1, 'noderouter_node_calls_per_call_bucket', 'le="16",chain="l1"')).to.be.at.least(1);
      expect(series(m1, 'noderouter_requests_total', 'chain="l1",method="eth_getLogs",outcome="node_budget_exceeded"')).to.equal(1);
    });

    it('answers a range it can cover within the budget, joined in block order, charged per part', async () => {
      const { id, value } = await stack.createKey('free');
      const h = head();
      const sentBefore = logCalls();
      // 8 blocks: the whole, 2 halves, 4 quarters, 8 single blocks: 15 node calls.
      const res = await rpc(stack.url('/l1'), getLogs(h - 7, h), { apikey: value });
      expect(res.status).to.equal(200);
      const sent = logCalls() - sentBefore;
      expect(sent).to.equal(15);
      expect(await calls(id, 'l1')).to.equal(5 * 15);
      await limitNodes(undefined);
      const whole = await rpc(stack.devnet.node('l1-full-1').url, getLogs(h - 7, h));
      await limitNodes(1);
      expect((whole.json as RpcError).result).to.be.an('array');
      expect(res.json).to.deep.equal({ jsonrpc: '2.0', id: 1, result: (whole.json as RpcError).result });
    });

    it('gives each batch item its own budget', async () => {
      const { id, value } = await stack.createKey('free');
      const h = head();
      const sentBefore = logCalls();
      const res = await rpc(stack.url('/l1'), [getLogs(h - 119, h, 1), getLogs(h - 7, h, 2)], { apikey: value });
      expect(res.status).to.equal(200);
      const [big, small] = res.json as RpcError[];
      expect(big?.error).to.deep.equal({ code: -32005, message: 'range too large: split it into ranges of 1 block' });
      expect(small?.result).to.be.an('array');
      const sent = logCalls() - sentBefore;
      expect(sent).to.be.at.most(16 + 15);
      expect(await calls(id, 'l1')).to.equal(5 * sent);
    });

    it('holds a tier with a smaller budget to it (nodeCalls: 3)', async () => {
      const { value } = await stack.createKey('tight');
      const h = head();
      const sentBefore = logCalls();
      const res = await rpc(stack.url('/l1'), getLogs(h - 7, h), { apikey: value });
      expect((res.json as RpcError).error).to.deep.equal({ code: -32005, message: 'range too large: split it into ranges of 1 block' });
      expect(logCalls() - sentBefore).to.be.at.most(3);
    });
  });

  describe('getLogs an endpoint cuts itself (getLogsMaxRange: 10)', () => {
    it('sends 120 blocks as 12 parts and charges each', async () => {
      const { id, value } = await stack.createKey('free');
      const h = head();
      const sentBefore = logCalls();
      const res = await rpc(stack.url('/l1-cut'), getLogs(h - 119, h), { apikey: value });
      expect(res.status).to.equal(200);
      expect((res.json as RpcError).result).to.be.an('array');
      expect(logCalls() - sentBefore).to.equal(12);
      expect(await calls(id, 'l1-cut')).to.equal(12 * 5);
    });

    it('refuses a range needing more parts than the budget before any node is asked', async () => {
      // 200 blocks reach past the full nodes' history: a key with archive access.
      const { id, value } = await stack.createKey('once');
      const h = head();
      const sentBefore = logCalls();
      const res = await rpc(stack.url('/l1-cut'), getLogs(h - 199, h), { apikey: value });
      expect(res.status).to.equal(200);
      expect((res.json as RpcError).error).to.deep.equal({ code: -32005, message: 'range too large: split it into ranges of 10 blocks' });
      expect(logCalls() - sentBefore).to.equal(0);
      // Admission's one call, nothing more.
      expect(await calls(id, 'l1-cut')).to.equal(5);
    });
  });

  describe('fan-out', () => {
    it('charges agreement across three nodes once, or per node asked when the tier says so', async () => {
      const once = await stack.createKey('once');
      const fanout = await stack.createKey('fanout');
      const at = `0x${(head() - 1).toString(16)}`;
      for (const key of [once, fanout]) {
        const before = received('eth_getBalance');
        const res = await rpc(
          stack.url('/l1-agree'),
          { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [ADDRESS, at] },
          { apikey: key.value },
        );
        expect(res.status).to.equal(200);
        expect((res.json as RpcError).result).to.match(/^0x/);
        await until(() => received('eth_getBalance') === before + 3);
      }
      expect(await calls(once.id, 'l1-agree')).to.equal(1);
      expect(await calls(fanout.id, 'l1-agree')).to.equal(3);
    });

    it('charges a transaction sent to every full node per node when the tier says so', async () => {
      const chainId = Number.parseInt(
        ((await rpc(stack.devnet.node('l1-full-1').url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' })).json as { result: string })
          .result,
        16,
      );
      const sign = (nonce: number): Promise<string> =>
        ACCOUNT.signTransaction({
          chainId,
          to: '0x00000000000000000000000000000000000000bb',
          value: 5n,
          nonce,
          gas: 21_000n,
          maxFeePerGas: 2_000_000_000n,
          maxPriorityFeePerGas: 1n,
        });
      const once = await stack.createKey('once');
      const fanout = await stack.createKey('fanout');
      let nonce = 0;
      for (const key of [once, fanout]) {
        const before = received('eth_sendRawTransaction');
        const raw = await sign(nonce++);
        const res = await rpc(
          stack.url('/l1'),
          { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] },
          { apikey: key.value },
        );
        expect(res.status).to.equal(200);
        expect((res.json as RpcError).result).to.match(/^0x[0-9a-f]{64}$/);
        // Both full nodes have it, the archive node is not asked.
        await until(() => received('eth_sendRawTransaction') === before + 2);
      }
      expect(await calls(once.id, 'l1')).to.equal(1);
      expect(await calls(fanout.id, 'l1')).to.equal(2);
    });
  });
});
