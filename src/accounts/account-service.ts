// Account operations with their input checks, shared by the CLI and the dashboard:
// create (optionally adopting keys that already carry the new name), disable,
// enable and delete; one-time sign-in tokens; account and operator sessions. Only
// SHA-256 digests of tokens and session ids reach the store. HTTP lives elsewhere.

import { ControlError } from '../control-errors.js';
import { generateId, hashKey } from '../auth/key-format.js';
import type { AccountResolver } from '../auth/key-service.js';
import { KeyInputError } from '../auth/key-store.js';
import type { KeyRecord, KeyStore } from '../auth/key-store.js';
import { csrfTokenFor, isSessionIdShape, isSigninTokenShape, newSessionId, newSigninToken, sameSecret } from '../auth/secrets.js';
import type { TierConfig } from '../config/types.js';
import { createHash } from 'node:crypto';
import {
  AccountNotFoundError,
  accountState,
  type AccountRecord,
  type AccountStore,
  type SessionKind,
  type SessionRecord,
} from './account-store.js';

export class AccountInputError extends ControlError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
    this.name = 'AccountInputError';
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;

/** What the service reads from config (replaced on reload). */
export interface AccountRules {
  readonly tiers: Readonly<Record<string, TierConfig>>;
  readonly sessionTtlMs: number;
  readonly signinTokenTtlMs: number;
}

export interface CreateAccountInput {
  name?: unknown;
  email?: unknown;
  /** A list, or a comma-separated string (CLI). */
  tiers?: unknown;
  defaultTier?: unknown;
}

/** A session as the dashboard sees it: its record, the account (account sessions) and its CSRF token. */
export interface OpenSession {
  readonly session: SessionRecord;
  readonly account: AccountRecord | undefined;
  readonly csrfToken: string;
}

/** Tokens last at least a minute and at most a week, whatever --ttl says. */
export const TOKEN_TTL_BOUNDS = { minMs: 60_000, maxMs: 7 * 86_400_000 } as const;

function list(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') {
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v;
  throw new AccountInputError('tiers must be a list of tier names, e.g. free,growth');
}

/** A digest of the admin token an operator session was opened with (changing the token ends such sessions). */
function grantOf(adminToken: string): string {
  return createHash('sha256').update(`noderouter operator grant\n${adminToken}`).digest('hex');
}

export class AccountService {
  constructor(
    readonly store: AccountStore,
    private readonly keys: KeyStore,
    private rules: AccountRules,
    private readonly now: () => number = Date.now,
  ) {}

  /** After a config reload. */
  configure(rules: AccountRules): void {
    this.rules = rules;
  }

  get sessionTtlMs(): number {
    return this.rules.sessionTtlMs;
  }

  private iso(ms = this.now()): string {
    return new Date(ms).toISOString();
  }

  async find(ref: string): Promise<AccountRecord> {
    const a = await this.store.getAccount(ref);
    if (a === undefined) throw new AccountNotFoundError(ref);
    return a;
  }

  /**
   * A key's `account` for what the operator typed: a dashboard account's id when the
   * text names one (a deleted one is refused), else the text itself.
   */
  readonly resolveForKeys: AccountResolver = async (ref, purpose) => {
    const a = await this.store.getAccount(ref);
    if (a === undefined) return ref;
    if (purpose === 'create' && accountState(a) === 'deleted')
      throw new KeyInputError(`account "${a.name}" is deleted: it gets no new keys`);
    return a.id;
  };

  async create(input: CreateAccountInput, options: { adoptKeys?: boolean } = {}): Promise<{ account: AccountRecord; adopted: number }> {
    const { name, email } = input;
    if (typeof name !== 'string' || !NAME.test(name) || /^acc_/i.test(name)) {
      throw new AccountInputError('name is required: up to 64 letters, digits, ".", "_", "@" or "-", not starting with "acc_"');
    }
    if (email !== undefined && email !== null && email !== '' && (typeof email !== 'string' || !EMAIL.test(email) || email.length > 254)) {
      throw new AccountInputError('email must look like name@example.com');
    }
    const configured = Object.keys(this.rules.tiers);
    const defaultGiven = input.defaultTier === undefined || input.defaultTier === null ? undefined : input.defaultTier;
    if (defaultGiven !== undefined && typeof defaultGiven !== 'string') throw new AccountInputError('default tier must be a tier name');
    // Least privilege by default: only the default tier, else the first tier of the config.
    const given = list(input.tiers);
    const first = given?.[0] ?? defaultGiven ?? configured[0];
    const tiers = given ?? (first === undefined ? [] : [first]);
    const unknown = tiers.filter((t) => this.rules.tiers[t] === undefined);
    if (first === undefined || tiers.length === 0 || unknown.length > 0) {
      throw new AccountInputError(
        `tiers must be among the configured tiers: ${configured.join(', ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}`,
      );
    }
    const defaultTier = defaultGiven ?? first;
    if (!tiers.includes(defaultTier))
      throw new AccountInputError(`default tier "${defaultTier}" must be one of the account's tiers: ${tiers.join(', ')}`);

    if ((await this.store.getAccount(name)) !== undefined)
      throw new AccountInputError(`an account named "${name}" already exists: choose another name`);
    // Keys made before the account existed may carry its name as a free-form account string.
    const legacy = await this.keys.list({ account: name });
    if (legacy.length > 0 && options.adoptKeys !== true) {
      throw new AccountInputError(
        `${legacy.length} existing key(s) carry the account "${name}": add --adopt-keys to make them this account's, or choose another name`,
      );
    }
    const account: AccountRecord = {
      id: generateId('acc'),
      name,
      email: typeof email === 'string' && email !== '' ? email : undefined,
      tiers: [...new Set(tiers)],
      defaultTier,
      createdAt: this.iso(),
      disabledAt: undefined,
      deletedAt: undefined,
    };
    await this.store.createAccount(account);
    for (const k of legacy) await this.keys.put({ ...k, account: account.id });
    return { account, adopted: legacy.length };
  }

  keysOf(account: AccountRecord): Promise<KeyRecord[]> {
    return this.keys.list({ account: account.id });
  }

  /** Disable (sign-in refused, sessions end; keys keep working), enable, or delete (keys revoked too; the name stays taken). */
  async setState(ref: string, action: 'disable' | 'enable' | 'delete'): Promise<AccountRecord> {
    const a = await this.find(ref);
    if (accountState(a) === 'deleted') throw new AccountInputError(`account "${a.name}" is deleted`);
    const at = this.iso();
    const updated = await this.store.updateAccount(a.id, (old) =>
      action === 'enable'
        ? { ...old, disabledAt: undefined }
        : action === 'disable'
          ? { ...old, disabledAt: old.disabledAt ?? at }
          : { ...old, deletedAt: at },
    );
    if (action === 'delete') {
      for (const k of await this.keysOf(a)) if (k.revokedAt === undefined) await this.keys.revoke(k.id);
    }
    return updated;
  }

  /** A one-time sign-in token for an active account; only its digest is stored. */
  async issueToken(ref: string, ttlMs?: number): Promise<{ token: string; account: AccountRecord; expiresAt: string }> {
    const account = await this.find(ref);
    const state = accountState(account);
    if (state !== 'active') throw new AccountInputError(`account "${account.name}" is ${state}: enable it first (accounts enable)`);
    const ttl = ttlMs ?? this.rules.signinTokenTtlMs;
    if (!Number.isInteger(ttl) || ttl < TOKEN_TTL_BOUNDS.minMs || ttl > TOKEN_TTL_BOUNDS.maxMs) {
      throw new AccountInputError('--ttl must be from 1m to 7d, e.g. 15m or 2h');
    }
    const token = newSigninToken();
    const now = this.now();
    const expiresAt = this.iso(now + ttl);
    await this.store.addToken({ hash: hashKey(token), accountId: account.id, createdAt: this.iso(now), expiresAt });
    return { token, account, expiresAt };
  }

  private async open(
    kind: SessionKind,
    accountId: string | undefined,
    grant: string | undefined,
  ): Promise<{ sessionId: string } & OpenSession> {
    const sessionId = newSessionId();
    const now = this.now();
    const session: SessionRecord = {
      hash: hashKey(sessionId),
      kind,
      accountId,
      grant,
      createdAt: this.iso(now),
      expiresAt: this.iso(now + this.rules.sessionTtlMs),
    };
    await this.store.addSession(session);
    const account = accountId === undefined ? undefined : await this.store.getAccount(accountId);
    return { sessionId, session, account, csrfToken: csrfTokenFor(sessionId) };
  }

  /**
   * Exchange a sign-in token for a session. Unknown, expired and used tokens, and
   * tokens of accounts no longer active, all answer undefined: one answer for all.
   */
  async signIn(token: unknown): Promise<({ sessionId: string } & OpenSession) | undefined> {
    if (!isSigninTokenShape(token)) return undefined;
    const t = await this.store.takeToken(hashKey(token));
    if (t === undefined) return undefined;
    const account = await this.store.getAccount(t.accountId);
    if (account === undefined || accountState(account) !== 'active') return undefined;
    return this.open('account', account.id, undefined);
  }

  /** An operator session for the right admin token; undefined for a wrong one or when none is configured. */
  async signInOperator(adminToken: string | undefined, given: unknown): Promise<({ sessionId: string } & OpenSession) | undefined> {
    if (adminToken === undefined || typeof given !== 'string' || given.length > 1024 || !sameSecret(adminToken, given)) return undefined;
    return this.open('operator', undefined, grantOf(adminToken));
  }

  /** The live session a cookie names, of the wanted kind; undefined when unknown, expired, or no longer allowed. */
  async session(sessionId: string | undefined, kind: SessionKind, adminToken?: string): Promise<OpenSession | undefined> {
    if (!isSessionIdShape(sessionId)) return undefined;
    const session = await this.store.getSession(hashKey(sessionId));
    if (session === undefined || session.kind !== kind) return undefined;
    if (kind === 'operator') {
      if (adminToken === undefined || session.grant === undefined || !sameSecret(session.grant, grantOf(adminToken))) return undefined;
      return { session, account: undefined, csrfToken: csrfTokenFor(sessionId) };
    }
    const account = session.accountId === undefined ? undefined : await this.store.getAccount(session.accountId);
    if (account === undefined || accountState(account) !== 'active') return undefined;
    return { session, account, csrfToken: csrfTokenFor(sessionId) };
  }

  async signOut(sessionId: string | undefined): Promise<void> {
    if (isSessionIdShape(sessionId)) await this.store.deleteSession(hashKey(sessionId));
  }
}
