// A tier as the config reader makes it, for unit tests of limits: unlimited and plain
// unless a test says otherwise, so each test names only the settings it is about.
import type { AccountLimits, TierConfig } from '../../src/config/types.js';

export const UNLIMITED: AccountLimits = { rate: Infinity, burst: Infinity, daily: Infinity, monthly: Infinity };

export function tierConfig(over: Partial<TierConfig> = {}, account: Partial<AccountLimits> = {}): TierConfig {
  return {
    name: 'free',
    rate: Infinity,
    burst: Infinity,
    daily: Infinity,
    monthly: Infinity,
    maxBatch: 100,
    archive: false,
    wsConnections: 1,
    wsSubscriptions: 10,
    cacheHitsFree: false,
    nodeCalls: 16,
    chargeFanout: false,
    ...over,
    account: { ...UNLIMITED, ...(over.account ?? {}), ...account },
  };
}
