// Node pools against the devnet with injected faults: failover, rotation on health
// and lag, weights, breakers, retries and archive routing. Probes are driven by
// hand (probeAll) so nothing waits on a timer.

import { expect } from 'chai';
import type { ChainRuntime } from '../../src/chain/runtime.js';
import { get, rpc, startStack, type ChainSpec, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const ADDR = '0x00000000000000000000000000000000000000aa';

function runtime(stack: Stack, name: string): ChainRuntime {
  const rt = stack.gateway.runtimes().find((c) => c.name === name);
  if (rt === undefined) throw new Error(`no chain ${name}`);
  return rt;
}

/** Client calls (not probes) a node received, marked by a method only tests send. */
function hits(stack: Stack, node: string, method: string): number {
  return stack.devnet.node(node).received.filter((r) => r.body.includes(method) || r.path.includes(method)).length;
}

function clear(stack: Stack): void {
  for (const n of stack.devnet.nodes.values()) n.clearReceived();
}

const EVM3: ChainSpec = {
  name: 'evm3',
  plugin: 'evm',
  path: '/evm3',
  extra:
    '    health: { intervalMs: 60000, timeoutMs: 300, maxLag: 3, failAfter: 2 }\n    breaker: { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 150, rollingWindowMs: 10000 }\n    attemptTimeoutMs: 300',
  nodes: [
    { name: 'e-full-1', role: 'full' },
    { name: 'e-full-2', role: 'full' },
    { name: 'e-full-3', role: 'full' },
    { name: 'e-archive-1', role: 'archive' },
  ],
};

describe('node pools', function () {
  this.timeout(30_000);
  let stack: Stack;
  let h: Record<string, string>;

  before(async () => {
    stack = await startStack({
      chains: [
        EVM3,
        {
          name: 'brk',
          plugin: 'evm',
          path: '/brk',
          extra: '    breaker: { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 150, rollingWindowMs: 10000 }',
          nodes: [
            { name: 'b-full-1', role: 'full' },
            { name: 'b-full-2', role: 'full' },
          ],
        },
        {
          name: 'weighted',
          plugin: 'evm',
          path: '/weighted',
          extra: '    strategy: weighted',
          nodes: [
            { name: 'w-full-1', role: 'full', weight: 3 },
            { name: 'w-full-2', role: 'full', weight: 1 },
          ],
        },
        {
          name: 'prio',
          plugin: 'evm',
          path: '/prio',
          extra: '    strategy: priority',
          nodes: [
            { name: 'p-primary', role: 'full', priority: 0 },
            { name: 'p-backup', role: 'full', priority: 1 },
          ],
        },
        {
          name: 'hub-rpc',
          plugin: 'sdk-rpc',
          path: '/hub/rpc',
          network: 'hub',
          nodes: [
            { name: 'h-rpc-full', role: 'full' },
            { name: 'h-rpc-archive', role: 'archive' },
          ],
        },
        {
          name: 'hub-rest',
          plugin: 'sdk-rest',
          path: '/hub/rest',
          network: 'hub',
          nodes: [
            { name: 'h-rest-full', role: 'full' },
            { name: 'h-rest-archive', role: 'archive' },
          ],
        },
      ],
      devnet: { fullRetention: 16, startHeight: 200 },
    });
    h = { apikey: stack.key };
  });
  after(() => stack.close());

  afterEach(async () => {
    for (const n of stack.devnet.nodes.values()) await n.clearFaults();
    for (const rt of stack.gateway.runtimes()) {
      await rt.prober.probeAll();
      await rt.prober.probeAll();
      for (const n of rt.pool.nodes) n.breaker.close();
    }
  });

  const call = (path: string, method: string, params: unknown[] = [], headers = h) =>
    rpc(stack.url(path), { jsonrpc: '2.0', id: 1, method, params }, headers);

  it('takes a dead node out after its probes fail and back after recovery', async () => {
    const rt = runtime(stack, 'evm3');
    await stack.devnet.node('e-full-1').setFaults({ down: true });
    await rt.prober.probeAll();
    await rt.prober.probeAll();
    expect(rt.pool.nodes.find((n) => n.name === 'e-full-1')?.inRotation).to.equal(false);
    clear(stack);
    for (let i = 0; i < 12; i++) expect((await call('/evm3', 'eth_gasPrice')).status).to.equal(200);
    expect(hits(stack, 'e-full-1', 'eth_gasPrice')).to.equal(0);
    expect(hits(stack, 'e-full-2', 'eth_gasPrice') + hits(stack, 'e-full-3', 'eth_gasPrice')).to.equal(12);

    const health = (await get(stack.admin('/health/chains'))).json as {
      chains: Array<{ chain: string; nodes: Array<{ name: string; inRotation: boolean }> }>;
    };
    const node = health.chains.find((c) => c.chain === 'evm3')?.nodes.find((n) => n.name === 'e-full-1');
    expect(node?.inRotation).to.equal(false);

    await stack.devnet.node('e-full-1').clearFaults();
    await rt.prober.probeAll();
    expect(rt.pool.nodes.find((n) => n.name === 'e-full-1')?.inRotation).to.equal(true);
    clear(stack);
    for (let i = 0; i < 9; i++) await call('/evm3', 'eth_gasPrice');
    expect(hits(stack, 'e-full-1', 'eth_gasPrice')).to.equal(3);
    const metrics = (await get(stack.admin('/metrics'))).text;
    expect(metrics).to.match(/noderouter_node_transitions_total\{chain="evm3",node="e-full-1",to="out"\} 1/);
    expect(metrics).to.match(/noderouter_node_transitions_total\{chain="evm3",node="e-full-1",to="in"\} 1/);
  });

  it('splits traffic by weight', async () => {
    clear(stack);
    for (let i = 0; i < 200; i++) await call('/weighted', 'eth_gasPrice');
    const a = hits(stack, 'w-full-1', 'eth_gasPrice');
    const b = hits(stack, 'w-full-2', 'eth_gasPrice');
    expect(a + b).to.equal(200);
    expect(a / 200).to.be.within(0.7, 0.8);
  });

  it('sends traffic to backups only when every primary is out', async () => {
    clear(stack);
    for (let i = 0; i < 6; i++) await call('/prio', 'eth_gasPrice');
    expect(hits(stack, 'p-backup', 'eth_gasPrice')).to.equal(0);
    await stack.devnet.node('p-primary').setFaults({ down: true });
    const rt = runtime(stack, 'prio');
    await rt.prober.probeAll();
    await rt.prober.probeAll();
    clear(stack);
    for (let i = 0; i < 6; i++) expect((await call('/prio', 'eth_gasPrice')).status).to.equal(200);
    expect(hits(stack, 'p-backup', 'eth_gasPrice')).to.equal(6);
  });

  it('excludes a lagging node and readmits it when it catches up', async () => {
    const rt = runtime(stack, 'evm3');
    await stack.devnet.node('e-full-2').setFaults({ stalled: true });
    stack.devnet.chains.get('evm3')?.advance(5);
    await rt.prober.probeAll();
    const lagging = rt.pool.nodes.find((n) => n.name === 'e-full-2');
    expect(lagging?.lag).to.be.greaterThan(3);
    expect(lagging?.inRotation).to.equal(false);
    clear(stack);
    for (let i = 0; i < 6; i++) await call('/evm3', 'eth_gasPrice');
    expect(hits(stack, 'e-full-2', 'eth_gasPrice')).to.equal(0);
    await stack.devnet.node('e-full-2').clearFaults();
    await rt.prober.probeAll();
    expect(lagging?.inRotation).to.equal(true);
    expect((await get(stack.admin('/metrics'))).text).to.match(/noderouter_node_lag_blocks\{chain="evm3",node="e-full-2"\} 0/);
  });

  it('opens a breaker on failures, half-opens after the reset time, closes on success', async () => {
    const rt = runtime(stack, 'brk');
    const node = rt.pool.nodes.find((n) => n.name === 'b-full-2');
    await stack.devnet.node('b-full-2').setFaults({ status: 502 });
    for (let i = 0; i < 8; i++) expect((await call('/brk', 'eth_gasPrice')).status).to.equal(200);
    expect(node?.breakerState).to.equal('open');
    expect((await get(stack.admin('/metrics'))).text).to.match(/noderouter_breaker_state\{chain="brk",node="b-full-2"\} 2/);
    const health = (await get(stack.admin('/health/chains'))).json as {
      chains: Array<{ chain: string; nodes: Array<{ name: string; breaker: string }> }>;
    };
    expect(health.chains.find((c) => c.chain === 'brk')?.nodes.find((n) => n.name === 'b-full-2')?.breaker).to.equal('open');
    clear(stack);
    for (let i = 0; i < 6; i++) await call('/brk', 'eth_gasPrice');
    expect(hits(stack, 'b-full-2', 'eth_gasPrice')).to.equal(0);
    await stack.devnet.node('b-full-2').clearFaults();
    // resetTimeoutMs is 150: the breaker lets a trial through once it has passed.
    await until(() => node?.breakerState === 'half-open', { what: 'the breaker lets a trial through' });
    for (let i = 0; i < 4; i++) await call('/brk', 'eth_gasPrice');
    expect(node?.breakerState).to.equal('closed');
    expect(hits(stack, 'b-full-2', 'eth_gasPrice')).to.be.greaterThan(0);
  });

  it('does not open a breaker for the chain’s own errors, nor retry them', async () => {
    const rt = runtime(stack, 'evm3');
    clear(stack);
    for (let i = 0; i < 10; i++) {
      const res = await call('/evm3', 'eth_call', [{ to: ADDR, data: '0xdeadbeef' }, 'latest']);
      expect(res.status).to.equal(200);
      expect((res.json as { error: { code: number; message: string } }).error.message).to.contain('execution reverted');
    }
    const total = ['e-full-1', 'e-full-2', 'e-full-3', 'e-archive-1'].reduce((s, n) => s + hits(stack, n, '0xdeadbeef'), 0);
    expect(total).to.equal(10);
    expect(rt.pool.nodes.every((n) => n.breakerState === 'closed')).to.equal(true);
  });

  it('sends archive-only calls to archive nodes and ordinary calls to full nodes', async () => {
    clear(stack);
    for (let i = 0; i < 4; i++) await call('/evm3', 'eth_getBalance', [ADDR, 'earliest']);
    for (let i = 0; i < 4; i++) await call('/evm3', 'eth_getBalance', [ADDR, '0x5']);
    for (let i = 0; i < 6; i++) await call('/evm3', 'eth_getBalance', [ADDR, 'latest']);
    expect(hits(stack, 'e-archive-1', 'getBalance')).to.equal(8);
    const full = ['e-full-1', 'e-full-2', 'e-full-3'].reduce((s, n) => s + hits(stack, n, 'getBalance'), 0);
    expect(full).to.equal(6);
  });

  it('retries a pruned-state answer from a full node on an archive node', async () => {
    const block = await rpc(stack.devnet.node('e-archive-1').url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_getBlockByNumber',
      params: ['0x5', false],
    });
    const hash = (block.json as { result: { hash: string } }).result.hash;
    clear(stack);
    const res = await call('/evm3', 'eth_getBalance', [ADDR, { blockHash: hash }]);
    expect(res.status).to.equal(200);
    expect((res.json as { result: string }).result).to.match(/^0x/);
    const full = ['e-full-1', 'e-full-2', 'e-full-3'].reduce((s, n) => s + hits(stack, n, hash), 0);
    expect(full).to.equal(1);
    expect(hits(stack, 'e-archive-1', hash)).to.equal(1);
    expect((await get(stack.admin('/metrics'))).text).to.match(/noderouter_retries_total\{chain="evm3",reason="pruned"\} [1-9]/);
  });

  it('routes SDK heights below the full nodes’ retention to the archive node', async () => {
    await runtime(stack, 'hub-rpc').prober.probeAll();
    clear(stack);
    const old = await get(stack.url('/hub/rpc/block?height=3'), h);
    expect(old.status).to.equal(200);
    expect(hits(stack, 'h-rpc-archive', 'block')).to.equal(1);
    expect(hits(stack, 'h-rpc-full', 'block')).to.equal(0);
    const head = stack.devnet.chains.get('hub')?.height() as number;
    const recent = await get(stack.url(`/hub/rpc/block?height=${head - 1}`), h);
    expect(recent.status).to.equal(200);
    expect(hits(stack, 'h-rpc-full', 'block')).to.equal(1);

    clear(stack);
    const rest = await get(stack.url('/hub/rest/cosmos/bank/v1beta1/balances/cosmos1abc'), { ...h, 'x-cosmos-block-height': '3' });
    expect(rest.status).to.equal(200);
    expect(hits(stack, 'h-rest-archive', 'balances')).to.equal(1);
    expect(hits(stack, 'h-rest-full', 'balances')).to.equal(0);
  });

  it('refuses archive calls to a key without archive access, before any node', async () => {
    const free = await stack.createKey('free');
    clear(stack);
    const res = await call('/evm3', 'eth_getBalance', [ADDR, 'earliest'], { apikey: free.value });
    expect(res.status).to.equal(403);
    expect((res.json as { error: { code: number } }).error.code).to.equal(-32004);
    expect(hits(stack, 'e-archive-1', 'getBalance')).to.equal(0);
    expect((await call('/evm3', 'eth_getBalance', [ADDR, 'latest'], { apikey: free.value })).status).to.equal(200);
  });

  it('answers 503 with Retry-After at once when every node is out', async () => {
    const rt = runtime(stack, 'prio');
    for (const n of ['p-primary', 'p-backup']) await stack.devnet.node(n).setFaults({ down: true });
    await rt.prober.probeAll();
    await rt.prober.probeAll();
    const res = await call('/prio', 'eth_gasPrice');
    expect(res.status).to.equal(503);
    expect(res.headers.get('retry-after')).to.equal('1');
    expect((res.json as { error: { code: number } }).error.code).to.equal(-32603);
    const ready = await get(stack.admin('/health/ready'));
    expect(ready.status).to.equal(503);
    expect((ready.json as { chainsWithoutNodes: string[] }).chainsWithoutNodes).to.include('prio');
    // A probe that asks only whether this instance serves some chain, or serves at all.
    for (const chains of ['any', 'none']) {
      const probe = await get(stack.admin(`/health/ready?chains=${chains}`));
      expect(probe.status, chains).to.equal(200);
      expect(probe.json).to.deep.include({
        status: 'ready',
        chainsWithoutNodes: (ready.json as { chainsWithoutNodes: string[] }).chainsWithoutNodes,
      });
    }
    const bad = await get(stack.admin('/health/ready?chains=some'));
    expect(bad.status).to.equal(400);
    expect(bad.json).to.deep.equal({ error: { code: 'INVALID_INPUT', message: 'chains must be one of all, any, none', field: 'chains' } });
  });

  it('answers 504 when every node tried timed out, and 502 when they failed', async () => {
    for (const n of ['e-full-1', 'e-full-2', 'e-full-3', 'e-archive-1']) await stack.devnet.node(n).setFaults({ hang: true });
    const slow = await call('/evm3', 'eth_gasPrice');
    expect(slow.status).to.equal(504);
    for (const n of ['e-full-1', 'e-full-2', 'e-full-3', 'e-archive-1']) await stack.devnet.node(n).setFaults({ html: true });
    const bad = await call('/evm3', 'eth_gasPrice');
    expect(bad.status).to.equal(502);
    expect(bad.text).to.not.contain('<html');
  });

  it('counts a call once in usage however many nodes tried it', async () => {
    const { value, id } = await stack.createKey('growth');
    await stack.devnet.node('e-full-1').setFaults({ status: 503 });
    await stack.devnet.node('e-full-2').setFaults({ html: true });
    for (let i = 0; i < 3; i++) expect((await call('/evm3', 'eth_gasPrice', [], { apikey: value })).status).to.equal(200);
    const rows = await stack.gateway.services.bundle.limiter.usage(id);
    expect(rows.map((r) => [r.chain, r.calls, r.errors])).to.deep.equal([['evm3', 3, 0]]);
    const metrics = (await get(stack.admin('/metrics'))).text;
    expect(metrics).to.match(/noderouter_retries_total\{chain="evm3",reason="failure"\} [1-9]/);
  });

  it('loses no client request when one of three nodes dies under steady traffic', async () => {
    let failures = 0;
    let done = 0;
    const worker = async (): Promise<void> => {
      for (let i = 0; i < 40; i++) {
        const res = await call('/evm3', 'eth_blockNumber');
        if (res.status !== 200 || (res.json as { result?: string }).result === undefined) failures++;
        done++;
      }
    };
    const workers = [worker(), worker(), worker(), worker()];
    await until(() => done >= 40, { what: 'traffic is flowing' });
    await stack.devnet.node('e-full-2').setFaults({ down: true });
    await Promise.all(workers);
    expect(done).to.equal(160);
    expect(failures).to.equal(0);
  });
});
