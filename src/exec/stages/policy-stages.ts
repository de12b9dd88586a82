// The policy stages a call may take instead of going to one node with the others: node
// state kept on its node (filters), a submit broadcast to every full node, a call cut
// into parts that fit (getLogs ranges), a read of a submit sent first to the nodes that
// accepted it, and agreement across nodes. Each chain's list is composed once, when its
// runtime is built, from what its plugin and config enable: a chain whose plugin has no
// node state or splitting, or whose config has no consensus, never enters those stages.
// The first stage that takes a call answers it; each gives the call a node-call budget
// of its own (node-budget.ts), as its work spans several forwards.

import type { Call, ChainHandler } from '../../plugin/contract.js';
import type { CallResult } from '../attempts/attempts.js';
import type { CallRecord } from '../call-record.js';
import type { ChainConsensus } from '../policies/consensus.js';
import { NodeWork } from '../policies/node-budget.js';
import { broadcastCall, splitCall, stateCall, type PolicyContext } from '../policies/policies.js';

export interface PolicyStage {
  /** What the stage is (for the architecture docs and tests). */
  readonly name: string;
  /** The call's answer by this policy; undefined when the call is not one it takes. */
  take<C extends Call, A>(ctx: PolicyContext<C, A>, rec: CallRecord<C, A>): Promise<CallResult<A>> | undefined;
}

/** What one chain's calls go through besides the stages every chain has. */
export interface ChainStages {
  /** In order: the first that takes a call answers it. */
  readonly policies: readonly PolicyStage[];
  /** An answer a node refused as too large is asked again in halves (the plugin cuts calls). */
  readonly halves: boolean;
}

/** The context of one call whose node work spans several forwards: each draws from its budget. */
export function withWork<C extends Call, A>(ctx: PolicyContext<C, A>, work: NodeWork): PolicyContext<C, A> {
  return {
    ...ctx,
    work,
    forward: (calls, routings, extra) => ctx.forward(calls, routings, extra === undefined ? { work } : { ...extra, work }),
  };
}

/** The call's budget, kept on its record (its node calls and what they cost are read from it after). */
function tracked<C extends Call, A>(ctx: PolicyContext<C, A>, rec: CallRecord<C, A>, work: NodeWork): PolicyContext<C, A> {
  rec.work = work;
  return withWork(ctx, work);
}

const STATE: PolicyStage = {
  name: 'state',
  take(ctx, rec) {
    if (rec.routing.state === undefined || ctx.exchange.state === undefined) return undefined;
    return stateCall(tracked(ctx, rec, new NodeWork(ctx.principal.tier.nodeCalls, rec.routing.cost)), rec.call, rec.routing);
  },
};

const BROADCAST: PolicyStage = {
  name: 'broadcast',
  take(ctx, rec) {
    if (rec.routing.broadcast !== true) return undefined;
    const { nodeCalls, chargeFanout } = ctx.principal.tier;
    return broadcastCall(tracked(ctx, rec, new NodeWork(nodeCalls, rec.routing.cost, { perNode: chargeFanout })), rec.call, rec.routing);
  },
};

const SPLIT: PolicyStage = {
  name: 'split',
  take<C extends Call, A>(ctx: PolicyContext<C, A>, rec: CallRecord<C, A>): Promise<CallResult<A>> | undefined {
    if (rec.routing.split !== true || ctx.exchange.split === undefined) return undefined;
    // The whole call is sent only when it cannot be cut (split() says): its parts are what it costs.
    const c = tracked(ctx, rec, new NodeWork(ctx.principal.tier.nodeCalls, rec.routing.cost, { owed: 0 }));
    const parts = ctx.exchange.split(rec.call, 'fit');
    if (parts !== undefined) return splitCall(c, rec.routing, parts, 'limit');
    if (c.work !== undefined) c.work.owed = c.work.paid;
    return c.forward([rec.call], [rec.routing]).then((r) => r[0] as CallResult<A>);
  },
};

const AFTER_SUBMIT: PolicyStage = {
  name: 'after-submit',
  take<C extends Call, A>(ctx: PolicyContext<C, A>, rec: CallRecord<C, A>): Promise<CallResult<A>> | undefined {
    if (rec.routing.after === undefined) return undefined;
    const prefer = ctx.chain.accepted.nodes(rec.routing.after);
    const c = tracked(ctx, rec, new NodeWork(ctx.principal.tier.nodeCalls, rec.routing.cost));
    return c.forward([rec.call], [rec.routing], prefer === undefined ? {} : { prefer }).then((r) => r[0] as CallResult<A>);
  },
};

function agreementStage(consensus: ChainConsensus): PolicyStage {
  return {
    name: 'consensus',
    take(ctx, rec) {
      if (ctx.exchange.agreeable === undefined) return undefined;
      const agreement = consensus.plan(rec.call, rec.routing);
      if (agreement === undefined) return undefined;
      const { nodeCalls, chargeFanout } = ctx.principal.tier;
      return consensus.run(tracked(ctx, rec, new NodeWork(nodeCalls, rec.routing.cost, { perNode: chargeFanout })), agreement, rec.routing);
    },
  };
}

/** The chain's stages, from its plugin's codecs and its consensus (undefined when off). */
export function composeStages(handler: ChainHandler, consensus: ChainConsensus | undefined): ChainStages {
  const codec = handler.jsonrpc;
  const splits = codec?.split !== undefined;
  const policies: PolicyStage[] = [];
  if (codec?.state !== undefined) policies.push(STATE);
  policies.push(BROADCAST);
  if (splits) policies.push(SPLIT);
  policies.push(AFTER_SUBMIT);
  if (consensus !== undefined) policies.push(agreementStage(consensus));
  return { policies, halves: splits };
}
