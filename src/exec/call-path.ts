// The one call path every transport takes once the key is known: permissions and the
// plugin's routing → cache lookup → admission (the whole request charged once) →
// coalescing → forwarding (the attempt loop) with the plugin's verdicts → cache store →
// usage. Transports hand it typed calls with the exchange that carries their kind and
// get back each call's answer or table error, in order; they only translate wire
// formats in and out. Calls a transport serves itself once admitted (WebSocket
// subscriptions) are handed back to it. Each call's node calls are held to its tier's
// budget, counted in a metric, and work past one node call is charged after the call
// (node-budget.ts).

import type { ChainRuntime } from '../chain/runtime.js';
import { isGatewayError, type GatewayError } from '../errors.js';
import type { Call, Routing } from '../plugin/contract.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { PoolNode } from '../pool/pool-node.js';
import type { Admission } from '../quota/admission.js';
import type { Agreement } from './policies/consensus.js';
import { broadcastCall, splitCall, stateCall, type PolicyContext } from './policies/policies.js';
import type { CallAccess, Principal } from './access.js';
import { forward, type CallResult, type ForwardOptions } from './attempts/attempts.js';
import { NodeWork } from './policies/node-budget.js';
import type { CacheCodec, Exchange } from './exchanges/exchange.js';
import type { ClientOutcome } from './outcome.js';
import type { RequestOutcome } from './request-record.js';
import { outcomeOf } from './request-record.js';

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

/** What a result counts as in metrics, usage and the log. */
export function resultOutcome<A>(r: CallResult<A> | undefined): ClientOutcome {
  if (r === undefined) return 'ok';
  if (isGatewayError(r)) return outcomeOf(r);
  return r.verdict === 'ok' ? 'ok' : 'chain_error';
}

/** Cache keys and hits of the routed calls. */
interface Lookup<A> {
  readonly keys: ReadonlyArray<string | undefined>;
  readonly hits: ReadonlyArray<A | undefined>;
  readonly hitCount: number;
  readonly hitCost: number;
  readonly cacheable: number;
}

/** The lookup of an endpoint without a cache: no promise turn, nothing allocated. */
const NO_LOOKUP: Lookup<never> = Object.freeze({ keys: [], hits: [], hitCount: 0, hitCost: 0, cacheable: 0 });

const NOTHING: Refused = Object.freeze({ error: undefined, admission: undefined });

export class CallPath {
  constructor(
    private readonly access: CallAccess,
    private readonly metrics: Metrics,
  ) {}

  /**
   * A request refused whole before it became calls (a batch over the tier's cap, a
   * malformed or oversized request): charged and counted (CallAccess.chargeRefused).
   * `error` is the rate refusal to answer with instead, when the key is flooding.
   */
  async refused(chain: ChainRuntime, principal: Principal, reason: 'batch' | 'invalid'): Promise<Refused> {
    const charged = await this.access.chargeRefused(chain, principal, reason);
    if (isGatewayError(charged)) return { error: charged, admission: undefined };
    return charged;
  }

  async run<C extends Call, A>(req: RunRequest<C, A>): Promise<RunResult<A>> {
    const { chain, principal, calls, trace } = req;
    const results = new Array<CallResult<A>>(calls.length);
    const routed: C[] = [];
    const routings: Routing[] = [];
    const slots: number[] = [];
    let cost = 0;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i] as C;
      const routing = this.access.route(chain, principal, call);
      if (isGatewayError(routing)) {
        results[i] = routing;
        continue;
      }
      if (slots.length === 0) trace.label = routing.label;
      routed.push(call);
      routings.push(routing);
      slots.push(i);
      cost += routing.cost;
    }
    // Every call refused (permissions, the plugin's classification): no call, yet not free.
    if (routed.length === 0) {
      const { error, admission } = calls.length === 0 ? NOTHING : await this.refused(chain, principal, 'invalid');
      if (error !== undefined) results.fill(error);
      return this.finish(req, results, admission, undefined);
    }
    pinLatest(chain, routed, routings);

    const look = req.chain.cache === undefined || req.cache === undefined ? NO_LOOKUP : await this.lookup(req, routed, routings);
    const cache = look.cacheable === 0 ? undefined : look.hitCount === routed.length ? 'HIT' : 'MISS';
    // Cached answers count like any other unless the tier says they are free.
    const charge = principal.tier.cacheHitsFree ? cost - look.hitCost : cost;
    let admitted = charge > 0 ? this.access.admit(chain, principal, charge) : undefined;
    if (admitted instanceof Promise) admitted = await admitted;
    const refusal: GatewayError | undefined = isGatewayError(admitted) ? admitted : admitted?.error;
    const admission = isGatewayError(admitted) ? undefined : admitted?.admission;
    if (refusal !== undefined) {
      for (const i of slots) results[i] = refusal;
      return this.finish(req, results, admission, cache);
    }
    const answers = await this.dispatch(req, routed, routings, look);
    // Usage counts errors among admitted calls only: refused calls were never calls.
    let errors = 0;
    for (let k = 0; k < slots.length; k++) {
      const r = answers[k] as CallResult<A>;
      results[slots[k] as number] = r;
      if (resultOutcome(r) !== 'ok') errors++;
    }
    if (errors > 0) this.access.countErrors(principal, chain, errors);
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

  private async lookup<C extends Call, A>(req: RunRequest<C, A>, routed: readonly C[], routings: readonly Routing[]): Promise<Lookup<A>> {
    const store = req.chain.cache;
    const codec = req.cache;
    const keys: Array<string | undefined> = [];
    const hits: Array<A | undefined> = [];
    let hitCount = 0;
    let hitCost = 0;
    let cacheable = 0;
    if (store === undefined || codec === undefined) return NO_LOOKUP;
    for (let k = 0; k < routed.length; k++) {
      const call = routed[k] as C;
      const routing = routings[k] as Routing;
      let part = codec.key(call, routing);
      if (part === undefined) continue;
      // An answer at the latest state holds for the served head it was given at.
      if (routing.latest !== undefined && req.chain.pool.servedHead !== undefined) part += `\u0000@${req.chain.pool.servedHead}`;
      cacheable++;
      const key = store.key(part);
      keys[k] = key;
      const entry = await store.get(key);
      if (entry !== undefined) {
        hits[k] = codec.give(entry, call);
        hitCount++;
        hitCost += routing.cost;
      }
    }
    return { keys, hits, hitCount, hitCost, cacheable };
  }

  /**
   * Answers for every routed call, in order: cached, the transport's own, by a policy
   * (state, broadcast, split, reads after a submit, agreement across nodes), or from nodes together (a lone
   * cacheable call coalesced); oversize answers split in halves; head reads held at the
   * served head; good answers kept.
   */
  private async dispatch<C extends Call, A>(
    req: RunRequest<C, A>,
    routed: readonly C[],
    routings: readonly Routing[],
    look: Lookup<A>,
  ): Promise<Array<CallResult<A>>> {
    const { own, exchange, principal } = req;
    const { consensus } = req.chain;
    const { nodeCalls: budget, chargeFanout } = principal.tier;
    const ctx = this.context(req);
    // The node work of calls that take a policy (made only for them): by call.
    let works: Array<NodeWork | undefined> | undefined;
    const track = (k: number, work: NodeWork): PolicyContext<C, A> => {
      (works ??= [])[k] = work;
      return withWork(ctx, work);
    };
    const out = new Array<CallResult<A>>(routed.length);
    const missing: C[] = [];
    const missingRoutings: Routing[] = [];
    const at: number[] = [];
    const apart: Array<Promise<void>> = [];
    const alone = (k: number, p: Promise<CallResult<A>>): void => void apart.push(p.then((r) => void (out[k] = r)));
    for (let k = 0; k < routed.length; k++) {
      const call = routed[k] as C;
      const routing = routings[k] as Routing;
      const hit = look.hits[k];
      let agreement: Agreement<C> | undefined;
      if (hit !== undefined) out[k] = { answer: hit, verdict: 'ok', sure: true };
      else if (own !== undefined && own.claims(call)) alone(k, own.answer(call, routing));
      else if (routing.state !== undefined && exchange.state !== undefined)
        alone(k, stateCall(track(k, new NodeWork(budget, routing.cost)), call, routing));
      else if (routing.broadcast === true)
        alone(k, broadcastCall(track(k, new NodeWork(budget, routing.cost, { perNode: chargeFanout })), call, routing));
      else if (routing.split === true && exchange.split !== undefined)
        // The whole call is sent only when it cannot be cut (split() says): its parts are what it costs.
        alone(k, this.split(track(k, new NodeWork(budget, routing.cost, { owed: 0 })), call, routing));
      else if (routing.after !== undefined) {
        const prefer = req.chain.accepted.nodes(routing.after);
        const c = track(k, new NodeWork(budget, routing.cost));
        alone(
          k,
          c.forward([call], [routing], prefer === undefined ? {} : { prefer }).then((r) => r[0] as CallResult<A>),
        );
      } else if (consensus !== undefined && exchange.agreeable !== undefined && (agreement = consensus.plan(call, routing)) !== undefined) {
        alone(k, consensus.run(track(k, new NodeWork(budget, routing.cost, { perNode: chargeFanout })), agreement, routing));
      } else {
        missing.push(call);
        missingRoutings.push(routing);
        at.push(k);
      }
    }
    const by: Array<PoolNode | undefined> = [];
    // Node calls of the calls forwarded together, by call (a follower of a coalesced call made none).
    const made: number[] = [];
    if (missing.length > 0) {
      const answered: PoolNode[] = [];
      const sent: number[] = [];
      const answers = await this.forwardMissing(
        req,
        missing,
        missingRoutings,
        at.length === 1 ? look.keys[at[0] as number] : undefined,
        answered,
        sent,
      );
      for (let m = 0; m < missing.length; m++) {
        out[at[m] as number] = answers[m] as CallResult<A>;
        by[at[m] as number] = answered[m];
        made[at[m] as number] = sent[m] ?? 0;
      }
    }
    if (apart.length > 0) await Promise.all(apart);
    let extra = 0;
    for (let k = 0; k < routed.length; k++) {
      let r = out[k] as CallResult<A>;
      const routing = routings[k] as Routing;
      if (!isGatewayError(r) && r.verdict === 'oversize') {
        const halves = exchange.split?.(routed[k] as C, 'halves');
        if (halves !== undefined) {
          // The whole call was sent (and paid for at admission): its halves come on top, from what its budget has left.
          const work = works?.[k] ?? new NodeWork(budget, routing.cost, { sent: made[k] ?? 0 });
          r = await splitCall(track(k, work), routing, halves, 'oversize', 0, r.answer);
        }
      }
      if (routing.latest?.head !== undefined) r = atServedHead(req.chain, routing, r, by[k]);
      out[k] = r;
      const key = look.keys[k];
      if (key !== undefined && look.hits[k] === undefined && !isGatewayError(r)) this.keep(req, key, r, routing);
      const work = works?.[k];
      const calls = work?.sent ?? made[k];
      if (work !== undefined) extra += work.extra;
      if (calls !== undefined) this.metrics.nodeCallsPerCall.record(calls, req.chain.name);
    }
    if (extra > 0) this.access.charge(req.chain, principal, extra);
    return out;
  }

  private split<C extends Call, A>(ctx: PolicyContext<C, A>, call: C, routing: Routing): Promise<CallResult<A>> {
    const parts = ctx.exchange.split?.(call, 'fit');
    if (parts === undefined) {
      if (ctx.work !== undefined) ctx.work.owed = ctx.work.paid;
      return ctx.forward([call], [routing]).then((r) => r[0] as CallResult<A>);
    }
    return splitCall(ctx, routing, parts, 'limit');
  }

  private options<C extends Call, A>(req: RunRequest<C, A>): ForwardOptions {
    const { chain } = req;
    return {
      deadline: req.deadline,
      observer: chain.observer,
      archiveAllowed: this.access.archiveAllowed(req.principal),
      budget: req.principal.tier.nodeCalls,
      trace: req.trace,
      atHead: chain.pool.servedHead,
      hedger: chain.hedger,
    };
  }

  private context<C extends Call, A>(req: RunRequest<C, A>): PolicyContext<C, A> {
    const base = this.options(req);
    return {
      chain: req.chain,
      principal: req.principal,
      exchange: req.exchange,
      metrics: this.metrics,
      archiveAllowed: base.archiveAllowed,
      forward: (calls, routings, extra) =>
        forward(req.chain.pool, req.exchange, calls, routings, extra === undefined ? base : { ...base, ...extra }),
    };
  }

  /** Forward through the attempt loop; a lone cacheable call shares an identical call in flight. */
  private async forwardMissing<C extends Call, A>(
    req: RunRequest<C, A>,
    calls: readonly C[],
    routings: readonly Routing[],
    onlyKey: string | undefined,
    answeredBy: PoolNode[],
    nodeCalls: number[],
  ): Promise<Array<CallResult<A>>> {
    const { chain, principal } = req;
    const send = (): Promise<Array<CallResult<A>>> =>
      forward(chain.pool, req.exchange, calls, routings, { ...this.options(req), answeredBy, nodeCalls });
    const store = chain.cache;
    const codec = req.cache;
    if (onlyKey === undefined || store === undefined || codec === undefined) return send();
    // Callers share a call in flight only with callers of the same archive access: a
    // pruned answer's archive fallback (or its refusal) is one caller's, not another's.
    const shared = this.access.archiveAllowed(principal) ? `${onlyKey}\u0000a` : onlyKey;
    const { value, leader } = await store.coalesce(shared, send);
    if (leader) return value;
    // A follower: the leader keeps the answer; this caller gets it under its own id.
    const r = value[0] as CallResult<A>;
    const call = calls[0] as C;
    if (isGatewayError(r) || r.answer === undefined) return [r];
    return [{ ...r, answer: codec.share(r.answer, call), sure: false }];
  }

  private keep<C extends Call, A>(req: RunRequest<C, A>, key: string, r: Exclude<CallResult<A>, GatewayError>, routing: Routing): void {
    if (!r.sure || r.verdict !== 'ok' || r.answer === undefined || routing.cacheTtlMs === undefined) return;
    const entry = req.cache?.keep(r.answer);
    if (entry !== undefined) req.chain.cache?.set(key, entry, routing.cacheTtlMs, routing.cacheHeight);
  }
}

/** The context of one call whose node work spans several forwards: each draws from its budget. */
function withWork<C extends Call, A>(ctx: PolicyContext<C, A>, work: NodeWork): PolicyContext<C, A> {
  return {
    ...ctx,
    work,
    forward: (calls, routings, extra) => ctx.forward(calls, routings, extra === undefined ? { work } : { ...extra, work }),
  };
}

/**
 * Calls at the latest state, pinned to the served head when some node is already past
 * it (a node ahead would otherwise answer from a newer block than the next call may
 * get), for plugins that can name a height in the call.
 */
function pinLatest<C extends Call>(chain: ChainRuntime, routed: C[], routings: readonly Routing[]): void {
  const served = chain.pool.servedHead;
  if (served === undefined || !chain.pool.aheadOfServed) return;
  for (let k = 0; k < routed.length; k++) {
    const pin = (routings[k] as Routing).latest?.pin;
    // The plugin pins a call of its own kind: C in, C out.
    if (pin !== undefined) routed[k] = pin(routed[k] as C, served) as C;
  }
}

/**
 * A head read never goes back: an answer below the served head is given at it. An
 * answer above it moves the served head up, when believed (see NodePool.heardHead), so
 * reads at latest after it are served at least as new; else it is given at the served head.
 */
function atServedHead<A>(chain: ChainRuntime, routing: Routing, r: CallResult<A>, by: PoolNode | undefined): CallResult<A> {
  const served = chain.pool.servedHead;
  const reader = routing.latest?.head;
  if (served === undefined || reader === undefined || isGatewayError(r) || typeof r.answer !== 'string') return r;
  const h = reader.height(r.answer);
  if (h === undefined || h === served) return r;
  if (h > served && by !== undefined && chain.pool.heardHead(by, h)) return r;
  // Head readers work on JSON-RPC answers, which are strings.
  return { ...r, answer: reader.withHeight(r.answer, served) as A };
}
