// Key lifecycle operations with their input checks, shared by the CLI, the admin
// API and the account dashboard so all refuse the same mistakes with the same words:
// including the cap on an account's active keys. The dashboard and the admin API
// pass a guard that paces changes per account; the CLI (the operator's own console)
// does not. An `account` given by the operator may name a dashboard account (by id
// or name): the key then carries that account's id; any other string is kept as it is.
// Restrictions (where a key may be used from) are checked and made canonical here.

import type { KeysConfig, TierConfig } from '../config/types.js';
import { keyState, KeyInputError, KeyNotFoundError, type KeyPermissions, type KeyRecord, type KeyStore } from './key-store.js';
import { mergeRestrictions, RESTRICTION_FIELDS, type RestrictionField } from './restrictions.js';

const ACCOUNT = /^[A-Za-z0-9._@-]{1,128}$/;
const PATTERN = /^[A-Za-z0-9_*./{}:-]{1,128}$/;

export interface CreateKeyInput {
  account?: unknown;
  tier?: unknown;
  label?: unknown;
  expiresAt?: unknown;
  chains?: unknown;
  archive?: unknown;
  allow?: unknown;
  deny?: unknown;
  origins?: unknown;
  ips?: unknown;
  referrers?: unknown;
  contracts?: unknown;
  userAgents?: unknown;
}

/** New lists for some restrictions: each given field replaces that list (null, [] or "*" lift it); absent ones stay. */
export type RestrictInput = Partial<Record<RestrictionField, unknown>>;

const refuse = (field: RestrictionField, message: string): never => {
  throw new KeyInputError(`${field}: ${message}`, field);
};

function patterns(v: unknown, name: string, fallback: readonly string[]): readonly string[] {
  if (v === undefined || v === null) return fallback;
  const list =
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : v;
  if (!Array.isArray(list) || list.some((p) => typeof p !== 'string' || !PATTERN.test(p))) {
    throw new KeyInputError(`${name} must be a list of patterns like "l1", "hub-*" or "eth_get*"`);
  }
  return list as string[];
}

/** What a key's `account` holds for what the operator typed; throws KeyInputError to refuse a new key. */
export type AccountResolver = (ref: string, purpose: 'create' | 'list') => Promise<string>;

/** Asked before a key of `account` changes; throws (KeyChangesLimitedError) to refuse. */
export type KeyChangeGuard = (account: string) => Promise<void>;

/** What the service reads from `keys:` (replaced on reload). */
export type KeyRules = Pick<KeysConfig, 'rotationGraceSeconds' | 'maxActivePerAccount'>;

export class KeyService {
  constructor(
    readonly store: KeyStore,
    private tiers: Readonly<Record<string, TierConfig>>,
    private rules: KeyRules,
    private readonly resolveAccount: AccountResolver = (ref) => Promise.resolve(ref),
  ) {}

  /** Keys of one account (an account's id or name, or a free-form account string), or all. */
  async list(filter: { account?: string } = {}): Promise<KeyRecord[]> {
    if (filter.account === undefined) return this.store.list();
    return this.store.list({ account: await this.resolveAccount(filter.account, 'list') });
  }

  /** After a config reload. */
  configure(tiers: Readonly<Record<string, TierConfig>>, rules: KeyRules): void {
    this.tiers = tiers;
    this.rules = rules;
  }

  async create(input: CreateKeyInput, guard?: KeyChangeGuard): Promise<{ record: KeyRecord; value: string }> {
    if (typeof input.account !== 'string' || !ACCOUNT.test(input.account)) {
      throw new KeyInputError('account is required: letters, digits, ".", "_", "@" or "-"');
    }
    if (typeof input.tier !== 'string' || this.tiers[input.tier] === undefined) {
      throw new KeyInputError(`tier must be one of: ${Object.keys(this.tiers).join(', ')}`);
    }
    if (input.label !== undefined && (typeof input.label !== 'string' || input.label.length > 200)) {
      throw new KeyInputError('label must be a string of at most 200 characters');
    }
    let expiresAt: string | undefined;
    if (input.expiresAt !== undefined && input.expiresAt !== null && input.expiresAt !== '') {
      const t = typeof input.expiresAt === 'string' ? Date.parse(input.expiresAt) : NaN;
      if (Number.isNaN(t)) throw new KeyInputError('expiresAt must be a date like 2027-01-31 or 2027-01-31T12:00:00Z');
      if (t <= Date.now()) throw new KeyInputError('expiresAt must be in the future');
      expiresAt = new Date(t).toISOString();
    }
    if (input.archive !== undefined && typeof input.archive !== 'boolean') throw new KeyInputError('archive must be true or false');
    const permissions: KeyPermissions = {
      chains: patterns(input.chains, 'chains', ['*']),
      archive: input.archive,
      allow: patterns(input.allow, 'allow', ['*']),
      deny: patterns(input.deny, 'deny', []),
    };
    const restrictions = mergeRestrictions(input, undefined, refuse);
    const account = await this.resolveAccount(input.account, 'create');
    const max = this.rules.maxActivePerAccount;
    const now = Date.now();
    const active = (await this.store.list({ account })).filter((k) => keyState(k, now) === 'active').length;
    if (active >= max) throw new KeyInputError(`an account may hold ${max} active keys: revoke one first`);
    await guard?.(account);
    return this.store.create({
      account,
      tier: input.tier,
      label: input.label ?? '',
      permissions,
      restrictions,
      expiresAt,
    });
  }

  /** Change where a key may be used from; the new lists apply from the key's next request. */
  async restrict(ref: string, input: RestrictInput, guard?: KeyChangeGuard): Promise<KeyRecord> {
    if (!RESTRICTION_FIELDS.some((f) => input[f] !== undefined)) {
      throw new KeyInputError(`name at least one restriction to change: ${RESTRICTION_FIELDS.join(', ')}`);
    }
    const record = await this.mustGet(ref);
    if (record.revokedAt !== undefined) throw new KeyInputError(`key ${record.prefix} is revoked and cannot be changed`);
    // Checked before anything is paced or written: a mistake costs nothing.
    mergeRestrictions(input, record.restrictions, refuse);
    await guard?.(record.account);
    return this.store.restrict(record.id, (current) => mergeRestrictions(input, current, refuse));
  }

  async rotate(ref: string, graceSeconds?: unknown, guard?: KeyChangeGuard): Promise<{ record: KeyRecord; value: string }> {
    if (graceSeconds !== undefined && (typeof graceSeconds !== 'number' || !Number.isInteger(graceSeconds) || graceSeconds < 0)) {
      throw new KeyInputError('graceSeconds must be a whole number of seconds, 0 or more');
    }
    const record = await this.mustGet(ref);
    if (record.revokedAt !== undefined) throw new KeyInputError(`key ${record.prefix} is revoked and cannot be rotated`);
    await guard?.(record.account);
    return this.store.rotate(record.id, graceSeconds ?? this.rules.rotationGraceSeconds);
  }

  /** Revoking a revoked key changes nothing, and costs the guard nothing. */
  async revoke(ref: string, guard?: KeyChangeGuard): Promise<KeyRecord> {
    const record = await this.mustGet(ref);
    if (record.revokedAt !== undefined) return record;
    await guard?.(record.account);
    return this.store.revoke(record.id);
  }

  private async mustGet(ref: string): Promise<KeyRecord> {
    const record = await this.store.get(ref);
    if (record === undefined) throw new KeyNotFoundError(ref);
    return record;
  }
}
