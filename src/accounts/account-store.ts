// The account store contract: dashboard accounts, one-time sign-in tokens and
// sessions. Backends (a JSON file beside the key file, Redis under the store prefix)
// implement it; tokens and sessions are found by the SHA-256 of their secret, which
// is never stored. Input checks live in account-service.ts, not here.

import { ControlError } from '../control-errors.js';

export type AccountState = 'active' | 'disabled' | 'deleted';

export interface AccountRecord {
  /** `acc_` + 12 base62 characters; what the account's keys carry in their `account`. */
  readonly id: string;
  /** Unique (ignoring case), chosen by the operator; never reused, even after deletion. */
  readonly name: string;
  readonly email: string | undefined;
  /** Tiers the account may pick for new keys (the operator's rules). */
  readonly tiers: readonly string[];
  /** The tier the create form starts on. */
  readonly defaultTier: string;
  readonly createdAt: string;
  readonly disabledAt: string | undefined;
  readonly deletedAt: string | undefined;
}

export function accountState(a: AccountRecord): AccountState {
  if (a.deletedAt !== undefined) return 'deleted';
  if (a.disabledAt !== undefined) return 'disabled';
  return 'active';
}

/** A sign-in token: works once, until `expiresAt`. */
export interface SigninTokenRecord {
  readonly hash: string;
  readonly accountId: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

export type SessionKind = 'account' | 'operator';

export interface SessionRecord {
  readonly hash: string;
  readonly kind: SessionKind;
  /** The signed-in account (account sessions only). */
  readonly accountId: string | undefined;
  /** Operator sessions: a digest of the admin token they were opened with, so changing the token ends them. */
  readonly grant: string | undefined;
  readonly createdAt: string;
  /** Absolute: a session is never extended. */
  readonly expiresAt: string;
}

/** Everything an account store holds, for moving it into the record (`store migrate --from`). */
export interface AccountDump {
  readonly accounts: readonly AccountRecord[];
  readonly tokens: readonly SigninTokenRecord[];
  readonly sessions: readonly SessionRecord[];
}

export class AccountExistsError extends ControlError {
  constructor(readonly accountName: string) {
    super('ACCOUNT_EXISTS', `an account named "${accountName}" already exists (names are never reused): choose another name`);
    this.name = 'AccountExistsError';
  }
}

export class AccountNotFoundError extends ControlError {
  constructor(readonly ref: string) {
    super('ACCOUNT_NOT_FOUND', `no account with id or name "${ref}" (see: noderouter accounts list)`);
    this.name = 'AccountNotFoundError';
  }
}

export interface AccountStore {
  /** Adds an account; throws AccountExistsError when its name is taken, whatever the case. */
  createAccount(account: AccountRecord): Promise<void>;
  /** By id, or by name ignoring case. */
  getAccount(idOrName: string): Promise<AccountRecord | undefined>;
  /** Every account, oldest first. */
  listAccounts(): Promise<AccountRecord[]>;
  /** Read-modify-write of one account; throws AccountNotFoundError. The id and name never change. */
  updateAccount(id: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord>;
  addToken(token: SigninTokenRecord): Promise<void>;
  /** Removes the token and returns it when it is known and unexpired: a token works once, even across instances. */
  takeToken(hash: string): Promise<SigninTokenRecord | undefined>;
  addSession(session: SessionRecord): Promise<void>;
  /** An unexpired session, or undefined. */
  getSession(hash: string): Promise<SessionRecord | undefined>;
  deleteSession(hash: string): Promise<void>;
  close(): Promise<void>;
}

/** Whether a token or session has run out by the store's clock. */
export function expired(record: { readonly expiresAt: string }, now: number): boolean {
  return Date.parse(record.expiresAt) <= now;
}

/** Names compare without case: "Acme" and "acme" are one account. */
export function nameKey(name: string): string {
  return name.toLowerCase();
}
