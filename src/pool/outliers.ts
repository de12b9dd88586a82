// Outlier ejection: a node that times out (or is outrun by a hedge sent after it) on
// `consecutive` calls in a row, each within `windowMs` of the last, leaves rotation at
// once rather than after the breaker's window fills or probes fail, as Envoy's outlier
// detection does. Only the node's own slowness counts: the attempt loop's blame
// (src/exec/attempts/blame.ts) tells this module of a timeout only once another node answered the
// same calls, so an expensive call that no node answers in time ejects nobody; an answer
// ends the run. The n-th ejection of a node lasts `baseMs` × n (at most `maxMs`); each
// `maxMs` it then spends without an ejection takes one off n. When it is over, the
// prober brings the node back like any other (a probe that passes, caught up). At most
// `maxPercent` of the pool's nodes are ejected at once, and never the last node of a
// role in rotation: a pool that is slow as a whole is not emptied by its own outliers.

import type { EjectionConfig } from '../config/types.js';
import type { PoolNode } from './pool-node.js';

/** What ejection needs of its pool. */
export interface EjectionPool {
  readonly nodes: readonly PoolNode[];
  readonly config: { readonly ejection: EjectionConfig };
  now(): number;
  /** Take the node out of rotation until `until` for `reason` (told once, through the rotation event). */
  eject(node: PoolNode, until: number, reason: string): void;
}

/** How every ejection's reason begins. */
export const EJECTED = 'ejected: ';

/** How a node's ejection reads in /health/chains and the rotation log. */
export function ejectionReason(consecutive: number, count: number, forMs: number): string {
  return `${EJECTED}${consecutive} consecutive timeouts (ejection ${count}, for ${forMs} ms)`;
}

/** The node answered: its run of timeouts is over. */
export function answered(node: PoolNode): void {
  node.slowInRow = 0;
}

/** The node timed out, or a hedge outran it, on calls another node answered. */
export function timedOut(pool: EjectionPool, node: PoolNode): void {
  const { consecutive, windowMs } = pool.config.ejection;
  if (consecutive === 0) return;
  const now = pool.now();
  node.slowInRow = now - node.lastSlowAt > windowMs ? 1 : node.slowInRow + 1;
  node.lastSlowAt = now;
  if (node.slowInRow < consecutive || !node.inRotation || !mayEject(pool, node, now)) return;
  eject(pool, node, now);
}

function eject(pool: EjectionPool, node: PoolNode, now: number): void {
  const { consecutive, baseMs, maxMs } = pool.config.ejection;
  // Time back in rotation without an ejection forgets earlier ones, one per maxMs.
  if (node.ejections > 0 && node.ejectedUntil > 0) {
    node.ejections = Math.max(0, node.ejections - Math.floor(Math.max(0, now - node.ejectedUntil) / maxMs));
  }
  node.ejections++;
  node.slowInRow = 0;
  const forMs = Math.min(maxMs, baseMs * node.ejections);
  node.ejectedUntil = now + forMs;
  pool.eject(node, node.ejectedUntil, ejectionReason(consecutive, node.ejections, forMs));
}

/** Within `maxPercent` of the pool, and another node of its role stays in rotation. */
function mayEject(pool: EjectionPool, node: PoolNode, now: number): boolean {
  const { maxPercent } = pool.config.ejection;
  let ejected = 0;
  let sameRoleLeft = 0;
  for (const n of pool.nodes) {
    if (n.ejectedUntil > now && !n.inRotation) ejected++;
    else if (n !== node && n.role === node.role && n.healthy(now)) sameRoleLeft++;
  }
  return sameRoleLeft > 0 && ejected + 1 <= Math.floor((pool.nodes.length * maxPercent) / 100);
}
