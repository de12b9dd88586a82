// Transport-neutral checks of one call once its key is known: may the key use this
// chain, this method and archive state (the call is classified on the way), and do
// the key's limits admit the call's cost. HTTP (http/pipeline.ts) and gRPC
// (grpc/relay.ts) ask the same questions and answer refusals in their own shape.

import { matchesAny, type KeyRecord } from './auth/key-store.js';
import type { ChainRuntime } from './chain-runtime.js';
import type { TierConfig } from './config/types.js';
import { GatewayError, isGatewayError } from './errors.js';
import type { Metrics } from './metrics/metrics.js';
import type { Call, Routing } from './plugin.js';
import type { Admission } from './quota/admission.js';
import type { Limiter } from './quota/limiter.js';

/** FORBIDDEN when the key may not use this chain endpoint or has no valid tier. */
export function chainRefusal(record: KeyRecord, tier: TierConfig | undefined, chain: string): GatewayError | undefined {
  if (!matchesAny(record.permissions.chains, chain))
    return new GatewayError('FORBIDDEN', { message: 'API key not permitted for this chain' });
  if (tier === undefined) return new GatewayError('FORBIDDEN', { message: 'API key has no valid tier' });
  return undefined;
}

/** Method permission, then the plugin's classification, then archive permission. */
export function routeCall(chain: ChainRuntime, record: KeyRecord, tier: TierConfig, call: Call, metrics: Metrics): Routing | GatewayError {
  const p = record.permissions;
  if (!matchesAny(p.allow, call.method) || (p.deny.length > 0 && matchesAny(p.deny, call.method))) {
    return new GatewayError('FORBIDDEN', { message: 'API key not permitted for this method' });
  }
  const routing = chain.handler.classify(call, chain.pool.view);
  if (routing.archive || chain.config.archiveOnly) {
    metrics.archiveCalls.inc({ chain: chain.name });
    if (!(p.archive ?? tier.archive)) return new GatewayError('FORBIDDEN', { message: 'API key has no archive access' });
  }
  return routing;
}

export interface AdmitResult {
  /** The limiter's decision (its rate headers), undefined when the limiter failed. */
  readonly admission: Admission | undefined;
  /** RATE_LIMITED / QUOTA_EXCEEDED (with retry-after), or the limiter's own failure; undefined when admitted. */
  readonly refusal: GatewayError | undefined;
}

/** Charge `cost` against the key's limits; usage counts the call here, once. */
export async function admitCall(
  limiter: Limiter,
  metrics: Metrics,
  chain: string,
  record: KeyRecord,
  tier: TierConfig,
  cost: number,
): Promise<AdmitResult> {
  let admission: Admission;
  try {
    admission = await limiter.admit(record.id, tier, cost, chain);
  } catch (err) {
    // Fail-closed with the limits store away: a 503 in the endpoint's style.
    return { admission: undefined, refusal: isGatewayError(err) ? err : new GatewayError('UNAVAILABLE', { cause: err }) };
  }
  if (admission.allowed) return { admission, refusal: undefined };
  metrics.rejections.inc({ chain, tier: tier.name, reason: admission.reason });
  const refusal = new GatewayError(admission.reason === 'rate' ? 'RATE_LIMITED' : 'QUOTA_EXCEEDED', {
    headers: { 'retry-after': String(admission.retryAfter) },
  });
  return { admission, refusal };
}
