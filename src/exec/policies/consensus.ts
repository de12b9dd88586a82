// N-of-M agreement (`chains.<name>.consensus`): a call whose method the chain lists goes
// to `ask` nodes in rotation that can answer it (a `latest` read pinned to the served
// head, so they answer at one height) and is answered as soon as `agree` of them give the
// same answer, in the plugin's terms (its AgreementRule: fields ignored, or numbers where
// the highest wins). Without enough agreeing: the largest group's answer, the table's
// "nodes disagree", or an archive node's answer (`onDisagree`, for keys with archive
// access only). For a key without archive access the nodes asked are full nodes unless
// the plugin placed the call within their history, and a full node's pruned answer
// refuses the call (403) rather than leave another node's vote to answer. Every node outside the
// majority is recorded (metric, the dispute log) and one disputed on more than
// `maxDisputeRate` of its compared calls leaves rotation for `coolDownMs`. The nodes
// asked come out of the call's node-call budget; the call path charges it once, or per
// node asked when the tier's `chargeFanout` says so (node-budget.ts).

import type { ConsensusConfig } from '../../config/types.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { matchesAny } from '../../auth/patterns.js';
import type { Metrics } from '../../ops/metrics/metrics.js';
import type { AgreementCodec, AgreementRule, Call, Routing } from '../../plugin/contract.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { NodePool } from '../../pool/pool.js';
import type { CallResult, ForwardOptions } from '../attempts/attempts.js';
import { answerHash, type DisputeLog, type DisputedNode } from './disputes.js';
import type { Exchange, Sent } from '../exchanges/exchange.js';
import type { NodeWork } from './node-budget.js';
import type { ConsensusOutcome } from '../outcome.js';

/** A call checked by agreement: as it is sent to every node, and how its answers compare. */
export interface Agreement<C extends Call> {
  readonly call: C;
  readonly rule: AgreementRule;
  /** The served head the call was pinned to: nodes below it may answer it too, or say they lack the block. */
  readonly pinnedAt?: number;
}

/** What the policy needs of the request (the call path's policy context fits). */
export interface AgreeContext<C extends Call, A> {
  readonly exchange: Exchange<C, A>;
  readonly metrics: Metrics;
  /** May the caller read archive state? */
  readonly archiveAllowed: boolean;
  /** The call's node calls: no more nodes are asked than it has left. */
  readonly work?: NodeWork;
  forward(calls: readonly C[], routings: readonly Routing[], extra?: Partial<ForwardOptions>): Promise<Array<CallResult<A>>>;
}

/** One node's answer as compared. */
interface Vote<A> {
  readonly node: PoolNode;
  /** Undefined: the node gave no usable answer (failed, or an answer the rule cannot read). */
  readonly key: string | undefined;
  readonly sent: Sent<A> | undefined;
  /** The table error the node's attempt ended with, if it failed. */
  readonly err?: GatewayError;
}

const TOO_FEW = 'nodes disagree: too few nodes gave the same answer';

export class ChainConsensus {
  private readonly matches: (method: string) => boolean;

  constructor(
    readonly chain: string,
    readonly config: ConsensusConfig,
    private readonly codec: AgreementCodec,
    private readonly pool: NodePool,
    private readonly log: DisputeLog,
  ) {
    const patterns = config.methods ?? codec.defaults;
    this.matches = patterns.length === 0 ? () => false : patterns.includes('*') ? () => true : (m) => matchesAny(patterns, m);
  }

  /** The call as compared, with its rule; undefined when it is not checked (not listed, a submit, state, or no height to agree at). */
  plan<C extends Call>(call: C, routing: Routing): Agreement<C> | undefined {
    if (routing.broadcast === true || routing.state !== undefined || routing.retry === 'never' || !this.matches(call.method))
      return undefined;
    const pin = routing.latest?.pin;
    const served = this.pool.servedHead;
    // Every node answers at the served head: honest nodes a block apart would differ.
    const pinnedAt = pin === undefined ? undefined : served;
    const sent = pin === undefined || pinnedAt === undefined ? call : pin(call, pinnedAt);
    const rule = this.codec.rule(sent);
    return rule === undefined ? undefined : { call: sent, rule, pinnedAt };
  }

  /** Ask `ask` nodes; answer once `agree` agree, else by `onDisagree`. Never throws. */
  run<C extends Call, A>(ctx: AgreeContext<C, A>, agreement: Agreement<C>, routing: Routing): Promise<CallResult<A>> {
    const { ask, agree } = this.config;
    const { call, rule } = agreement;
    const agreeable = ctx.exchange.agreeable;
    const atHead = routing.latest === undefined ? undefined : (agreement.pinnedAt ?? this.pool.servedHead);
    const tried = new Set<PoolNode>();
    // A read within the full nodes' history may also go to nodes whose retention the
    // pool does not know (SDK REST nodes report none): one that lacks the height says
    // so, and its answer counts for nothing.
    const loose = routing.minHeight !== undefined && !routing.archive ? { ...routing, minHeight: undefined } : undefined;
    const archive = ctx.archiveAllowed || routing.fullHolds === true;
    const next = (): PoolNode | undefined => {
      // A call pinned to the served head may go below it: a node there answers the same, or says it lacks the block (no vote).
      const n =
        this.pool.select(routing, tried, atHead, archive, agreement.pinnedAt !== undefined) ??
        (loose === undefined ? undefined : this.pool.select(loose, tried, atHead, archive));
      if (n !== undefined) tried.add(n);
      return n;
    };
    const first: PoolNode[] = [];
    const asks = ctx.work === undefined ? ask : Math.min(ask, ctx.work.left);
    for (let i = 0; i < asks; i++) {
      const n = next();
      if (n === undefined) break;
      first.push(n);
    }
    // A node that fails is replaced while nodes are left, up to the chain's attempts.
    let spare = this.pool.config.maxAttempts;
    return new Promise((resolve) => {
      const votes: Array<Vote<A>> = [];
      const groups = new Map<string, Array<Vote<A>>>();
      let answered: Vote<A> | undefined;
      let out = 0;
      const give = (r: CallResult<A>, vote?: Vote<A>): void => {
        if (answered !== undefined) return;
        answered = vote ?? { node: first[0] as PoolNode, key: undefined, sent: undefined };
        resolve(r);
      };
      const ask1 = (node: PoolNode): void => {
        out++;
        void ctx.forward([call], [routing], { only: node }).then(([r]) => {
          out--;
          const vote = this.vote(node, r as CallResult<A>, rule, agreeable);
          votes.push(vote);
          if (vote.key === undefined) {
            const again = spare-- > 0 && (ctx.work === undefined || ctx.work.left > 0) ? next() : undefined;
            if (again !== undefined) ask1(again);
          } else {
            // Late answers are grouped too: who differed is decided once every node has answered.
            const group = groups.get(vote.key);
            if (group === undefined) groups.set(vote.key, [vote]);
            else group.push(vote);
            if (answered === undefined) {
              const ready = rule.kind === 'highest' ? this.highest(votes, agree) : (group?.length ?? 1) >= agree ? vote : undefined;
              if (ready !== undefined) give(this.own(ready, true), ready);
            }
          }
          if (out === 0) void this.settle(ctx, votes, groups, rule, routing, call, tried, answered, give);
        });
      };
      if (first.length === 0) {
        ctx.metrics.consensus.inc({ chain: this.chain, outcome: 'failed' });
        resolve(new GatewayError('NO_HEALTHY_NODE', { headers: { 'retry-after': '1' } }));
        return;
      }
      for (const n of first) ask1(n);
    });
  }

  /** Every node has answered (or failed): decide if nobody was answered yet, then record who differed. */
  private async settle<C extends Call, A>(
    ctx: AgreeContext<C, A>,
    votes: Array<Vote<A>>,
    groups: Map<string, Array<Vote<A>>>,
    rule: AgreementRule,
    routing: Routing,
    call: C,
    tried: Set<PoolNode>,
    answered: Vote<A> | undefined,
    give: (r: CallResult<A>, vote?: Vote<A>) => void,
  ): Promise<void> {
    let outcome: ConsensusOutcome = 'agreed';
    let winner = answered;
    if (winner === undefined) {
      const largest = this.largest(groups);
      // A full node lacked the state for a key without archive access: refused, whatever another node said.
      const pruned = ctx.archiveAllowed ? undefined : votes.find((v) => v.err?.code === 'FORBIDDEN')?.err;
      if (pruned !== undefined) {
        outcome = 'failed';
        give(pruned);
      } else if (largest === undefined) {
        outcome = 'failed';
        // No answer the rule could read: a chain's own answer (an error) is relayed, else the table error.
        const chainAnswer = votes.find((v) => v.sent !== undefined);
        if (chainAnswer !== undefined) give(this.own(chainAnswer, false), chainAnswer);
        else give(votes.find((v) => v.err !== undefined)?.err ?? new GatewayError('UPSTREAM_FAILED'));
      } else if (rule.kind === 'highest') {
        // Fewer numeric answers than `agree`: the highest of those there are, as for any highest.
        winner = this.highest(votes, 1);
        outcome = 'majority';
      } else if (this.config.onDisagree === 'error') {
        outcome = 'refused';
      } else if (this.config.onDisagree === 'prefer-archive' && ctx.archiveAllowed) {
        winner =
          votes.find((v) => v.key !== undefined && v.node.role === 'archive') ??
          (await this.askArchive(ctx, call, routing, rule, tried, votes));
        if (winner !== undefined) outcome = 'archive';
        else {
          winner = largest[0];
          outcome = 'majority';
        }
      } else {
        winner = largest[0];
        outcome = 'majority';
      }
      if (outcome === 'refused') give(new GatewayError('NODES_DISAGREE', { message: groups.size > 1 ? 'nodes disagree' : TOO_FEW }));
      else if (winner !== undefined) give(this.own(winner, false), winner);
    }
    ctx.metrics.consensus.inc({ chain: this.chain, outcome });
    if (rule.kind === 'highest' || groups.size <= 1) {
      for (const v of votes) if (v.key !== undefined) this.judge(v.node, false);
      return;
    }
    this.record(ctx.metrics, votes, groups, winner, outcome, routing.label);
  }

  /** Nodes outside the largest group, when it is the only largest, are disputed; every entry goes to the log. */
  private record<A>(
    metrics: Metrics,
    votes: Array<Vote<A>>,
    groups: Map<string, Array<Vote<A>>>,
    winner: Vote<A> | undefined,
    outcome: ConsensusOutcome,
    method: string,
  ): void {
    const largest = this.largest(groups);
    const majority =
      largest !== undefined && [...groups.values()].filter((g) => g.length === largest.length).length === 1 ? largest[0]?.key : undefined;
    const nodes: DisputedNode[] = [];
    for (const v of votes) {
      nodes.push({
        node: v.node.name,
        answer: v.key === undefined ? null : answerHash(v.key),
        agrees: winner !== undefined && v.key === winner.key,
      });
      if (v.key === undefined || majority === undefined) continue;
      const disputed = v.key !== majority;
      if (disputed) metrics.disagreements.inc({ chain: this.chain, node: v.node.name });
      this.judge(v.node, disputed);
    }
    this.log.add({ at: new Date(this.pool.now()).toISOString(), chain: this.chain, method, outcome, nodes });
  }

  /** Count a compared call of `node`; past the rate, it leaves rotation for the cool-down. */
  private judge(node: PoolNode, disputed: boolean): void {
    const { windowMs, minCompared, maxDisputeRate, coolDownMs } = this.config;
    const now = this.pool.now();
    const a = node.agreement;
    if (now - a.since >= windowMs) {
      a.since = now;
      a.compared = 0;
      a.disputed = 0;
    }
    a.compared++;
    if (disputed) a.disputed++;
    if (!disputed || a.compared < minCompared || a.disputed / a.compared <= maxDisputeRate) return;
    a.since = now;
    a.compared = 0;
    a.disputed = 0;
    this.pool.disputed(node, now + coolDownMs);
    this.log.tookOut(this.chain, node.name, now + coolDownMs);
  }

  /** `prefer-archive` without an archive node among those asked: ask one. */
  private async askArchive<C extends Call, A>(
    ctx: AgreeContext<C, A>,
    call: C,
    routing: Routing,
    rule: AgreementRule,
    tried: Set<PoolNode>,
    votes: Array<Vote<A>>,
  ): Promise<Vote<A> | undefined> {
    const now = this.pool.now();
    const node = this.pool.nodes.find((n) => n.role === 'archive' && !tried.has(n) && n.available(now));
    if (node === undefined) return undefined;
    tried.add(node);
    const [r] = await ctx.forward([call], [routing], { only: node });
    const vote = this.vote(node, r as CallResult<A>, rule, ctx.exchange.agreeable);
    votes.push(vote);
    return vote.key === undefined ? undefined : vote;
  }

  private vote<A>(node: PoolNode, r: CallResult<A>, rule: AgreementRule, agreeable: Exchange<Call, A>['agreeable']): Vote<A> {
    if (isGatewayError(r)) return { node, key: undefined, sent: undefined, err: r };
    if (r.answer === undefined || agreeable === undefined) return { node, key: undefined, sent: undefined };
    if (r.verdict !== 'ok' && r.verdict !== 'chain_error') return { node, key: undefined, sent: r };
    const { status, text } = agreeable(r.answer);
    const canonical = rule.canonical(text);
    return { node, key: canonical === undefined ? undefined : `${status} ${canonical}`, sent: r };
  }

  /** With `agree` numeric answers in, the highest of them; else undefined. */
  private highest<A>(votes: ReadonlyArray<Vote<A>>, agree: number): Vote<A> | undefined {
    let best: Vote<A> | undefined;
    let bestValue = -1n;
    let count = 0;
    for (const v of votes) {
      if (v.key === undefined) continue;
      const space = v.key.indexOf(' ');
      let value: bigint;
      try {
        value = BigInt(v.key.slice(space + 1));
      } catch {
        continue;
      }
      count++;
      if (value > bestValue) {
        bestValue = value;
        best = v;
      }
    }
    return count >= agree ? best : undefined;
  }

  private largest<A>(groups: Map<string, Array<Vote<A>>>): Array<Vote<A>> | undefined {
    let best: Array<Vote<A>> | undefined;
    for (const g of groups.values()) if (best === undefined || g.length > best.length) best = g;
    return best;
  }

  /** The answer given: cached only when enough nodes agreed on it. */
  private own<A>(vote: Vote<A>, agreed: boolean): CallResult<A> {
    const s = vote.sent as Sent<A>;
    return { answer: s.answer, verdict: s.verdict, sure: agreed && s.sure };
  }
}
