// Whose fault a failed attempt was, so one customer cannot open breakers for everyone.
// A failure the request itself may have caused (a timeout on an expensive call, an
// answer over the size cap, a reset or an unusable answer) is held until the call's
// fate is known: when another node answers the same calls, the held failures were
// their nodes' own and count against their breakers; when no node does, the request
// was to blame and no breaker hears of it at all. A refused connection is always the
// node's, and so is being outrun by a hedge sent later to another node; a 429 or a call
// the gateway gave up on is nobody's. Probes still take nodes
// that stop answering out of rotation. Timeouts found to be the node's own (held ones
// once another node answered, and being outrun) count towards its ejection as an
// outlier (src/pool/outliers.ts); an answer ends its run.

import { CallAborted, NodeFailure, NodeThrottled } from '../../pool/failures.js';
import { answered, timedOut, type EjectionPool } from '../../pool/outliers.js';
import type { PoolNode } from '../../pool/pool-node.js';

/** Could the request, rather than the node, have caused this failure? */
function mayBeTheRequests(err: unknown): boolean {
  return err instanceof NodeFailure && err.reason !== 'connect';
}

interface Held {
  readonly node: PoolNode;
  readonly err: Error;
}

/** A node answered: a success for its breaker, and the end of its run of timeouts. */
export function nodeAnswered(node: PoolNode): void {
  node.settle('ok');
  answered(node);
}

export class Blame {
  /** Held failures of each job (a set of calls going from node to node); made on the first, as most calls have none. */
  private held: Map<object, Held[]> | undefined;

  constructor(private readonly pool: EjectionPool) {}

  /** The node answered the job's calls: a success for it, and the job's held failures were their nodes' own. */
  answered(node: PoolNode, job: object): void {
    nodeAnswered(node);
    const list = this.held?.get(job);
    if (list === undefined) return;
    this.held?.delete(job);
    for (const h of list) {
      h.node.settle(h.err);
      if (h.err instanceof NodeFailure && h.err.reason === 'timeout') timedOut(this.pool, h.node);
    }
  }

  /** An attempt of the job failed on this node. */
  failed(node: PoolNode, job: object, err: unknown): void {
    if (err instanceof NodeThrottled || err instanceof CallAborted) return node.settle(undefined);
    if (!mayBeTheRequests(err)) return node.settle(err as Error);
    const held = (this.held ??= new Map());
    const list = held.get(job);
    if (list === undefined) held.set(job, [{ node, err: err as Error }]);
    else list.push({ node, err: err as Error });
  }

  /** A hedge on another node answered before this node did: a timeout of its own. */
  outran(node: PoolNode): void {
    node.settle(new NodeFailure('timeout', 'outrun by a hedged attempt on another node'));
    timedOut(this.pool, node);
  }

  /** The calls are over: failures still held were the request's doing, counted by no breaker. */
  release(): void {
    if (this.held === undefined) return;
    for (const list of this.held.values()) for (const h of list) h.node.settle(undefined);
    this.held.clear();
  }
}
