// What every transport asks before a call reaches a node, in the same order: may
// this key use this chain endpoint (and has it a tier), this method, archive state;
// may it spend `cost` units now. HTTP, WebSocket and gRPC all ask here, so a key
// meets the same rules whichever way it comes in. No transport types in this file.

import { matchesAny, type KeyRecord } from '../auth/key-store.js';
import type { ChainRuntime } from '../chain-runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Call, Routing } from '../plugin.js';
import type { Admission } from '../quota/admission.js';
import type { Limiter } from '../quota/limiter.js';

export { outcomeOf } from './request-record.js';

export interface CallAccessDeps {
  readonly limiter: Limiter;
  /** Read per call, so a reload's new tiers apply at once. */
  readonly tiers: () => Readonly<Record<string, TierConfig>>;
  readonly metrics: Metrics;
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

  /** Permission and classification of one call; a GatewayError when refused. */
  route(chain: ChainRuntime, record: KeyRecord, tier: TierConfig, call: Call): Routing | GatewayError {
    const p = record.permissions;
    if (!matchesAny(p.allow, call.method) || (p.deny.length > 0 && matchesAny(p.deny, call.method))) {
      return new GatewayError('FORBIDDEN', { message: 'API key not permitted for this method' });
    }
    const routing = chain.handler.classify(call, chain.pool.view);
    if (routing.archive || chain.config.archiveOnly) {
      this.deps.metrics.archiveCalls.inc({ chain: chain.name });
      if (!(p.archive ?? tier.archive)) return new GatewayError('FORBIDDEN', { message: 'API key has no archive access' });
    }
    return routing;
  }

  /**
   * Charge `cost` units to the key: rate first, then quotas. A refusal is counted and
   * comes back as RATE_LIMITED or QUOTA_EXCEEDED with Retry-After; with the limits store
   * away under fail-closed, UNAVAILABLE.
   */
  admit(
    chain: ChainRuntime,
    record: KeyRecord,
    tier: TierConfig,
    cost: number,
  ): Admitted | GatewayError | Promise<Admitted | GatewayError> {
    let pending: Admission | Promise<Admission>;
    try {
      pending = this.deps.limiter.admit(record.id, tier, cost, chain.name);
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

  countErrors(keyId: string, chain: string, errors: number): void {
    this.deps.limiter.countErrors(keyId, chain, errors);
  }
}
