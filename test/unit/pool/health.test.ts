// Health probing (src/pool/health.ts) of real devnet EVM nodes through the evm plugin's
// probe, one round at a time while the chain's head is moved by hand: a node leaves
// rotation after failAfter failed probes in a row or when it lags more than maxLag
// blocks, and comes back once it answers and has caught up; probes never pile up on a
// node that has not answered yet.

import { expect } from 'chai';
import evm from '../../../plugins/evm/index.js';
import { startDevnet, type Devnet } from '../../../src/devnet/index.js';
import { DEFAULT_JSONRPC_LIMITS } from '../../../src/jsonrpc/envelope.js';
import { HealthProber } from '../../../src/pool/health.js';
import type { PoolNode } from '../../../src/pool/pool-node.js';
import { NodePool } from '../../../src/pool/pool.js';
import { chainConfig } from '../../support/chain.js';
import { until } from '../../support/until.js';

describe('health probing (src/pool/health.ts)', () => {
  let devnet: Devnet;
  let pool: NodePool;
  let prober: HealthProber;
  let a: PoolNode;
  let b: PoolNode;
  const rotations: string[] = [];
  const probes: string[] = [];
  let rounds = 0;
  /** The pool's clock: heads are judged against the time blocks take (head-check.ts). */
  let clock = 0;

  beforeEach(async () => {
    rotations.length = 0;
    probes.length = 0;
    rounds = 0;
    devnet = await startDevnet(
      [
        { network: 'h', family: 'evm', name: 'a', role: 'full' },
        { network: 'h', family: 'evm', name: 'b', role: 'full' },
      ],
      { blockTimeMs: 0, noControl: true, startHeight: 1_000 },
    );
    const config = await chainConfig(
      [
        { name: 'a', url: devnet.node('a').url, role: 'full' },
        { name: 'b', url: devnet.node('b').url, role: 'full' },
      ],
      '    health: { maxLag: 2, failAfter: 2, timeoutMs: 2000, intervalMs: 60000 }',
    );
    clock = 1_000_000;
    pool = new NodePool(
      config,
      { rotation: (_p, node, inRotation, reason) => rotations.push(`${node.name} ${inRotation ? 'in' : 'out'}: ${reason}`) },
      undefined,
      undefined,
      () => clock,
    );
    [a, b] = pool.nodes as [PoolNode, PoolNode];
    prober = new HealthProber(pool, evm.create({ chain: 'c', options: {}, limits: DEFAULT_JSONRPC_LIMITS }), {
      probed: (_p, node, ok) => probes.push(`${node.name} ${ok ? 'ok' : 'failed'}`),
      judged: () => rounds++,
    });
  });

  afterEach(async () => {
    prober.stop();
    await pool.close();
    await devnet.close();
  });

  const chain = () => devnet.chains.get('h') as { advance(n: number): void };
  /** Head probes a node received (the rounds also describe each node: src/pool/describe.ts). */
  const probesOf = (name: string) => devnet.node(name).received.filter((r) => r.body.includes('getBlockByNumber'));

  it('reads each node’s head, hash and the chain’s best head', async () => {
    await prober.probeAll();
    expect([a.head, b.head]).to.deep.equal([1_000, 1_000]);
    expect(a.headHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(pool.view.head).to.equal(1_000);
    chain().advance(3);
    await prober.probeAll();
    expect(pool.view.head).to.equal(1_003);
    expect(rounds).to.equal(2);
    expect(rotations).to.deep.equal([]);
  });

  it('takes a node that lags more than maxLag out of rotation, and back once it has caught up', async () => {
    await prober.probeAll();
    await devnet.node('b').setFaults({ stalled: true });
    chain().advance(2);
    await prober.probeAll();
    expect([b.lag, b.inRotation]).to.deep.equal([2, true]);
    chain().advance(1);
    await prober.probeAll();
    expect([b.lag, b.inRotation, b.outReason]).to.deep.equal([3, false, 'lagging 3 blocks']);
    expect(pool.select({ archive: false, cost: 1, label: 'm' }, new Set([a]))).to.equal(undefined);
    await devnet.node('b').clearFaults();
    await prober.probeAll();
    expect([b.lag, b.inRotation]).to.deep.equal([0, true]);
    expect(rotations).to.deep.equal(['b out: lagging 3 blocks', 'b in: recovered']);
  });

  it('takes a node out after failAfter failed probes in a row, keeps it out while it fails, and back when it answers', async () => {
    await prober.probeAll();
    await devnet.node('b').setFaults({ down: true });
    await prober.probeAll();
    expect([b.consecutiveProbeFailures, b.inRotation]).to.deep.equal([1, true]);
    await prober.probeAll();
    expect([b.consecutiveProbeFailures, b.inRotation, b.outReason]).to.deep.equal([2, false, 'probe failed']);
    // A failed probe says nothing of lag: the node stays out for the failures.
    chain().advance(10);
    clock += 10_000;
    await prober.probeAll();
    expect(b.outReason).to.equal('probe failed');
    await devnet.node('b').clearFaults();
    await prober.probeAll();
    expect(b.inRotation).to.equal(true);
    expect(rotations).to.deep.equal(['b out: probe failed', 'b in: recovered']);
    // Its last good head is not the chain's while it fails.
    expect(pool.view.head).to.equal(1_010);
  });

  it('never probes a node again while its last probe is still waiting for an answer', async () => {
    await devnet.node('b').setFaults({ hold: true });
    const first = prober.probeAll();
    // A round started at once probes nobody: both nodes are being probed.
    await prober.probeAll();
    expect(probes).to.deep.equal([]);
    await until(() => probes.length === 1, { what: 'a has answered' });
    await prober.probeAll();
    expect(probes).to.deep.equal(['a ok', 'a ok']);
    expect(probesOf('b')).to.have.length(1);
    await devnet.node('b').clearFaults();
    await first;
    expect(probes).to.deep.equal(['a ok', 'a ok', 'b ok']);
  });

  it('starts with a round at once, and stops', async () => {
    prober.start();
    prober.start();
    prober.stop();
    await until(() => rounds === 1, { what: 'the first round is judged' });
    expect(probesOf('a')).to.have.length(1);
  });
});
