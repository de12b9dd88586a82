// The one call path every transport takes once the key is known, as stages in order:
// routing (permissions and the plugin's classification, stages/route.ts) → pinning
// at the served head (stages/served-head.ts) → cache lookup (stages/cache.ts) →
// admission, the whole request charged once (stages/admit.ts) → the chain's policy
// stages, composed when its runtime is built (stages/policy-stages.ts: node state,
// broadcast, split, reads after a submit, agreement) → the rest forwarded together,
// coalesced when alone (stages/forward-together.ts) through the attempt loop (hedges,
// retries, the plugin's verdicts) → oversize answers in halves (stages/oversize.ts) →
// head reads held at the served head → cache store → usage. Each call travels as a
// record (call-record.ts). Transports hand in typed calls with the exchange of their
// kind and get back each call's answer or table error, in order; calls a transport
// serves itself once admitted (WebSocket subscriptions) are handed back to it. Each
// call's node calls are held to its tier's budget, counted in a metric, and work past
// one node call is charged after the call (policies/node-budget.ts).

import type { ChainRuntime } from '../chain/runtime.js';
import { isGatewayError, type GatewayError } from '../errors.js';
import type { Call, Routing } from '../plugin/contract.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { Admission } from '../quota/admission.js';
import type { PolicyContext } from './policies/policies.js';
import { refusedCost, type CallAccess } from './access.js';
import type { Principal } from './principal.js';
import { forward, withOptions, type CallResult, type ForwardOptions } from './attempts/attempts.js';
import type { CallRecord } from './call-record.js';
import type { CacheCodec, Exchange } from './exchanges/exchange.js';
import { resultOutcome } from './call-usage.js';
import type { RequestOutcome } from './request-record.js';
import { admit, type Admitted } from './stages/admit.js';
import { keep, lookup, NO_LOOKUP, type Lookup } from './stages/cache.js';
import { forwardTogether } from './stages/forward-together.js';
import { halveOversize } from './stages/oversize.js';
import type { PolicyStage } from './stages/policy-stages.js';
import { routeCalls } from './stages/route.js';
import { atServedHead, pinLatest } from './stages/served-head.js';

/** Calls a transport answers itself once they are admitted (WebSocket subscribe and unsubscribe). */
export interface OwnCalls<C extends Call, A> {
  claims(call: C): boolean;
  answer(call: C, routing: Routing): Promise<CallResult<A>>;
}

export interface RunRequest<C extends Call, A> {
  readonly chain: ChainRuntime;
  readonly principal: Principal;
  readonly calls: readonly C[];
  readonly exchange: Exchange<C, A>;
  /** How answers of this kind are cached; absent: never. */
  readonly cache?: CacheCodec<C, A>;
  readonly own?: OwnCalls<C, A>;
  readonly deadline: number;
  /** Filled in for the request's record: label, outcome, node, attempts. */
  readonly trace: RequestOutcome;
}

export interface RunResult<A> {
  /** One per call, in order. */
  readonly results: Array<CallResult<A>>;
  /** The rate limiter's view, for RateLimit-* headers (undefined when nothing was admitted). */
  readonly admission: Admission | undefined;
  /** x-cache when some call was cacheable: HIT when every routed call came from the cache. */
  readonly cache: 'HIT' | 'MISS' | undefined;
}

/** A refused request's charge: the admission (for RateLimit-* headers) and the error to answer with instead, if any. */
export interface Refused {
  readonly error: GatewayError | undefined;
  readonly admission: Admission | undefined;
}

const NOTHING: Refused = Object.freeze({ error: undefined, admission: undefined });

export class CallPath {
  constructor(
    private readonly access: CallAccess,
    private readonly metrics: Metrics,
  ) {}

  /**
   * A request refused whole before it became calls (a batch over the tier's cap, a
   * malformed or oversized request): charged and counted (CallAccess.chargeRefused).
   * `error` is the rate refusal to answer with instead, when the key is flooding; what
   * it was charged goes on `trace`, for usage history.
   */
  async refused(chain: ChainRuntime, principal: Principal, reason: 'batch' | 'invalid', trace: RequestOutcome): Promise<Refused> {
    const charged = await this.access.chargeRefused(chain, principal, reason);
    if (isGatewayError(charged)) return { error: charged, admission: undefined };
    if (charged.error === undefined) trace.charged += refusedCost(principal.tier);
    return charged;
  }

  /**
   * The calls' answers, in order. Without a promise when nothing needs one: a request
   * whose every call is answered from a cache in this process and admitted by a limiter
   * in this process is answered at once, and never builds what forwarding needs.
   */
  run<C extends Call, A>(req: RunRequest<C, A>): RunResult<A> | Promise<RunResult<A>> {
    const { chain, principal, calls } = req;
    const results = new Array<CallResult<A>>(calls.length);
    const { records, cost, refusedLabels } = routeCalls<C, A>(this.access, chain, principal, calls, results);
    // Read once the request is answered, by usage history (request-record.ts): references, nothing copied.
    req.trace.results = results;
    req.trace.routed = records;
    req.trace.refusedLabels = refusedLabels;
    // Every call refused (permissions, the plugin's classification): no call, yet not free.
    if (records.length === 0) return this.noneRouted(req, results);
    req.trace.label = (records[0] as CallRecord<C, A>).routing.label;
    pinLatest(chain.pool, records);
    const store = chain.cache;
    if (store === undefined || req.cache === undefined) return this.admitted(req, records, results, cost, NO_LOOKUP);
    const look = lookup(store, req.cache, chain.pool, records);
    if (look instanceof Promise) return look.then((l) => this.admitted(req, records, results, cost, l));
    return this.admitted(req, records, results, cost, look);
  }

  private async noneRouted<C extends Call, A>(req: RunRequest<C, A>, results: Array<CallResult<A>>): Promise<RunResult<A>> {
    const { error, admission } = req.calls.length === 0 ? NOTHING : await this.refused(req.chain, req.principal, 'invalid', req.trace);
    if (error !== undefined) results.fill(error);
    return this.finish(req, results, admission, undefined);
  }

  /** The routed calls charged once, together; cached answers count like any other unless the tier says they are free. */
  private admitted<C extends Call, A>(
    req: RunRequest<C, A>,
    records: ReadonlyArray<CallRecord<C, A>>,
    results: Array<CallResult<A>>,
    cost: number,
    look: Lookup,
  ): RunResult<A> | Promise<RunResult<A>> {
    const { chain, principal } = req;
    const cache = look.cacheable === 0 ? undefined : look.hits === records.length ? 'HIT' : 'MISS';
    const admitted = admit(this.access, chain, principal, principal.tier.cacheHitsFree ? cost - look.hitCost : cost);
    if (admitted instanceof Promise) return admitted.then((a) => this.decided(req, records, results, cache, a));
    return this.decided(req, records, results, cache, admitted);
  }

  private decided<C extends Call, A>(
    req: RunRequest<C, A>,
    records: ReadonlyArray<CallRecord<C, A>>,
    results: Array<CallResult<A>>,
    cache: RunResult<A>['cache'],
    { refusal, admission }: Admitted,
  ): RunResult<A> | Promise<RunResult<A>> {
    if (refusal !== undefined) {
      for (const rec of records) results[rec.slot] = refusal;
      return this.finish(req, results, admission, cache);
    }
    const hitsFree = req.principal.tier.cacheHitsFree;
    for (const rec of records) rec.charged = hitsFree && rec.hit ? 0 : rec.routing.cost;
    if (cache === 'HIT') return this.fromCache(req, records, results, admission);
    return this.dispatched(req, records, results, admission, cache);
  }

  /** Every call answered from the cache: no node, no policy, nothing to keep or charge after; head reads held at the served head. */
  private fromCache<C extends Call, A>(
    req: RunRequest<C, A>,
    records: ReadonlyArray<CallRecord<C, A>>,
    results: Array<CallResult<A>>,
    admission: Admission | undefined,
  ): RunResult<A> {
    const { pool } = req.chain;
    for (const rec of records) {
      const r = rec.result as CallResult<A>;
      results[rec.slot] = rec.routing.latest?.head === undefined ? r : atServedHead(pool, rec.routing, r, undefined);
    }
    return this.finish(req, results, admission, 'HIT');
  }

  private async dispatched<C extends Call, A>(
    req: RunRequest<C, A>,
    records: ReadonlyArray<CallRecord<C, A>>,
    results: Array<CallResult<A>>,
    admission: Admission | undefined,
    cache: RunResult<A>['cache'],
  ): Promise<RunResult<A>> {
    await this.dispatch(req, records);
    // Usage counts errors among admitted calls only: refused calls were never calls.
    let errors = 0;
    for (const rec of records) {
      const r = rec.result as CallResult<A>;
      results[rec.slot] = r;
      if (resultOutcome(r) !== 'ok') errors++;
    }
    if (errors > 0) this.access.countErrors(req.principal, req.chain, errors);
    return this.finish(req, results, admission, cache);
  }

  private finish<C extends Call, A>(
    req: RunRequest<C, A>,
    results: Array<CallResult<A>>,
    admission: Admission | undefined,
    cache: RunResult<A>['cache'],
  ): RunResult<A> {
    req.trace.outcome = resultOutcome(results[0]);
    req.trace.cache = cache;
    return { results, admission, cache };
  }

  /**
   * An answer for every record not answered from the cache: the transport's own, by the
   * first of the chain's policy stages that takes it, or from nodes together; then an
   * oversize answer asked again in halves, head reads held at the served head, good
   * answers kept, and each call's node calls counted and work past one charged.
   */
  private async dispatch<C extends Call, A>(req: RunRequest<C, A>, records: ReadonlyArray<CallRecord<C, A>>): Promise<void> {
    const { own, chain, principal } = req;
    const { policies, halves } = chain.stages;
    const ctx = new RequestContext(req, this.access, this.metrics);
    const together: Array<CallRecord<C, A>> = [];
    let apart: Array<Promise<void>> | undefined;
    for (const rec of records) {
      if (rec.hit) continue;
      let taken: Promise<CallResult<A>> | undefined;
      if (own !== undefined && own.claims(rec.call)) taken = own.answer(rec.call, rec.routing);
      else for (let s = 0; s < policies.length && taken === undefined; s++) taken = (policies[s] as PolicyStage).take(ctx, rec);
      if (taken === undefined) together.push(rec);
      else
        (apart ??= []).push(
          taken.then((r) => {
            rec.result = r;
          }),
        );
    }
    if (together.length > 0) await forwardTogether(ctx, together, chain.cache, req.cache);
    if (apart !== undefined) await Promise.all(apart);
    let extra = 0;
    for (const rec of records) {
      if (halves) {
        const halved = halveOversize(ctx, rec);
        if (halved !== undefined) await halved;
      }
      if (rec.routing.latest?.head !== undefined) rec.result = atServedHead(chain.pool, rec.routing, rec.result as CallResult<A>, rec.by);
      if (chain.cache !== undefined && req.cache !== undefined) keep(chain.cache, req.cache, rec);
      const { work } = rec;
      if (work !== undefined) {
        extra += work.extra;
        rec.charged += work.extra;
      }
      const made = work?.sent ?? rec.nodeCalls;
      if (made !== undefined) this.metrics.nodeCallsPerCall.record(made, chain.name);
    }
    if (extra > 0) this.access.charge(chain, principal, extra);
  }
}

/** What the policies and forwarding of one request share: one object, its forwarding options made once. */
class RequestContext<C extends Call, A> implements PolicyContext<C, A> {
  readonly chain: ChainRuntime;
  readonly principal: Principal;
  readonly exchange: Exchange<C, A>;
  readonly archiveAllowed: boolean;
  private readonly base: ForwardOptions;

  constructor(
    req: RunRequest<C, A>,
    access: CallAccess,
    readonly metrics: Metrics,
  ) {
    const { chain, principal } = req;
    this.chain = chain;
    this.principal = principal;
    this.exchange = req.exchange;
    this.archiveAllowed = access.archiveAllowed(principal);
    this.base = {
      deadline: req.deadline,
      observer: chain.observer,
      archiveAllowed: this.archiveAllowed,
      budget: principal.tier.nodeCalls,
      trace: req.trace,
      atHead: chain.pool.servedHead,
      hedger: chain.hedger,
    };
  }

  forward(calls: readonly C[], routings: readonly Routing[], extra?: Partial<ForwardOptions>): Promise<Array<CallResult<A>>> {
    return forward(this.chain.pool, this.exchange, calls, routings, extra === undefined ? this.base : withOptions(this.base, extra));
  }
}
