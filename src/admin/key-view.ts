// What anyone but the key's creator may see of a key: never the value or its hash.

import { keyState, type KeyRecord } from '../auth/key-store.js';
import { RESTRICTION_FIELDS, type RestrictionField } from '../auth/restrictions.js';

/** Every restriction as a list: empty means unrestricted. */
export type RestrictionsView = Readonly<Record<RestrictionField, readonly string[]>>;

export function restrictionsView(r: KeyRecord): RestrictionsView {
  const out = {} as Record<RestrictionField, readonly string[]>;
  for (const f of RESTRICTION_FIELDS) out[f] = r.restrictions?.[f] ?? [];
  return out;
}

export interface KeyView {
  readonly id: string;
  readonly prefix: string;
  readonly account: string;
  readonly tier: string;
  readonly label: string;
  readonly permissions: KeyRecord['permissions'];
  /** Where the key may be used from (origins, ips, referrers, contracts, userAgents); [] = anywhere. */
  readonly restrictions: RestrictionsView;
  readonly state: string;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly rotatedAt: string | null;
  /** Earlier values still accepted until their grace ends. */
  readonly retired: ReadonlyArray<{ readonly prefix: string; readonly until: string }>;
}

export function keyView(r: KeyRecord, now: number = Date.now()): KeyView {
  return {
    id: r.id,
    prefix: r.prefix,
    account: r.account,
    tier: r.tier,
    label: r.label,
    permissions: r.permissions,
    restrictions: restrictionsView(r),
    state: keyState(r, now),
    createdAt: r.createdAt,
    lastUsedAt: r.lastUsedAt ?? null,
    expiresAt: r.expiresAt ?? null,
    revokedAt: r.revokedAt ?? null,
    rotatedAt: r.rotatedAt ?? null,
    retired: r.retired.filter((x) => Date.parse(x.until) > now).map((x) => ({ prefix: x.prefix, until: x.until })),
  };
}
