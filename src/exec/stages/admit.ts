// Admission: the request's routed calls charged once, together, against the key's and
// the account's rate and quotas (CallAccess.admit). A memory limiter decides without
// a promise turn.

import type { ChainRuntime } from '../../chain/runtime.js';
import { isGatewayError, type GatewayError } from '../../errors.js';
import type { Admission } from '../../quota/admission.js';
import type { Admitted as AccessAdmitted, CallAccess } from '../access.js';
import type { Principal } from '../principal.js';

export interface Admitted {
  /** The refusal every routed call is answered with; undefined: admitted. */
  readonly refusal: GatewayError | undefined;
  /** The rate limiter's view, for RateLimit-* headers. */
  readonly admission: Admission | undefined;
}

const FREE: Admitted = Object.freeze({ refusal: undefined, admission: undefined });

/** Admitted, or the refusal; a promise only when the limits store is asked over the network. */
export function admit(access: CallAccess, chain: ChainRuntime, principal: Principal, charge: number): Admitted | Promise<Admitted> {
  if (charge <= 0) return FREE;
  const admitted = access.admit(chain, principal, charge);
  return admitted instanceof Promise ? admitted.then(decided) : decided(admitted);
}

function decided(admitted: AccessAdmitted | GatewayError): Admitted {
  if (isGatewayError(admitted)) return { refusal: admitted, admission: undefined };
  return { refusal: admitted.error, admission: admitted.admission };
}
