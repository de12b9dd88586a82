// Dashboard accounts, sign-in tokens and sessions in the PostgreSQL record, shared by
// many instances. Names are unique ignoring case by a unique column of their
// case-folded form, so two instances creating one name at once cannot both succeed;
// an update reads the row FOR UPDATE and writes it in one transaction, so concurrent
// updates all land. Tokens and sessions are kept by the SHA-256 of their secret,
// checked against the store's clock on every read, and expired ones are swept on every
// write (as the SQLite and file stores drop them); a token is taken by one DELETE, so
// of two instances taking it at once only one gets it.

import {
  AccountExistsError,
  AccountNotFoundError,
  expired,
  nameKey,
  type AccountRecord,
  type AccountStore,
  type SessionRecord,
  type SigninTokenRecord,
} from '../accounts/account-store.js';
import {
  ACCOUNT_COLUMNS,
  accountOf,
  accountParams,
  SESSION_COLUMNS,
  sessionOf,
  sessionParams,
  TOKEN_COLUMNS,
  tokenOf,
  tokenParams,
  type AccountRow,
  type SessionRow,
  type TokenRow,
} from './account-rows.js';
import type { PgDatabase } from './pg-database.js';

/** PostgreSQL's answer when a unique column already holds the value. */
const isUniqueViolation = (err: unknown): boolean => (err as { code?: unknown }).code === '23505';

/** The statement texts, with the record's schema; parameters in accountParams' order (pg-rows.ts writes with them too). */
export function accountStatements(db: PgDatabase) {
  const accounts = db.table('accounts');
  const tokens = db.table('signin_tokens');
  const sessions = db.table('sessions');
  return {
    // By id first: an id wins over another account's name that reads the same.
    byRef: `SELECT ${ACCOUNT_COLUMNS} FROM ${accounts} WHERE id = $1 OR name_key = $2 ORDER BY id = $1 DESC LIMIT 1`,
    byIdForUpdate: `SELECT ${ACCOUNT_COLUMNS} FROM ${accounts} WHERE id = $1 FOR UPDATE`,
    all: `SELECT ${ACCOUNT_COLUMNS} FROM ${accounts} ORDER BY created_at, id`,
    insert: `INSERT INTO ${accounts} (name, name_key, email, tiers, default_tier, created_at, disabled_at, deleted_at, id)
      VALUES ($1, $2, $3, $4::jsonb, $5, $6::timestamptz, $7::timestamptz, $8::timestamptz, $9)`,
    update: `UPDATE ${accounts} SET name = $1, name_key = $2, email = $3, tiers = $4::jsonb, default_tier = $5,
      created_at = $6::timestamptz, disabled_at = $7::timestamptz, deleted_at = $8::timestamptz WHERE id = $9`,
    addToken: `INSERT INTO ${tokens} (${TOKEN_COLUMNS}) VALUES ($1, $2, $3::timestamptz, $4::timestamptz)
      ON CONFLICT (hash) DO UPDATE SET account_id = excluded.account_id, created_at = excluded.created_at, expires_at = excluded.expires_at`,
    takeToken: `DELETE FROM ${tokens} WHERE hash = $1 RETURNING ${TOKEN_COLUMNS}`,
    addSession: `INSERT INTO ${sessions} (${SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5::timestamptz, $6::timestamptz)
      ON CONFLICT (hash) DO UPDATE SET kind = excluded.kind, account_id = excluded.account_id, grant_digest = excluded.grant_digest,
      created_at = excluded.created_at, expires_at = excluded.expires_at`,
    getSession: `SELECT ${SESSION_COLUMNS} FROM ${sessions} WHERE hash = $1`,
    deleteSession: `DELETE FROM ${sessions} WHERE hash = $1`,
    sweep: `WITH t AS (DELETE FROM ${tokens} WHERE expires_at <= $1::timestamptz) DELETE FROM ${sessions} WHERE expires_at <= $1::timestamptz`,
  };
}

export class PgAccountStore implements AccountStore {
  private readonly sql: ReturnType<typeof accountStatements>;

  /** Over an open record (which the caller closes, after the store). */
  constructor(
    private readonly db: PgDatabase,
    private readonly now: () => number = Date.now,
  ) {
    this.sql = accountStatements(db);
  }

  /**
   * Expired tokens and sessions can never be used again: dropped with the next one
   * added, in a statement of their own (no transaction holds their rows meanwhile).
   */
  private async sweep(): Promise<void> {
    await this.db.query(this.sql.sweep, [new Date(this.now()).toISOString()]);
  }

  async createAccount(account: AccountRecord): Promise<void> {
    try {
      await this.db.query(this.sql.insert, accountParams(account));
    } catch (err) {
      // The name (whatever its case) or the id is taken.
      if (isUniqueViolation(err)) throw new AccountExistsError(account.name);
      throw err;
    }
  }

  async getAccount(ref: string): Promise<AccountRecord | undefined> {
    const [row] = await this.db.query<AccountRow>(this.sql.byRef, [ref, nameKey(ref)]);
    return row === undefined ? undefined : accountOf(row);
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return (await this.db.query<AccountRow>(this.sql.all, [])).map(accountOf);
  }

  updateAccount(id: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<AccountRow>(this.sql.byIdForUpdate, [id]);
      if (row === undefined) throw new AccountNotFoundError(id);
      const old = accountOf(row);
      const updated = { ...change(old), id: old.id, name: old.name };
      await tx.query(this.sql.update, accountParams(updated));
      return updated;
    });
  }

  async addToken(token: SigninTokenRecord): Promise<void> {
    await this.sweep();
    await this.db.query(this.sql.addToken, tokenParams(token));
  }

  async takeToken(hash: string): Promise<SigninTokenRecord | undefined> {
    const [row] = await this.db.query<TokenRow>(this.sql.takeToken, [hash]);
    if (row === undefined) return undefined;
    const token = tokenOf(row);
    return expired(token, this.now()) ? undefined : token;
  }

  async addSession(session: SessionRecord): Promise<void> {
    await this.sweep();
    await this.db.query(this.sql.addSession, sessionParams(session));
  }

  async getSession(hash: string): Promise<SessionRecord | undefined> {
    const [row] = await this.db.query<SessionRow>(this.sql.getSession, [hash]);
    if (row === undefined) return undefined;
    const session = sessionOf(row);
    return expired(session, this.now()) ? undefined : session;
  }

  async deleteSession(hash: string): Promise<void> {
    await this.db.query(this.sql.deleteSession, [hash]);
  }

  async close(): Promise<void> {
    // The connection belongs to whoever opened the record.
  }
}
