// Key lifecycle operations with their input checks, shared by the CLI, the admin
// API and the account dashboard so all refuse the same mistakes with the same words.
// An `account` given by the operator may name a dashboard account (by id or name):
// the key then carries that account's id; any other string is kept as it is.

import type { TierConfig } from '../config/types.js';
import { KeyInputError, type KeyPermissions, type KeyRecord, type KeyStore } from './key-store.js';

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
}

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

export class KeyService {
  constructor(
    readonly store: KeyStore,
    private tiers: Readonly<Record<string, TierConfig>>,
    private graceSeconds: number,
    private readonly resolveAccount: AccountResolver = (ref) => Promise.resolve(ref),
  ) {}

  /** Keys of one account (an account's id or name, or a free-form account string), or all. */
  async list(filter: { account?: string } = {}): Promise<KeyRecord[]> {
    if (filter.account === undefined) return this.store.list();
    return this.store.list({ account: await this.resolveAccount(filter.account, 'list') });
  }

  /** After a config reload. */
  configure(tiers: Readonly<Record<string, TierConfig>>, graceSeconds: number): void {
    this.tiers = tiers;
    this.graceSeconds = graceSeconds;
  }

  async create(input: CreateKeyInput): Promise<{ record: KeyRecord; value: string }> {
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
      archive: input.archive as boolean | undefined,
      allow: patterns(input.allow, 'allow', ['*']),
      deny: patterns(input.deny, 'deny', []),
    };
    return this.store.create({
      account: await this.resolveAccount(input.account, 'create'),
      tier: input.tier,
      label: (input.label as string | undefined) ?? '',
      permissions,
      expiresAt,
    });
  }

  rotate(ref: string, graceSeconds?: unknown): Promise<{ record: KeyRecord; value: string }> {
    if (graceSeconds !== undefined && (typeof graceSeconds !== 'number' || !Number.isInteger(graceSeconds) || graceSeconds < 0)) {
      throw new KeyInputError('graceSeconds must be a whole number of seconds, 0 or more');
    }
    return this.store.rotate(ref, (graceSeconds as number | undefined) ?? this.graceSeconds);
  }

  revoke(ref: string): Promise<KeyRecord> {
    return this.store.revoke(ref);
  }
}
