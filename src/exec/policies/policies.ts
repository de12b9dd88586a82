// The per-call policies a plugin's Routing asks for, run on top of the attempt loop:
// state kept on the node that holds it (filters), submits sent once to every full node
// with the first acceptance answered, calls cut into parts and their answers joined
// (getLogs ranges), and head reads held at the served head. One place, for every family
// and transport; the call path decides which calls take which policy. What a call's
// parts and broadcast cost in node calls comes out of its budget (node-budget.ts).

import { isGatewayError } from '../../errors.js';
import type { ChainConfig } from '../../config/types.js';
import type { Call, ChainHandler, Routing } from '../../plugin/contract.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { NodePool } from '../../pool/pool.js';
import type { Metrics } from '../../ops/metrics/metrics.js';
import type { Principal } from '../principal.js';
import type { CallResult, ForwardOptions } from '../attempts/attempts.js';
import type { Exchange, Parts, Sent } from '../exchanges/exchange.js';
import { isOverBudget, overBudget, type NodeWork } from './node-budget.js';
import type { Accepted, NodeStates } from './node-state.js';

/** Parts of one split call sent at once, at most. */
const SPLIT_PARALLEL = 4;
/** Halvings of an oversize call, at most (2^8 parts). */
const SPLIT_DEPTH = 8;

/** What the policies use of a chain endpoint (its runtime has it all). */
export interface PolicyChain {
  readonly name: string;
  readonly config: Pick<ChainConfig, 'submit'>;
  readonly handler: Pick<ChainHandler, 'classify'>;
  readonly pool: NodePool;
  readonly states: NodeStates;
  readonly accepted: Accepted;
}

export interface PolicyContext<C extends Call, A> {
  readonly chain: PolicyChain;
  readonly principal: Principal;
  readonly exchange: Exchange<C, A>;
  readonly metrics: Metrics;
  /** May the caller read archive state (the key's own setting, else its tier's)? */
  readonly archiveAllowed: boolean;
  /** The node calls of the one client call this context is for, when they span several forwards. */
  readonly work?: NodeWork;
  /** Forward calls through the attempt loop, with these options added to the request's. */
  forward(calls: readonly C[], routings: readonly Routing[], extra?: Partial<ForwardOptions>): Promise<Array<CallResult<A>>>;
}

/** An answer relayed as the chain's, never cached (it is this caller's: a state id, a joined or shared answer). */
function own<A>(r: Sent<A>, answer: A | undefined = r.answer): Sent<A> {
  return { answer, verdict: r.verdict, sure: false };
}

/** A create makes state on the node that answers; a use goes only to that node, under the node's id. */
export async function stateCall<C extends Call, A>(ctx: PolicyContext<C, A>, call: C, routing: Routing): Promise<CallResult<A>> {
  const { chain, principal, exchange } = ctx;
  const ids = exchange.state;
  const st = routing.state;
  if (ids === undefined || st === undefined) return (await ctx.forward([call], [routing]))[0] as CallResult<A>;
  const keyId = principal.record.id;
  if (st.role === 'create') {
    const by: PoolNode[] = [];
    const r = (await ctx.forward([call], [routing], { answeredBy: by }))[0] as CallResult<A>;
    if (isGatewayError(r) || r.verdict !== 'ok' || r.answer === undefined) return r;
    const nodeId = ids.created(r.answer);
    const node = by[0];
    if (nodeId === undefined || node === undefined) return r;
    return own(r, ids.withId(r.answer, chain.states.add(node, nodeId, keyId)));
  }
  const miss = (reason: 'unknown' | 'node_gone' | 'expired'): void => ctx.metrics.stateMisses.inc({ chain: chain.name, reason });
  const held = chain.states.get(st.id, keyId);
  if (held === undefined) {
    miss('unknown');
    return { answer: ids.notFound(call), verdict: 'chain_error', sure: false };
  }
  // The node left rotation or the pool, or is drained: its state is out of reach, and clients make it anew.
  if (!held.node.inRotation || held.node.hold === 'draining' || !chain.pool.nodes.includes(held.node)) {
    chain.states.forget(st.id);
    miss('node_gone');
    return { answer: ids.notFound(call), verdict: 'chain_error', sure: false };
  }
  const r = (await ctx.forward([ids.use(call, held.nodeId)], [routing], { only: held.node }))[0] as CallResult<A>;
  if (isGatewayError(r)) {
    if (r.code !== 'NO_HEALTHY_NODE') return r;
    chain.states.forget(st.id);
    miss('node_gone');
    return { answer: ids.notFound(call), verdict: 'chain_error', sure: false };
  }
  if (r.answer !== undefined && ids.gone(r.answer)) {
    chain.states.forget(st.id);
    miss('expired');
  } else if (st.release === true && r.verdict === 'ok') chain.states.forget(st.id);
  return own(r);
}

/**
 * A submit to every available full node at once (chain `submit: all`): the first node to
 * accept it answers the client, and only that answer is relayed; an answer that the node
 * has it already counts as accepted. No node is asked twice.
 */
export function broadcastCall<C extends Call, A>(ctx: PolicyContext<C, A>, call: C, routing: Routing): Promise<CallResult<A>> {
  const { chain, exchange, metrics } = ctx;
  const nodes = chain.pool.fullNodes();
  // As many nodes as the call's budget allows, no more.
  if (ctx.work !== undefined && nodes.length > ctx.work.left) nodes.length = Math.max(1, ctx.work.left);
  if (chain.config.submit === 'one' || nodes.length <= 1) return acceptedBy(ctx, call, routing, []);
  return new Promise((resolve) => {
    const accepting: PoolNode[] = [];
    const results: Array<CallResult<A>> = [];
    let answered = false;
    let left = nodes.length;
    for (const node of nodes) {
      void ctx.forward([call], [routing], { only: node }).then(([r]) => {
        const result = r as CallResult<A>;
        const verdict = isGatewayError(result)
          ? 'failed'
          : result.verdict === 'ok'
            ? 'accepted'
            : exchange.alreadyAccepted?.(call, result) === true
              ? 'known'
              : 'refused';
        metrics.broadcasts.inc({ chain: chain.name, node: node.name, result: verdict });
        results.push(result);
        if (verdict === 'accepted' || verdict === 'known') {
          accepting.push(node);
          // The first acceptance with a result (not "already known") is the answer.
          if (!answered && verdict === 'accepted') {
            answered = true;
            remember(ctx, result, accepting);
            resolve(own(result as Sent<A>));
          }
        }
        if (--left > 0) return;
        remember(
          ctx,
          results.find((x) => !isGatewayError(x) && x.verdict === 'ok'),
          accepting,
        );
        if (answered) return;
        // Nobody took it anew: the chain's answer (already known, nonce too low …) or the table error.
        const chainAnswer = results.find((x) => !isGatewayError(x));
        resolve(chainAnswer !== undefined && !isGatewayError(chainAnswer) ? own(chainAnswer) : (results[0] as CallResult<A>));
      });
    }
  });
}

/** One node takes the submit (`submit: one`, or a pool of one): the loop never sends it twice. */
async function acceptedBy<C extends Call, A>(ctx: PolicyContext<C, A>, call: C, routing: Routing, by: PoolNode[]): Promise<CallResult<A>> {
  const r = (await ctx.forward([call], [routing], { answeredBy: by }))[0] as CallResult<A>;
  if (!isGatewayError(r) && r.verdict === 'ok') remember(ctx, r, by);
  return r;
}

/** Reads of a submit right after it go first to the nodes that accepted it. */
function remember<C extends Call, A>(ctx: PolicyContext<C, A>, r: CallResult<A> | undefined, nodes: PoolNode[]): void {
  if (r === undefined || isGatewayError(r) || r.answer === undefined) return;
  const id = ctx.exchange.resultId?.(r.answer);
  if (id !== undefined) ctx.chain.accepted.add(id, nodes);
}

/**
 * A call made as parts (a getLogs range cut to fit, or in halves after an oversize
 * answer, `refused`), their answers joined. Each part sent is charged like a call of its
 * own; parts that cannot all be sent within the call's node calls are not begun, and a
 * call stopped at its budget is answered with how the client should cut it (the plugin's
 * words for the deepest cut made, which knows most).
 */
export async function splitCall<C extends Call, A>(
  ctx: PolicyContext<C, A>,
  routing: Routing,
  parts: Parts<C, A>,
  reason: 'limit' | 'oversize',
  depth = 0,
  refused?: A,
): Promise<CallResult<A>> {
  const { work } = ctx;
  if (work !== undefined && depth >= work.depth) {
    work.depth = depth;
    work.advice = parts.tooLarge === undefined ? undefined : () => parts.tooLarge?.(refused);
  }
  if (work !== undefined && parts.calls.length > work.left) return overBudget(work.budget, work.advice?.());
  ctx.metrics.splits.inc({ chain: ctx.chain.name, reason });
  const answers = new Array<CallResult<A>>(parts.calls.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < parts.calls.length; i = next++) {
      const part = parts.calls[i] as C;
      let r = (await ctx.forward([part], [routing]))[0] as CallResult<A>;
      if (work !== undefined && !unsent(r)) work.owed += ctx.chain.handler.classify(part, ctx.chain.pool.view).cost;
      if (!isGatewayError(r) && r.verdict === 'oversize' && depth < SPLIT_DEPTH) {
        const halves = ctx.exchange.split?.(part, 'halves');
        if (halves !== undefined) r = await splitCall(ctx, routing, halves, 'oversize', depth + 1, r.answer);
      }
      answers[i] = r;
    }
  };
  await Promise.all(Array.from({ length: Math.min(SPLIT_PARALLEL, parts.calls.length) }, worker));
  if (work !== undefined && answers.some(isOverBudget)) return overBudget(work.budget, work.advice?.());
  const good: A[] = [];
  let sure = true;
  for (const r of answers) {
    // A part that failed, or that the chain refused, is the call's answer.
    if (isGatewayError(r) || r.verdict !== 'ok' || r.answer === undefined) return r;
    good.push(r.answer);
    sure &&= r.sure;
  }
  return { answer: parts.join(good), verdict: 'ok', sure };
}

/** A part the attempt loop gave up on before any node had it. */
function unsent<A>(r: CallResult<A>): boolean {
  return isGatewayError(r) && (r.code === 'NODE_BUDGET_EXCEEDED' || r.code === 'NO_HEALTHY_NODE');
}
