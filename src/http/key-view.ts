// What anyone but the key's creator may see of a key: never the value or its hash.

import { keyState, type KeyRecord } from '../auth/key-store.js';

export interface KeyView {
  readonly id: string;
  readonly prefix: string;
  readonly account: string;
  readonly tier: string;
  readonly label: string;
  readonly permissions: KeyRecord['permissions'];
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
    state: keyState(r, now),
    createdAt: r.createdAt,
    lastUsedAt: r.lastUsedAt ?? null,
    expiresAt: r.expiresAt ?? null,
    revokedAt: r.revokedAt ?? null,
    rotatedAt: r.rotatedAt ?? null,
    retired: r.retired.filter((x) => Date.parse(x.until) > now).map((x) => ({ prefix: x.prefix, until: x.until })),
  };
}
