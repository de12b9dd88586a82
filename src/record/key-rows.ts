// Key records as the record's rows hold them, and back, the same for SQLite and
// PostgreSQL: a `keys` row with the current value's hash and prefix, a
// `retired_key_values` row per superseded value in order, JSON only for the nested
// permissions and restrictions (read back in one order of members, as PostgreSQL's
// jsonb keeps its own); the text a commit compares to know a key is still as its
// writer read it; and what a reader of the change log hears from its entries.

import { ALL_PERMITTED, type KeyPermissions, type KeyRecord, type StoreChange } from '../auth/key-store.js';
import { RESTRICTION_FIELDS, type KeyRestrictions } from '../auth/restrictions.js';

export interface KeyRow {
  id: string;
  hash: string;
  prefix: string;
  account: string;
  tier: string;
  label: string;
  permissions: string;
  restrictions: string | null;
  created_at: string;
  rotated_at: string | null;
  revoked_at: string | null;
  expires_at: string | null;
  last_used_ms: number | null;
}

export interface RetiredRow {
  key_id: string;
  hash: string;
  prefix: string;
  until: string;
}

/** The `keys` columns, in one order for every SELECT. */
export const KEY_COLUMNS =
  'id, hash, prefix, account, tier, label, permissions, restrictions, created_at, rotated_at, revoked_at, expires_at, last_used_ms';

const orUndefined = (v: string | null): string | undefined => v ?? undefined;

function permissionsOf(text: string): KeyPermissions {
  const p = JSON.parse(text) as Partial<KeyPermissions>;
  return {
    chains: p.chains ?? ALL_PERMITTED.chains,
    archive: p.archive,
    allow: p.allow ?? ALL_PERMITTED.allow,
    deny: p.deny ?? ALL_PERMITTED.deny,
  };
}

/**
 * Restrictions with their lists in the order the checks write them (jsonb orders
 * members its own way): a record read back compares equal, as text, to the one
 * written, so setting the same lists again is seen to change nothing.
 */
function restrictionsOf(text: string): KeyRestrictions {
  const stored = JSON.parse(text) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of RESTRICTION_FIELDS) if (field in stored) out[field] = stored[field];
  // Members this version does not know stay, after the known ones.
  for (const [k, v] of Object.entries(stored)) if (!(k in out)) out[k] = v;
  return out;
}

/** The record of a key row and its retired values (in position order). */
export function recordOf(row: KeyRow, retired: readonly RetiredRow[]): KeyRecord {
  return {
    id: row.id,
    hash: row.hash,
    prefix: row.prefix,
    account: row.account,
    tier: row.tier,
    label: row.label,
    permissions: permissionsOf(row.permissions),
    // Absent, not undefined, as a key made without restrictions has none (as the other stores give it).
    ...(row.restrictions === null ? {} : { restrictions: restrictionsOf(row.restrictions) }),
    createdAt: row.created_at,
    lastUsedAt: row.last_used_ms === null ? undefined : new Date(row.last_used_ms).toISOString(),
    revokedAt: orUndefined(row.revoked_at),
    expiresAt: orUndefined(row.expires_at),
    rotatedAt: orUndefined(row.rotated_at),
    retired: retired.map((r) => ({ hash: r.hash, prefix: r.prefix, until: r.until })),
  };
}

/** The `keys` row of a record (its retired values are rows of their own). */
export function rowOf(r: KeyRecord): KeyRow {
  const lastUsed = r.lastUsedAt === undefined ? NaN : Date.parse(r.lastUsedAt);
  return {
    id: r.id,
    hash: r.hash,
    prefix: r.prefix,
    account: r.account,
    tier: r.tier,
    label: r.label,
    permissions: JSON.stringify(r.permissions),
    restrictions: r.restrictions === undefined ? null : JSON.stringify(r.restrictions),
    created_at: r.createdAt,
    rotated_at: r.rotatedAt ?? null,
    revoked_at: r.revokedAt ?? null,
    expires_at: r.expiresAt ?? null,
    last_used_ms: Number.isFinite(lastUsed) ? lastUsed : null,
  };
}

/**
 * What a commit compares: every field that a change writes, in a fixed order. Last
 * use is left out: batched touches land between a writer's read and its commit, and
 * must not make it start over.
 */
export function changeText(r: KeyRecord | undefined): string {
  if (r === undefined) return '';
  return JSON.stringify([
    r.id,
    r.hash,
    r.prefix,
    r.account,
    r.tier,
    r.label,
    r.permissions.chains,
    r.permissions.archive ?? null,
    r.permissions.allow,
    r.permissions.deny,
    r.restrictions ?? null,
    r.createdAt,
    r.rotatedAt ?? null,
    r.revokedAt ?? null,
    r.expiresAt ?? null,
    r.retired.map((x) => [x.hash, x.prefix, x.until]),
  ]);
}

/** An entry of the change log: its place (1, 2, 3 … without gaps) and who wrote it. */
export interface LoggedChange {
  readonly seq: number;
  readonly origin: string;
}

/**
 * What a reader that has read up to `seen` hears from the entries after it (in order):
 * each other writer's change, or everything once when the next entry it needed was
 * pruned unread. Its own entries (`origin`) it announced when it wrote them.
 */
export function changesSince<R extends LoggedChange>(
  seen: number,
  rows: readonly R[],
  origin: string,
  changeOf: (row: R) => StoreChange,
): { seen: number; changes: StoreChange[] } {
  const first = rows[0];
  if (first === undefined) return { seen, changes: [] };
  const last = (rows[rows.length - 1] as R).seq;
  if (first.seq !== seen + 1) return { seen: last, changes: [{ all: true }] };
  return { seen: last, changes: rows.filter((r) => r.origin !== origin).map(changeOf) };
}
