// What every transport asks before a call reaches a node, in the same order: may
// this key use this chain endpoint (and has it a tier), this method, the contracts
// the call targets, archive state; may it spend `cost` units now. HTTP, WebSocket and
// gRPC all ask here, so a key meets the same rules whichever way it comes in. No
// transport types in this file.

import { matchesAny, type KeyRecord } from '../auth/key-store.js';
import { compiledRestrictions } from '../auth/restrictions.js';
import type { ChainRuntime } from '../chain/runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { Call, Routing } from '../plugin/contract.js';
import type { Admission, RefusedAs } from '../quota/admission.js';
import type { Limiter } from '../quota/limiter.js';
import type { Principal } from './principal.js';
import { contractRefusal } from './restrict.js';

export interface CallAccessDeps {
  readonly limiter: Limiter;
  /** Read per call, so a reload's new tiers apply at once. */
  readonly tiers: () => Readonly<Record<string, TierConfig>>;
  readonly metrics: Metrics;
}

/** What a keyed request that became no call costs against its tier's rate (CallAccess.chargeRefused). */
export function refusedCost(tier: TierConfig): number {
  return tier.costs?.invalid ?? 1;
}

/** The answer of `admit`: the admission when the store answered, else the error to give. */
export type Admitted = { readonly admission: Admission; readonly error: GatewayError | undefined };

export class CallAccess {
  constructor(private readonly deps: CallAccessDeps) {}

  /** The key's tier on this chain endpoint, or the FORBIDDEN error to answer with. */
  tierFor(record: KeyRecord, chain: ChainRuntime): TierConfig | GatewayError {
    if (!matchesAny(record.permissions.chains, chain.name)) {
      return new GatewayError('FORBIDDEN', { message: 'API key not permitted for this chain' });
    }
    const tier = this.deps.tiers()[record.tier];
    return tier ?? new GatewayError('FORBIDDEN', { message: 'API key has no valid tier' });
  }

  /** May this key read archive state (its own setting, else its tier's)? */
  archiveAllowed(principal: Principal): boolean {
    return principal.record.permissions.archive ?? principal.tier.archive;
  }

  /** Permission and classification of one call; a GatewayError when refused. */
  route(chain: ChainRuntime, principal: Principal, call: Call): Routing | GatewayError {
    const p = principal.record.permissions;
    if (!matchesAny(p.allow, call.method) || (p.deny.length > 0 && matchesAny(p.deny, call.method))) {
      return new GatewayError('FORBIDDEN', { message: 'API key not permitted for this method' });
    }
    const routing = chain.handler.classify(call, chain.pool.view);
    if (routing.refuse !== undefined) return new GatewayError('METHOD_NOT_FOUND', { message: routing.refuse });
    if (routing.invalid !== undefined) return new GatewayError('INVALID_PARAMS', { message: routing.invalid });
    const restrictions = principal.record.restrictions;
    // Only keys with a contracts list read what a call targets.
    if (restrictions?.contracts !== undefined && routing.targets !== undefined) {
      const targets = routing.targets.of(call);
      const allowed = compiledRestrictions(restrictions).contracts;
      const refused = targets === undefined || allowed === undefined ? undefined : contractRefusal(principal.record, allowed, targets);
      if (refused !== undefined) {
        this.deps.metrics.restricted.inc({ chain: chain.name, reason: 'contract' });
        return refused;
      }
    }
    if (routing.archive || chain.config.archiveOnly) {
      this.deps.metrics.archiveCalls.inc({ chain: chain.name });
      if (!this.archiveAllowed(principal)) return new GatewayError('FORBIDDEN', { message: 'API key has no archive access' });
    }
    return routing;
  }

  /**
   * The plugin's label of a call refused at routing, for usage history: asked again only
   * for refused calls (a permission refusal comes before the plugin classifies).
   */
  labelOf(chain: ChainRuntime, call: Call): string {
    try {
      return chain.handler.classify(call, chain.pool.view).label;
    } catch {
      return 'other';
    }
  }

  /**
   * Charge `cost` units to the key: rate first, then quotas. A refusal is counted and
   * comes back as RATE_LIMITED or QUOTA_EXCEEDED with Retry-After; with the limits store
   * away under fail-closed, UNAVAILABLE.
   */
  admit(chain: ChainRuntime, principal: Principal, cost: number): Admitted | GatewayError | Promise<Admitted | GatewayError> {
    const { record, tier } = principal;
    let pending: Admission | Promise<Admission>;
    try {
      pending = this.deps.limiter.admit(record, tier, cost, chain.name);
    } catch (err) {
      return this.unavailable(err);
    }
    // The memory limiter answers at once: no promise, no extra turn, on most requests.
    if (!(pending instanceof Promise)) return this.decided(chain, tier, pending);
    return pending.then(
      (admission) => this.decided(chain, tier, admission),
      (err: unknown) => this.unavailable(err),
    );
  }

  private unavailable(err: unknown): GatewayError {
    // Fail-closed with the limits store away: a 503 in the endpoint's style.
    return isGatewayError(err) ? err : new GatewayError('UNAVAILABLE', { cause: err });
  }

  private decided(chain: ChainRuntime, tier: TierConfig, admission: Admission): Admitted {
    if (admission.allowed) return { admission, error: undefined };
    this.deps.metrics.rejections.inc({ chain: chain.name, tier: tier.name, reason: admission.reason });
    const error = new GatewayError(admission.reason === 'rate' ? 'RATE_LIMITED' : 'QUOTA_EXCEEDED', {
      headers: { 'retry-after': String(admission.retryAfter) },
    });
    return { admission, error };
  }

  /**
   * A request with a valid key that became no call: a batch over the tier's cap, or
   * one that is malformed, over a size limit or whose every call was refused
   * (`invalid`). It costs the tier's `costs.invalid` against the key's and the
   * account's rate, so a flood of them meets 429 like any other; counted in usage as
   * limited (batch) or invalid, and in rejections by reason. The error, when there is
   * one, is the rate refusal to answer with instead of the request's own.
   */
  chargeRefused(
    chain: ChainRuntime,
    principal: Principal,
    reason: 'batch' | 'invalid',
  ): Admitted | GatewayError | Promise<Admitted | GatewayError> {
    const { record, tier } = principal;
    const as: RefusedAs = reason === 'batch' ? 'limited' : 'invalid';
    let pending: Admission | Promise<Admission>;
    try {
      pending = this.deps.limiter.chargeRefused(record, tier, refusedCost(tier), chain.name, as);
    } catch (err) {
      return this.unavailable(err);
    }
    const decide = (admission: Admission): Admitted => {
      if (admission.allowed) this.deps.metrics.rejections.inc({ chain: chain.name, tier: tier.name, reason });
      return this.decided(chain, tier, admission);
    };
    if (!(pending instanceof Promise)) return decide(pending);
    return pending.then(decide, (err: unknown) => this.unavailable(err));
  }

  /** Node work done beyond what admission took (src/exec/policies/node-budget.ts), charged now: never refused. */
  charge(chain: ChainRuntime, principal: Principal, units: number): void {
    try {
      this.deps.limiter.charge(principal.record, principal.tier, units, chain.name);
    } catch {
      // The store's own failure policy has spoken (fail-closed): the call is answered already, and a lost charge is not worth its answer.
    }
  }

  countErrors(principal: Principal, chain: ChainRuntime, errors: number): void {
    this.deps.limiter.countErrors(principal.record.id, chain.name, errors);
  }
}
