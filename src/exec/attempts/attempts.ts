// The one attempt loop: every kind of call reaches nodes here. Calls that may share a
// request go to one node together; whose fault a failure was is settled by blame.ts
// before any breaker hears of it; a failure moves the calls to another node (never the
// same node twice, at most `maxAttempts` per group of calls, nothing after the
// deadline), unless the call may not be sent twice;
// a full node's pruned-state answer moves the call to an archive node when the key may
// read archive state, and refuses it when not. For a key without archive access, a call
// the plugin has not placed within the full nodes' history (`fullHolds`) never reaches
// an archive node on any attempt (first, retry, hedge, preferred or pinned). When every
// attempt failed the answer is the error table's: 503 none tried, 504 all timed out, 502 else.
// Every node call, hedges included, is drawn from the call's node-call budget
// (node-budget.ts) first.

import { GatewayError } from '../../errors.js';
import type { Call, Routing } from '../../plugin/contract.js';
import { Cancel, CallAborted, NodeFailure, NodeThrottled } from '../../pool/failures.js';
import type { PoolNode } from '../../pool/pool-node.js';
import type { NodePool, Tried } from '../../pool/pool.js';
import type { RequestSpan } from '../../ops/trace/request-span.js';
import { failureOutcome, tracedAttempt } from './attempt-span.js';
import { Blame, nodeAnswered } from './blame.js';
import { endedAlone, firstWithin, hedgeAfter, sendHedged, type Attempted, type Hedged, type Hedger, type Outstanding } from './hedge.js';
import { overBudget, type NodeWork } from '../policies/node-budget.js';
import type { Exchange, ForwardObserver, Sent } from '../exchanges/exchange.js';
import type { UpstreamOutcome } from '../outcome.js';

/** A call's result: its answer (with the verdict), or the table error it gets instead. */
export type CallResult<A> = Sent<A> | GatewayError;

/** Filled in for the request log: who answered, after how many attempts. */
export interface ForwardTrace {
  node: string | undefined;
  attempts: number;
  /** The request's span when it is traced: each attempt gets a child span. */
  span?: RequestSpan | undefined;
}

export interface ForwardOptions {
  readonly deadline: number;
  readonly observer: ForwardObserver;
  /** May the caller read archive state? Else a full node's pruned answer is refused (403), never sent on to archive. */
  readonly archiveAllowed: boolean;
  readonly trace?: ForwardTrace;
  /** A node not to try (the one a subscription is leaving). */
  readonly avoid?: PoolNode;
  /** Calls at the latest state go only to nodes whose head has reached this (the served head). */
  readonly atHead?: number;
  /** Hedging of the calls the plugin marks as safe to repeat; absent: none. */
  readonly hedger?: Hedger;
  /** Try these nodes first (the nodes that accepted a submit the call reads). */
  readonly prefer?: readonly PoolNode[];
  /** Only this node may take the calls (it holds their state). */
  readonly only?: PoolNode;
  /** Filled with the node that answered each call (by index). */
  readonly answeredBy?: PoolNode[];
  /** Node calls each call may make (retries and hedges included); absent: only maxAttempts bounds them. */
  readonly budget?: number;
  /** The client call's budget when its work spans several forwards (parts, nodes asked): drawn from instead of `budget`. */
  readonly work?: NodeWork;
  /** Filled with the node calls each call made (by index). */
  readonly nodeCalls?: number[];
  readonly now?: () => number;
}

/**
 * `base` with `extra`'s options over it, written out field by field: an object spread of
 * two option objects was the call path's single most expensive line (V8 copies spreads
 * property by property into a new shape), on every call.
 */
export function withOptions(base: ForwardOptions, extra: Partial<ForwardOptions>): ForwardOptions {
  // Every option named: one added to ForwardOptions and not here fails to compile.
  return {
    deadline: extra.deadline ?? base.deadline,
    observer: extra.observer ?? base.observer,
    archiveAllowed: extra.archiveAllowed ?? base.archiveAllowed,
    trace: 'trace' in extra ? extra.trace : base.trace,
    avoid: 'avoid' in extra ? extra.avoid : base.avoid,
    atHead: 'atHead' in extra ? extra.atHead : base.atHead,
    hedger: 'hedger' in extra ? extra.hedger : base.hedger,
    prefer: 'prefer' in extra ? extra.prefer : base.prefer,
    only: 'only' in extra ? extra.only : base.only,
    answeredBy: 'answeredBy' in extra ? extra.answeredBy : base.answeredBy,
    budget: 'budget' in extra ? extra.budget : base.budget,
    work: 'work' in extra ? extra.work : base.work,
    nodeCalls: 'nodeCalls' in extra ? extra.nodeCalls : base.nodeCalls,
    now: 'now' in extra ? extra.now : base.now,
  } satisfies Record<keyof ForwardOptions, unknown>;
}

/** Where a call goes after a full node's pruned-state answer. */
const ARCHIVE_FALLBACK: Routing = Object.freeze({ archive: true, cost: 0, label: '' });
const NO_ARCHIVE = 'API key has no archive access: a full node no longer holds the state this call reads';

/** Bookkeeping of one request's attempts across nodes. */
export class Attempts implements Tried {
  count = 0;
  /** The first node tried, and the others (a set made on the second: most calls go to one node). */
  private first: PoolNode | undefined;
  private others: Set<PoolNode> | undefined;
  private timeouts = 0;
  private failures = 0;

  constructor(
    readonly pool: NodePool,
    readonly deadline: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Has a call of these gone to this node (or is it the one to avoid)? */
  has(node: PoolNode): boolean {
    return node === this.first || (this.others !== undefined && this.others.has(node));
  }

  /** Count the node as tried: it is not asked again. */
  mark(node: PoolNode): void {
    if (this.first === undefined) this.first = node;
    else (this.others ??= new Set()).add(node);
  }

  /** Tried first, in order, while available (nodes that accepted a submit the call reads). */
  prefer: readonly PoolNode[] = [];
  /** The only node that may take the calls (it holds their state). */
  only: PoolNode | undefined;
  /** May the caller read archive state? Else archive nodes take only calls full nodes could answer as well. */
  archiveAllowed = true;
  /** Node calls these calls may make, unless `work` (a budget shared with other forwards) is given. */
  budget = Infinity;
  work: NodeWork | undefined;
  /** An attempt was refused by the node-call budget. */
  private spent = false;

  /**
   * The next node to try for this routing, or undefined when the budget is spent. A call
   * at the latest state (`atHead`) may go below the served head when no node known at it
   * can take it: the attempt loop then sends it pinned to the served head.
   */
  next(routing: Routing, atHead?: number): PoolNode | undefined {
    if (this.count >= this.pool.config.maxAttempts || this.remaining() <= 0) return undefined;
    if (this.work === undefined ? this.count >= this.budget : this.work.left <= 0) {
      this.spent = true;
      return undefined;
    }
    const archive = this.archiveAllowed || routing.fullHolds === true;
    const node =
      this.only !== undefined
        ? this.pinned(this.only, archive)
        : (this.preferred(archive) ?? this.pool.select(routing, this.first === undefined ? undefined : this, atHead, archive, true));
    if (node !== undefined) this.took(node);
    return node;
  }

  /** A call of these goes to the node: it is counted as busy, tried, and an attempt. */
  took(node: PoolNode): void {
    node.take();
    this.mark(node);
    this.count++;
    if (this.work !== undefined) this.work.sent++;
  }

  private pinned(node: PoolNode, archive: boolean): PoolNode | undefined {
    // The node holds the calls' state: a cordon does not keep them from it.
    if (!archive && node.role === 'archive') return undefined;
    return this.has(node) || !node.availableForState(this.now()) ? undefined : node;
  }

  private preferred(archive: boolean): PoolNode | undefined {
    for (const n of this.prefer) if (!this.has(n) && n.available(this.now()) && (archive || n.role !== 'archive')) return n;
    return undefined;
  }

  remaining(): number {
    return this.deadline - this.now();
  }

  timeoutFor(): number {
    return Math.max(1, Math.min(this.pool.config.attemptTimeoutMs, this.remaining()));
  }

  failed(timedOut: boolean): void {
    if (timedOut) this.timeouts++;
    else this.failures++;
  }

  /** The error for calls no attempt could answer. */
  error(): GatewayError {
    if (this.timeouts + this.failures === 0) {
      // Nothing sent because the call's node calls are spent: a node being free would not help.
      if (this.spent) return overBudget(this.work?.budget ?? this.budget);
      return new GatewayError('NO_HEALTHY_NODE', { headers: { 'retry-after': '1' } });
    }
    if (this.failures === 0 || (this.remaining() <= 0 && this.timeouts > 0)) return new GatewayError('UPSTREAM_TIMEOUT');
    return new GatewayError('UPSTREAM_FAILED');
  }
}

/** Calls that go to one node in one request, with their own attempts. */
interface Job {
  readonly indices: readonly number[];
  readonly routing: Routing;
  readonly attempts: Attempts;
  /** Calls moved to archive after a full node's pruned answer. */
  readonly fallback?: true;
}

/** The indices of a lone call's job. */
const ONLY_CALL: readonly number[] = Object.freeze([0]);

/**
 * Jobs for the calls: one per call, or (batching exchanges) one per kind of node they
 * need. Each job has attempts of its own: a group answered by a node does not use up
 * the node, or the attempt budget, of another group.
 */
function plan(routings: readonly Routing[], batches: boolean, start: () => Attempts): Job[] {
  const first = routings[0] as Routing;
  if (routings.length === 1) return [{ indices: ONLY_CALL, routing: first, attempts: start() }];
  if (!batches) return routings.map((routing, i) => ({ indices: [i], routing, attempts: start() }));
  let same = true;
  for (const r of routings) if (r.archive !== first.archive || r.minHeight !== first.minHeight || r.retry !== first.retry) same = false;
  if (same) return [{ indices: routings.map((_, i) => i), routing: held(first, routings), attempts: start() }];
  const byKind = new Map<string, { indices: number[]; routing: Routing; attempts: Attempts }>();
  routings.forEach((r, i) => {
    const kind = `${r.archive ? 'a' : 'f'}${r.minHeight ?? ''}${r.retry ?? ''}`;
    const job = byKind.get(kind);
    if (job === undefined) byKind.set(kind, { indices: [i], routing: r, attempts: start() });
    else {
      job.indices.push(i);
      // A call full nodes may not hold all of makes its whole group theirs (one request still).
      if (r.fullHolds !== true && job.routing.fullHolds === true) job.routing = { ...job.routing, fullHolds: false };
    }
  });
  return [...byKind.values()];
}

/** The routing a group goes by: full nodes hold what it reads only when they hold what every call of it reads. */
function held(first: Routing, routings: readonly Routing[]): Routing {
  if (first.fullHolds !== true) return first;
  for (const r of routings) if (r.fullHolds !== true) return { ...first, fullHolds: false };
  return first;
}

/**
 * Answer every call, in order: the answer a node gave, or the table error. Never
 * throws. `routings[i]` is the routing of `calls[i]`.
 */
export function forward<C extends Call, A>(
  pool: NodePool,
  exchange: Exchange<C, A>,
  calls: readonly C[],
  routings: readonly Routing[],
  options: ForwardOptions,
): Promise<Array<CallResult<A>>> {
  const routing = routings[0] as Routing;
  if (calls.length === 1 && isLone(options)) return forwardLone(pool, exchange, calls, routing, options);
  return forwardAll(pool, exchange, calls, routings, options, undefined);
}

/** A lone call nothing steers (no node preferred, pinned or avoided, no budget shared with other forwards, no span): most calls. */
function isLone(o: ForwardOptions): boolean {
  return o.avoid === undefined && o.prefer === undefined && o.only === undefined && o.work === undefined && o.trace?.span === undefined;
}

/**
 * The lone lane: one node chosen, one send (hedged as the loop would hedge it), and a
 * plain answer taken as the loop would take it, without the loop's bookkeeping
 * (attempts, jobs, blame, closures), which only a failure, a pruned answer or a hedge
 * needs: those go on in the loop, from the attempt made here. A call the lane cannot
 * send as it is (no node, or one below the served head that would need it pinned) goes
 * to the loop unsent.
 */
async function forwardLone<C extends Call, A>(
  pool: NodePool,
  exchange: Exchange<C, A>,
  calls: readonly C[],
  routing: Routing,
  options: ForwardOptions,
): Promise<Array<CallResult<A>>> {
  const left = options.deadline - (options.now ?? Date.now)();
  const atHead = routing.latest === undefined ? undefined : options.atHead;
  const node =
    left > 0 && pool.config.maxAttempts > 0 && (options.budget === undefined || options.budget > 0)
      ? pool.select(routing, undefined, atHead, options.archiveAllowed || routing.fullHolds === true, true)
      : undefined;
  if (node === undefined || (atHead !== undefined && (node.head === undefined || node.head < atHead))) {
    return forwardAll(pool, exchange, calls, [routing], options, undefined);
  }
  const hedger = routing.hedge === true ? options.hedger : undefined;
  const delay = hedger?.delayFor(node);
  const timeout = Math.max(1, Math.min(pool.config.attemptTimeoutMs, left));
  node.take();
  const started = performance.now();
  let sent: Array<Sent<A>>;
  if (hedger === undefined || delay === undefined) {
    try {
      sent = await exchange.send(node, calls, timeout, undefined);
    } catch (err: unknown) {
      return forwardAll(pool, exchange, calls, [routing], options, { node, first: endedAlone({ node, started, err }) });
    }
  } else {
    hedger.called();
    const cancel = new Cancel();
    const early = await firstWithin(node, started, attempt(exchange, node, calls, timeout, cancel), cancel, delay);
    if ('attempt' in early) return forwardAll(pool, exchange, calls, [routing], options, { node, pending: early });
    if (early.sent === undefined) return forwardAll(pool, exchange, calls, [routing], options, { node, first: endedAlone(early) });
    sent = early.sent;
  }
  const s = sent[0] as Sent<A>;
  if (s.verdict === 'pruned') {
    return forwardAll(pool, exchange, calls, [routing], options, { node, first: endedAlone({ node, started, sent }) });
  }
  nodeAnswered(node);
  const seconds = (performance.now() - started) / 1000;
  node.observeLatency(seconds * 1000);
  const { trace } = options;
  if (trace !== undefined) {
    trace.node = node.name;
    trace.attempts = 1;
  }
  if (options.answeredBy !== undefined) options.answeredBy[0] = node;
  if (options.nodeCalls !== undefined) options.nodeCalls[0] = 1;
  if (s.settled !== undefined) settleLater(node, s.settled, started, options.observer);
  else options.observer.upstream(node, s.verdict === 'chain_error' ? 'chain_error' : 'ok', seconds);
  return [mayBeArchive(pool, node, routing, false) ? { ...s, sure: false } : s];
}

/** One send to one node, as it ended: its answers or its error. */
function attempt<C extends Call, A>(
  exchange: Exchange<C, A>,
  node: PoolNode,
  calls: readonly C[],
  timeoutMs: number,
  cancel: Cancel | undefined,
): Promise<Attempted<A>> {
  const started = performance.now();
  return exchange.send(node, calls, timeoutMs, cancel).then(
    (sent) => ({ node, started, sent }),
    (err: unknown) => ({ node, started, err }),
  );
}

/** The lone lane's attempt, for the loop to go on from: how it ended, or (past its hedge delay) the attempt still out. */
type Made<A> = { readonly node: PoolNode; readonly first: Hedged<A> } | { readonly node: PoolNode; readonly pending: Outstanding<A> };

async function forwardAll<C extends Call, A>(
  pool: NodePool,
  exchange: Exchange<C, A>,
  calls: readonly C[],
  routings: readonly Routing[],
  options: ForwardOptions,
  made: Made<A> | undefined,
): Promise<Array<CallResult<A>>> {
  const now = options.now ?? Date.now;
  const start = (): Attempts => {
    const a = new Attempts(pool, options.deadline, now);
    if (options.avoid !== undefined) a.mark(options.avoid);
    if (options.prefer !== undefined) a.prefer = options.prefer;
    a.only = options.only;
    a.archiveAllowed = options.archiveAllowed;
    if (options.budget !== undefined) a.budget = options.budget;
    a.work = options.work;
    return a;
  };
  const queue = plan(routings, exchange.batches, start);
  if (made !== undefined) {
    // The lane took the node already (it is busy until this attempt is settled).
    const { attempts } = queue[0] as Job;
    attempts.mark(made.node);
    attempts.count++;
  }
  const planned = options.nodeCalls === undefined ? undefined : queue.slice();
  const blame = new Blame(pool);
  try {
    return await attemptAll(exchange, calls, routings, queue, blame, options, made);
  } finally {
    blame.release();
    // A call moved to archive keeps its job's attempts: their count is every node call it made.
    if (planned !== undefined && options.nodeCalls !== undefined) {
      for (const job of planned) for (const i of job.indices) options.nodeCalls[i] = job.attempts.count;
    }
  }
}

async function attemptAll<C extends Call, A>(
  exchange: Exchange<C, A>,
  calls: readonly C[],
  routings: readonly Routing[],
  queue: Job[],
  blame: Blame,
  options: ForwardOptions,
  made: Made<A> | undefined,
): Promise<Array<CallResult<A>>> {
  const { observer, trace } = options;
  const span = trace?.span;
  const now = options.now ?? Date.now;
  const results = new Array<CallResult<A>>(calls.length);
  // A full node's pruned answer, kept as the answer of last resort when no archive node answers.
  let pruned: Map<number, Sent<A>> | undefined;
  let tries = 0;
  for (let job = queue.shift(); job !== undefined; job = queue.shift()) {
    const { attempts } = job;
    const atHead = job.routing.latest === undefined ? undefined : options.atHead;
    let hedged: Hedged<A>;
    if (made !== undefined && 'first' in made) {
      // The lone lane's attempt ended before the loop: the loop goes on from its ending.
      hedged = made.first;
      made = undefined;
      tries++;
    } else {
      const pending = made?.pending;
      made = undefined;
      const first = pending?.node ?? attempts.next(job.routing, atHead);
      if (first === undefined) {
        const err = attempts.error();
        for (const i of job.indices) results[i] = pruned?.get(i) ?? err;
        continue;
      }
      tries++;
      const batch = job.indices.length === 1 ? [calls[job.indices[0] as number] as C] : job.indices.map((i) => calls[i] as C);
      let pinnedBatch: C[] | undefined;
      const launch = (n: PoolNode, cancel: Cancel | undefined, hedge: boolean): Promise<Attempted<A>> => {
        // A node below the served head gets the calls at it, never at its own latest (a node
        // pinned by `only` is given calls its policy already pinned).
        const sending =
          atHead === undefined || attempts.only !== undefined || (n.head !== undefined && n.head >= atHead)
            ? batch
            : (pinnedBatch ??= pinAll(calls, routings, job.indices, atHead));
        if (span !== undefined) return tracedAttempt(span, exchange, n, sending, attempts.timeoutFor(), cancel, hedge);
        return attempt(exchange, n, sending, attempts.timeoutFor(), cancel);
      };
      // A loser cancelled after the win is nobody's failure: its node is only told the attempt is over.
      const late = (a: Attempted<A>): void => {
        blame.failed(a.node, job, a.err ?? new CallAborted());
        observer.upstream(a.node, a.sent !== undefined ? 'ok' : 'cancelled', (performance.now() - a.started) / 1000);
      };
      const hedger = job.routing.hedge === true ? options.hedger : undefined;
      const second = (): PoolNode | undefined => {
        const n = attempts.next(job.routing, atHead);
        if (n !== undefined) tries++;
        return n;
      };
      // The lone lane's attempt outlived its hedge delay (so its routing is hedged): the hedge is sent from here.
      hedged =
        pending !== undefined && hedger !== undefined
          ? await hedgeAfter(pending, launch, hedger, second, late)
          : await sendHedged(first, launch, hedger, second, late);
    }
    const { won, failed, outrun } = hedged;
    for (const a of failed) bookFailure(a, job, attempts, blame, observer, now);
    if (outrun !== undefined) {
      // Another node answered the same calls sooner though asked later: the slowness was
      // this node's, and its breaker hears of it, so a hung node leaves instead of costing
      // every call a hedge delay.
      blame.outran(outrun.node);
      observer.upstream(outrun.node, 'timeout', (performance.now() - outrun.started) / 1000);
    }
    if (won === undefined) {
      const err = (failed[failed.length - 1] as Attempted<A>).err;
      if (err instanceof CallAborted) {
        // The client left: nobody's failure, and nobody left to answer.
        const e = new GatewayError('UPSTREAM_TIMEOUT', { message: 'The call was cancelled' });
        for (const i of job.indices) results[i] = e;
        continue;
      }
      // A call that must not be sent twice stays failed once it may have reached a node.
      if (job.routing.retry === 'never' && !(err instanceof NodeThrottled) && !(err instanceof NodeFailure && err.unsent)) {
        const e = attempts.error();
        for (const i of job.indices) results[i] = e;
        continue;
      }
      observer.retry(failureOutcome(err) === 'throttled' ? 'throttled' : 'failure');
      queue.push(job);
      continue;
    }
    const { node, started } = won;
    const sent = won.sent as Array<Sent<A>>;
    blame.answered(node, job);
    const seconds = (performance.now() - started) / 1000;
    node.observeLatency(seconds * 1000);
    if (trace !== undefined) trace.node = node.name;
    let moved: number[] | undefined;
    let behind: number[] | undefined;
    let outcome: UpstreamOutcome = 'ok';
    const { indices } = job;
    for (let k = 0; k < indices.length; k++) {
      const i = indices[k] as number;
      const s = sent[k] as Sent<A>;
      if (s.verdict === 'pruned' && readsLatest(routings[i] as Routing)) {
        // Every node holds the latest state once it has the block: this one lacks the
        // block yet. Another node, never archive state, and never the client's refusal.
        outcome = 'pruned';
        (behind ??= []).push(i);
        continue;
      }
      if (s.verdict === 'pruned' && node.role === 'full') {
        outcome = 'pruned';
        if (!options.archiveAllowed) {
          results[i] = new GatewayError('FORBIDDEN', { message: NO_ARCHIVE });
          continue;
        }
        (moved ??= []).push(i);
        (pruned ??= new Map()).set(i, s);
        continue;
      }
      if (s.verdict === 'chain_error' && outcome === 'ok') outcome = 'chain_error';
      if (options.answeredBy !== undefined) options.answeredBy[i] = node;
      // Possible archive state is never cached (mayBeArchive).
      results[i] = mayBeArchive(attempts.pool, node, job.routing, job.fallback === true) ? { ...s, sure: false } : s;
      if (s.settled !== undefined) settleLater(node, s.settled, started, observer);
    }
    if (sent.length !== 1 || sent[0]?.settled === undefined) observer.upstream(node, outcome, seconds);
    if (behind !== undefined) {
      observer.retry('pruned');
      queue.push({ indices: behind, routing: job.routing, attempts });
    }
    if (moved !== undefined) {
      observer.retry('pruned');
      const routing = job.routing.retry === 'never' ? { ...ARCHIVE_FALLBACK, retry: 'never' as const } : ARCHIVE_FALLBACK;
      queue.push({ indices: moved, routing, attempts, fallback: true });
    }
  }
  if (trace !== undefined) trace.attempts = tries;
  return results;
}

/**
 * May this answer be archive state its routing did not ask for? A call moved to archive
 * after a pruned answer, or an archive node's answer to a call neither routed to archive
 * nor placed within the full nodes' history: never cached, so it cannot reach a key
 * without archive access (archive routings, and archive-only endpoints, are refused
 * such keys before the cache).
 */
function mayBeArchive(pool: NodePool, node: PoolNode, routing: Routing, fallback: boolean): boolean {
  return fallback || (node.role === 'archive' && !routing.archive && routing.fullHolds !== true && !pool.archiveOnly);
}

/** A call at the chain's latest state: whatever height it reads, every full node holds it once it has the block. */
function readsLatest(routing: Routing): boolean {
  return routing.latest !== undefined && !routing.archive && routing.minHeight === undefined;
}

/** The calls at `indices`, each one at the latest state pinned to `height` where its plugin can name one. */
function pinAll<C extends Call>(calls: readonly C[], routings: readonly Routing[], indices: readonly number[], height: number): C[] {
  return indices.map((i) => {
    const call = calls[i] as C;
    const pin = (routings[i] as Routing).latest?.pin;
    return pin === undefined ? call : pin(call, height);
  });
}

/** A failed attempt: blame, the node's back-off, the attempt count and metrics hear of it. */
function bookFailure<A>(a: Attempted<A>, job: Job, attempts: Attempts, blame: Blame, observer: ForwardObserver, now: () => number): void {
  const { node, err } = a;
  blame.failed(node, job, err);
  // The client left: the node was still called.
  if (err instanceof CallAborted) return observer.upstream(node, 'cancelled', (performance.now() - a.started) / 1000);
  const outcome = failureOutcome(err);
  if (outcome === 'throttled') node.throttle(now());
  else attempts.failed(outcome === 'timeout');
  observer.upstream(node, outcome, (performance.now() - a.started) / 1000);
}

/** An answer still streaming: its node's metrics and breaker hear how it ended. */
function settleLater(node: PoolNode, settled: Promise<UpstreamOutcome>, started: number, observer: ForwardObserver): void {
  void settled.then((outcome) => {
    observer.upstream(node, outcome, (performance.now() - started) / 1000);
    if (outcome === 'failure' || outcome === 'timeout') {
      node.recordFailure(new NodeFailure(outcome === 'timeout' ? 'timeout' : 'io', 'node failed while its answer was relayed'));
    }
  });
}
