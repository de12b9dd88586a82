// Key creations, rotations and revocations paced per account (keys.changesPerHour,
// with keys.changesBurst at once), shared by every instance through the limiter:
// what the dashboard and the admin API check before changing a key, so a customer
// (or a stolen session) cannot churn keys, the store and its announcements.

import type { KeyChangeGuard } from '../auth/key-service.js';
import { KeyChangesLimitedError } from '../auth/key-store.js';
import type { KeysConfig } from '../config/types.js';
import type { Limiter } from '../quota/limiter.js';

export function keyChangeGuard(limiter: Limiter, rules: () => Pick<KeysConfig, 'changesPerHour' | 'changesBurst'>): KeyChangeGuard {
  return async (account) => {
    const r = rules();
    const wait = await limiter.throttle(`keys/${account}`, r.changesPerHour, r.changesBurst);
    if (wait > 0) throw new KeyChangesLimitedError(wait, r.changesPerHour);
  };
}
