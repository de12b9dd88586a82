// Who a request is for, once its key is known: what every stage after identification
// reads of the caller (its permissions, restrictions and tier on the chain endpoint).

import type { KeyRecord } from '../auth/key-store.js';
import type { TierConfig } from '../config/types.js';

/** Who a request is for: the key's record and the tier it has on the chain endpoint. */
export interface Principal {
  readonly record: KeyRecord;
  readonly tier: TierConfig;
}
