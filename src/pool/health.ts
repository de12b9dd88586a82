// Probing a pool's nodes on an interval through the plugin's probe: a node that
// fails `failAfter` probes in a row, reports an implausible head (head-check.ts), or
// lags more than `maxLag` behind the best believed head, leaves rotation; it returns
// when a probe succeeds, its head is believed and it has caught up. A node that says
// it is on another chain (describe.ts, asked on a slower cadence) never joins it; one
// the majority disputed (src/exec/policies/consensus.ts) stays out for its cool-down, then
// returns like any other, by the next round's probe, and so does one ejected as an
// outlier (outliers.ts) once its ejection is over.
// One probe per node at a time, each with its own short timeout: probes never pile up.

import type { ChainHandler } from '../plugin/contract.js';
import { Describer, type DescribeEvents } from './describe.js';
import { checkHeads } from './head-check.js';
import type { NodePool, PoolHealth } from './pool.js';
import { EJECTED } from './outliers.js';
import { DISPUTED, type PoolNode } from './pool-node.js';

export interface ProbeEvents extends DescribeEvents {
  probed?(pool: NodePool, node: PoolNode, ok: boolean): void;
  /** A probe read a head block the plugin could check, on a chain with `verify` on. */
  checked?(pool: NodePool, node: PoolNode, result: 'verified' | 'mismatch'): void;
  /** A round is over and every node's rotation is decided. */
  judged?(pool: NodePool): void;
}

export class HealthProber {
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<PoolNode>();
  private round: Promise<void> | undefined;
  private readonly describer: Describer;

  constructor(
    private readonly pool: NodePool,
    private readonly handler: ChainHandler,
    private readonly events: ProbeEvents = {},
  ) {
    this.describer = new Describer(pool, handler, events);
  }

  start(): void {
    if (this.timer !== undefined) return;
    void this.probeAll();
    this.timer = setInterval(() => void this.probeAll(), this.pool.config.health.intervalMs).unref();
  }

  /** One probe round over every node not already being probed, with the descriptions that are due. */
  probeAll(): Promise<void> {
    const probes = this.pool.nodes.filter((n) => !this.inFlight.has(n)).map((n) => this.probe(n));
    this.round = Promise.all([...probes, ...this.describer.due()]).then(() => this.judge());
    return this.round;
  }

  private async probe(node: PoolNode): Promise<void> {
    this.inFlight.add(node);
    try {
      const head = await this.handler.probe(node, this.pool.config.health.timeoutMs);
      if (head.check !== undefined && head.check !== 'unchecked' && this.pool.config.verify !== 'off') {
        this.events.checked?.(this.pool, node, head.check);
        // Under enforce a head block that is not its header's is a failed probe.
        if (head.check === 'mismatch' && this.pool.config.verify === 'enforce') throw new Error('head block failed verification');
      }
      node.head = head.height;
      node.earliest = head.earliest;
      node.headHash = head.hash;
      node.consecutiveProbeFailures = 0;
      this.events.probed?.(this.pool, node, true);
    } catch {
      node.consecutiveProbeFailures++;
      this.events.probed?.(this.pool, node, false);
    } finally {
      this.inFlight.delete(node);
    }
  }

  /** Recompute lag and rotation for every node after a round. */
  private judge(): void {
    const { maxLag, failAfter } = this.pool.config.health;
    this.describer.judge();
    // Another chain's heights say nothing of this one's head, lag or finality.
    for (const node of this.pool.nodes) {
      if (node.wrongChain === '') continue;
      node.head = undefined;
      node.earliest = undefined;
      node.headHash = undefined;
    }
    checkHeads(this.pool.nodes, this.pool.previousHead, this.pool.now(), this.pool.config.health);
    this.pool.refreshView();
    const best = this.pool.view.head;
    const now = this.pool.now();
    for (const node of this.pool.nodes) {
      node.lag = best !== undefined && node.head !== undefined ? Math.max(0, best - node.head) : 0;
      let reason = '';
      const ejected = node.ejectedUntil > now && !node.inRotation;
      // Out still, its ejection over: why it stays out is the probes' to say now.
      const ejectionOver = !node.inRotation && !ejected && node.outReason.startsWith(EJECTED);
      if (node.wrongChain !== '') reason = node.wrongChain;
      else if (node.disputedUntil > now) reason = DISPUTED;
      else if (ejected) reason = node.outReason;
      else if (node.consecutiveProbeFailures >= failAfter) reason = 'probe failed';
      else if (node.consecutiveProbeFailures === 0 && node.implausible !== '') reason = node.implausible;
      else if (node.consecutiveProbeFailures === 0 && node.lag > maxLag) reason = `lagging ${node.lag} blocks`;
      else if (!node.inRotation && node.consecutiveProbeFailures > 0) reason = ejectionOver ? 'probe failed' : node.outReason;
      const inRotation = reason === '';
      if (inRotation !== node.inRotation) {
        node.inRotation = inRotation;
        node.outReason = reason;
        this.pool.events.rotation?.(this.pool, node, inRotation, inRotation ? 'recovered' : reason);
      } else if (ejectionOver) node.outReason = reason;
    }
    this.pool.updateServedHead();
    this.events.judged?.(this.pool);
  }

  /** Health decided by the prober of another process (a cluster's primary): taken as if this round had decided it. */
  adopt(health: PoolHealth): void {
    this.pool.adoptHealth(health);
    this.events.judged?.(this.pool);
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
