// Which probed heads a pool believes. One node's word is not enough to raise the
// pool's head: a head far above the other nodes, or one that jumped further than
// block times allow, is implausible. Such a node leaves rotation and its head counts
// for nothing (not for the others' lag, not for what plugins think is final).
// Pure rules over the pool's nodes; health.ts applies them after each probe round.

import type { PoolNode } from './pool-node.js';

export interface HeadRules {
  readonly maxLag: number;
  readonly minBlockTimeMs: number;
}

/** The pool's head before this round and when it was seen; head undefined when none. */
export interface PreviousHead {
  readonly head: number | undefined;
  readonly at: number;
}

function fresh(n: PoolNode): boolean {
  return n.head !== undefined && n.consecutiveProbeFailures === 0;
}

/** Upper median: with an even count, the higher middle (lenient to a node a little ahead). */
function median(values: number[]): number {
  values.sort((a, b) => a - b);
  return values[values.length >> 1] as number;
}

/** Blocks a chain can add in `ms` at most. */
function blocksIn(ms: number, rules: HeadRules): number {
  return Math.floor(Math.max(0, ms) / rules.minBlockTimeMs);
}

/**
 * Why `n`'s fresh head is implausible, or ''.
 *  - Peers: at least two other nodes in rotation report heads, and this one is more
 *    than maxLag above their median.
 *  - Time: no other node confirms it (reports a head within maxLag of it), and it is
 *    more than maxLag above the pool's previous head (or, without one, the node's own
 *    last believed head) plus the blocks minBlockTimeMs allows since then.
 */
function implausibleReason(n: PoolNode, nodes: readonly PoolNode[], previous: PreviousHead, now: number, rules: HeadRules): string {
  const head = n.head as number;
  const peers: number[] = [];
  let confirmed = false;
  for (const o of nodes) {
    if (o === n || !fresh(o)) continue;
    const h = o.head as number;
    if (o.inRotation) peers.push(h);
    if (o.implausible === '' && h >= head - rules.maxLag) confirmed = true;
  }
  if (peers.length >= 2) {
    const m = median(peers);
    if (head > m + rules.maxLag) return `implausible head ${head}: ${head - m} blocks above the median of the other nodes`;
  }
  if (confirmed) return '';
  const ref = previous.head ?? n.trustedHead;
  const at = previous.head !== undefined ? previous.at : n.trustedAt;
  if (ref === undefined) return '';
  const allowed = ref + rules.maxLag + blocksIn(now - at, rules);
  if (head <= allowed) return '';
  return `implausible head ${head}: ${head - ref} blocks above ${ref} in ${Math.round((now - at) / 1000)}s`;
}

/**
 * Judge every fresh head of a round at once (each against the others as they were
 * before this round): sets `implausible` on each node, and records believed heads.
 */
export function checkHeads(nodes: readonly PoolNode[], previous: PreviousHead, now: number, rules: HeadRules): void {
  const reasons = nodes.map((n) => (fresh(n) ? implausibleReason(n, nodes, previous, now, rules) : n.implausible));
  nodes.forEach((n, i) => {
    n.implausible = reasons[i] as string;
    if (fresh(n) && n.implausible === '') {
      n.trustedHead = n.head;
      n.trustedAt = now;
    }
  });
}
