// The node work one client call (each batch item on its own) may cause, and what it is
// charged for it. A call that becomes many node calls (a getLogs cut into parts, halved
// again when a node refuses a part; an agreement across nodes; a submit to every full
// node; hedges and retries on top) draws them from one budget, the tier's `nodeCalls`:
// the attempt loop asks here before every node call and sends nothing past it. Work the
// customer's call makes beyond one node call is charged after the call, against the
// same limits and usage as admission: each getLogs part like a call of its own span,
// and fan-out (agreement, broadcast) per node asked when the tier's `chargeFanout` says
// so. Retries and hedges are the pool's doing: bounded here, never charged.

import { GatewayError } from '../../errors.js';

/** One client call's node calls against its budget, and the units they are charged. */
export class NodeWork {
  /** Node calls sent (or in flight) for the call. */
  sent: number;
  /** Units the call's work comes to so far (what admission took included, when the whole call was sent). */
  owed: number;
  /** How deep the deepest cut of the call into parts went (-1: none), and how the client should cut it, as that cut's plugin words it. */
  depth = -1;
  advice: (() => string | undefined) | undefined;

  /** Charged its cost per node asked (fan-out the tier charges): what `owed` says does not count. */
  readonly perNode: boolean;

  constructor(
    /** Node calls the call may make, at most. */
    readonly budget: number,
    /** Units admission took for the call. */
    readonly paid: number,
    options: { readonly sent?: number; readonly owed?: number; readonly perNode?: boolean } = {},
  ) {
    this.sent = options.sent ?? 0;
    this.owed = options.owed ?? paid;
    this.perNode = options.perNode ?? false;
  }

  /** Node calls still allowed. */
  get left(): number {
    return Math.max(0, this.budget - this.sent);
  }

  /** Units to charge after the call, beyond what admission took. */
  get extra(): number {
    return Math.max(0, (this.perNode ? this.paid * this.sent : this.owed) - this.paid);
  }
}

/** The error of a call stopped at its budget with nothing left to send; `message` says how to make it smaller when known. */
export function overBudget(budget: number, message?: string): GatewayError {
  return new GatewayError('NODE_BUDGET_EXCEEDED', {
    message: message ?? `This call needs more than ${budget} node calls, the most one call may make on this tier`,
  });
}

export function isOverBudget(r: unknown): r is GatewayError {
  return r instanceof GatewayError && r.code === 'NODE_BUDGET_EXCEEDED';
}
