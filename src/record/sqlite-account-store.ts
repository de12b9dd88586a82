// Dashboard accounts, sign-in tokens and sessions in the SQLite record. Names are
// unique ignoring case by a unique column of their case-folded form, so two processes
// creating one name at once cannot both succeed; an update reads and writes in one
// IMMEDIATE transaction, so concurrent updates all land. Tokens and sessions are kept
// by the SHA-256 of their secret, checked against the store's clock on every read,
// and expired ones are swept on every write (as the file store drops them).

import {
  AccountExistsError,
  AccountNotFoundError,
  expired,
  nameKey,
  type AccountRecord,
  type AccountStore,
  type SessionKind,
  type SessionRecord,
  type SigninTokenRecord,
} from '../accounts/account-store.js';
import type { SqliteDatabase } from './sqlite-database.js';

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

export type AccountParams = [string, string, string | null, string, string, string, string | null, string | null, string];

export const ACCOUNT_COLUMNS = 'id, name, email, tiers, default_tier, created_at, disabled_at, deleted_at';

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

export const sessionOf = (row: SessionRow): SessionRecord => ({
  hash: row.hash,
  kind: row.kind,
  accountId: row.account_id ?? undefined,
  grant: row.grant_digest ?? undefined,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

/** SQLite's answer when a unique column already holds the value. */
const isUniqueViolation = (err: unknown): boolean =>
  (err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE' || (err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY';

export class SqliteAccountStore implements AccountStore {
  private readonly byIdStmt;
  private readonly byNameStmt;
  private readonly allStmt;
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly addTokenStmt;
  private readonly takeTokenStmt;
  private readonly addSessionStmt;
  private readonly getSessionStmt;
  private readonly deleteSessionStmt;
  private readonly sweepTokensStmt;
  private readonly sweepSessionsStmt;
  private readonly updateTx: (id: string, change: (a: AccountRecord) => AccountRecord) => AccountRecord;
  private readonly addTokenTx: (token: SigninTokenRecord) => void;
  private readonly addSessionTx: (session: SessionRecord) => void;

  /** Over an open record (which the caller closes, after the store). */
  constructor(
    db: SqliteDatabase,
    private readonly now: () => number = Date.now,
  ) {
    this.byIdStmt = db.statement<[string], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`);
    this.byNameStmt = db.statement<[string], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE name_key = ?`);
    this.allStmt = db.statement<[], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, id`);
    this.insertStmt = db.statement<AccountParams>(
      'INSERT INTO accounts (name, name_key, email, tiers, default_tier, created_at, disabled_at, deleted_at, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.updateStmt = db.statement<AccountParams>(
      `UPDATE accounts SET name = ?, name_key = ?, email = ?, tiers = ?, default_tier = ?, created_at = ?, disabled_at = ?, deleted_at = ?
       WHERE id = ?`,
    );
    this.addTokenStmt = db.statement<[string, string, string, string]>(
      'INSERT OR REPLACE INTO signin_tokens (hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
    );
    // One statement: of two takers at once, only one gets the row.
    this.takeTokenStmt = db.statement<[string], TokenRow>(
      'DELETE FROM signin_tokens WHERE hash = ? RETURNING hash, account_id, created_at, expires_at',
    );
    this.addSessionStmt = db.statement<[string, SessionKind, string | null, string | null, string, string]>(
      'INSERT OR REPLACE INTO sessions (hash, kind, account_id, grant_digest, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.getSessionStmt = db.statement<[string], SessionRow>(
      'SELECT hash, kind, account_id, grant_digest, created_at, expires_at FROM sessions WHERE hash = ?',
    );
    this.deleteSessionStmt = db.statement<[string]>('DELETE FROM sessions WHERE hash = ?');
    this.sweepTokensStmt = db.statement<[string]>('DELETE FROM signin_tokens WHERE expires_at <= ?');
    this.sweepSessionsStmt = db.statement<[string]>('DELETE FROM sessions WHERE expires_at <= ?');
    this.updateTx = db.writer((id, change) => {
      const row = this.byIdStmt.get(id);
      if (row === undefined) throw new AccountNotFoundError(id);
      const old = accountOf(row);
      const updated = { ...change(old), id: old.id, name: old.name };
      this.updateStmt.run(...accountParams(updated));
      return updated;
    });
    this.addTokenTx = db.writer((t) => {
      this.sweep();
      this.addTokenStmt.run(t.hash, t.accountId, t.createdAt, t.expiresAt);
    });
    this.addSessionTx = db.writer((s) => {
      this.sweep();
      this.addSessionStmt.run(s.hash, s.kind, s.accountId ?? null, s.grant ?? null, s.createdAt, s.expiresAt);
    });
  }

  /** Expired tokens and sessions can never be used again: dropped with the next one added. */
  private sweep(): void {
    const at = new Date(this.now()).toISOString();
    this.sweepTokensStmt.run(at);
    this.sweepSessionsStmt.run(at);
  }

  async createAccount(account: AccountRecord): Promise<void> {
    try {
      this.insertStmt.run(...accountParams(account));
    } catch (err) {
      // The name (whatever its case) or the id is taken.
      if (isUniqueViolation(err)) throw new AccountExistsError(account.name);
      throw err;
    }
  }

  async getAccount(ref: string): Promise<AccountRecord | undefined> {
    const row = this.byIdStmt.get(ref) ?? this.byNameStmt.get(nameKey(ref));
    return row === undefined ? undefined : accountOf(row);
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return this.allStmt.all().map(accountOf);
  }

  async updateAccount(id: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord> {
    return this.updateTx(id, change);
  }

  async addToken(token: SigninTokenRecord): Promise<void> {
    this.addTokenTx(token);
  }

  async takeToken(hash: string): Promise<SigninTokenRecord | undefined> {
    const row = this.takeTokenStmt.get(hash);
    if (row === undefined) return undefined;
    const token = tokenOf(row);
    return expired(token, this.now()) ? undefined : token;
  }

  async addSession(session: SessionRecord): Promise<void> {
    this.addSessionTx(session);
  }

  async getSession(hash: string): Promise<SessionRecord | undefined> {
    const row = this.getSessionStmt.get(hash);
    if (row === undefined) return undefined;
    const session = sessionOf(row);
    return expired(session, this.now()) ? undefined : session;
  }

  async deleteSession(hash: string): Promise<void> {
    this.deleteSessionStmt.run(hash);
  }

  async close(): Promise<void> {
    // The connection belongs to whoever opened the record.
  }
}
