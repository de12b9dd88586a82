// Dashboard accounts, sign-in tokens and sessions as the record's rows hold them, and
// back, the same for SQLite and PostgreSQL: the account's tiers as a JSON list, its
// name beside its case-folded form (the unique column), absent fields as NULL.

import { nameKey, type AccountRecord, type SessionKind, type SessionRecord, type SigninTokenRecord } from '../accounts/account-store.js';

export interface AccountRow {
  id: string;
  name: string;
  email: string | null;
  tiers: string;
  default_tier: string;
  created_at: string;
  disabled_at: string | null;
  deleted_at: string | null;
}

export interface TokenRow {
  hash: string;
  account_id: string;
  created_at: string;
  expires_at: string;
}

export interface SessionRow {
  hash: string;
  kind: SessionKind;
  account_id: string | null;
  grant_digest: string | null;
  created_at: string;
  expires_at: string;
}

/** name, name_key, email, tiers, default_tier, created_at, disabled_at, deleted_at, id. */
export type AccountParams = [string, string, string | null, string, string, string, string | null, string | null, string];

export const ACCOUNT_COLUMNS = 'id, name, email, tiers, default_tier, created_at, disabled_at, deleted_at';
export const TOKEN_COLUMNS = 'hash, account_id, created_at, expires_at';
export const SESSION_COLUMNS = 'hash, kind, account_id, grant_digest, created_at, expires_at';

export function accountOf(row: AccountRow): AccountRecord {
  return {
    id: row.id,
    name: row.name,
    email: row.email ?? undefined,
    tiers: JSON.parse(row.tiers) as string[],
    defaultTier: row.default_tier,
    createdAt: row.created_at,
    disabledAt: row.disabled_at ?? undefined,
    deletedAt: row.deleted_at ?? undefined,
  };
}

/** The values of an account row, in the INSERT's and the UPDATE's order (the id last). */
export function accountParams(a: AccountRecord): AccountParams {
  return [
    a.name,
    nameKey(a.name),
    a.email ?? null,
    JSON.stringify(a.tiers),
    a.defaultTier,
    a.createdAt,
    a.disabledAt ?? null,
    a.deletedAt ?? null,
    a.id,
  ];
}

export const tokenOf = (row: TokenRow): SigninTokenRecord => ({
  hash: row.hash,
  accountId: row.account_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

/** hash, account_id, created_at, expires_at. */
export const tokenParams = (t: SigninTokenRecord): [string, string, string, string] => [t.hash, t.accountId, t.createdAt, t.expiresAt];

export const sessionOf = (row: SessionRow): SessionRecord => ({
  hash: row.hash,
  kind: row.kind,
  accountId: row.account_id ?? undefined,
  grant: row.grant_digest ?? undefined,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

/** hash, kind, account_id, grant_digest, created_at, expires_at. */
export const sessionParams = (s: SessionRecord): [string, SessionKind, string | null, string | null, string, string] => [
  s.hash,
  s.kind,
  s.accountId ?? null,
  s.grant ?? null,
  s.createdAt,
  s.expiresAt,
];
