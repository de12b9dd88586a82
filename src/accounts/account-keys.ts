// What a signed-in account may do with API keys: list its own, create one within the
// operator's rules (its allowed tiers; chains and archive only narrowed), rotate and
// revoke its own, and read its limits and usage. A key of another account is "not
// found", exactly like a key that does not exist. Checks shared with the CLI and the
// admin API stay in KeyService; this adds only what belongs to accounts.

import type { KeyService } from '../auth/key-service.js';
import { KeyInputError, KeyNotFoundError, keyState, type KeyRecord } from '../auth/key-store.js';
import type { TierConfig } from '../config/types.js';
import type { Limiter } from '../quota/limiter.js';
import type { AccountRecord } from './account-store.js';
import { series, totals, usageWindow, type UsageSeries, type UsageTotals } from './usage-summary.js';

/** Active keys one account may hold: a stolen session cannot fill the store. */
export const MAX_ACTIVE_KEYS = 100;

/** A tier's limits for display; null stands for unlimited (JSON has no Infinity). */
export interface LimitsView {
  readonly name: string;
  readonly rate: number | null;
  readonly burst: number | null;
  readonly daily: number | null;
  readonly monthly: number | null;
  readonly maxBatch: number | null;
  readonly archive: boolean;
  readonly wsConnections: number | null;
}

const finite = (n: number): number | null => (n === Infinity ? null : n);

export function limitsView(t: TierConfig): LimitsView {
  return {
    name: t.name,
    rate: finite(t.rate),
    burst: finite(t.burst),
    daily: finite(t.daily),
    monthly: finite(t.monthly),
    maxBatch: finite(t.maxBatch),
    archive: t.archive,
    wsConnections: finite(t.wsConnections),
  };
}

export interface KeyUsage extends UsageTotals {
  readonly id: string;
  readonly prefix: string;
  readonly label: string;
  readonly tier: string;
  readonly state: string;
  /** The key's own quotas (each key is held to its tier's), null = unlimited. */
  readonly quota: { readonly daily: number | null; readonly monthly: number | null };
}

export interface UsageReport {
  readonly window: { readonly today: string; readonly month: string };
  /** Limits of the account's tiers and of the tiers its keys are on. */
  readonly tiers: readonly LimitsView[];
  readonly totals: UsageTotals;
  readonly keys: readonly KeyUsage[];
  readonly series: UsageSeries;
}

export interface CreateOwnKeyInput {
  label?: unknown;
  tier?: unknown;
  /** Chain endpoint names; absent = every chain (now and later). */
  chains?: unknown;
  /** false narrows below the tier; true only where the tier has archive access. */
  archive?: unknown;
}

export interface AccountKeysEnv {
  readonly tiers: () => Readonly<Record<string, TierConfig>>;
  /** Names of the configured chain endpoints. */
  readonly chains: () => readonly string[];
  readonly now: () => number;
}

export class AccountKeys {
  constructor(
    private readonly keys: KeyService,
    private readonly limiter: Limiter,
    private readonly env: AccountKeysEnv,
  ) {}

  /** The account's keys, newest first. */
  async list(account: AccountRecord): Promise<KeyRecord[]> {
    const list = await this.keys.store.list({ account: account.id });
    return list.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /** One of the account's keys by id; anyone else's is not found. */
  async own(account: AccountRecord, id: string): Promise<KeyRecord> {
    const record = id.startsWith('key_') ? await this.keys.store.get(id) : undefined;
    if (record === undefined || record.account !== account.id) throw new KeyNotFoundError(id);
    return record;
  }

  async create(account: AccountRecord, input: CreateOwnKeyInput): Promise<{ record: KeyRecord; value: string }> {
    const tierName = input.tier ?? account.defaultTier;
    const tier = typeof tierName === 'string' && account.tiers.includes(tierName) ? this.env.tiers()[tierName] : undefined;
    if (tier === undefined) {
      const allowed = account.tiers.filter((t) => this.env.tiers()[t] !== undefined);
      throw new KeyInputError(`tier must be one of this account's tiers: ${allowed.join(', ')}`);
    }
    let chains: string[] | undefined;
    if (input.chains !== undefined && input.chains !== null) {
      const known = this.env.chains();
      if (
        !Array.isArray(input.chains) ||
        input.chains.length === 0 ||
        !input.chains.every((c) => typeof c === 'string' && known.includes(c))
      ) {
        throw new KeyInputError(`chains must list one or more of: ${known.join(', ')}`);
      }
      chains = [...new Set(input.chains as string[])];
    }
    if (input.archive !== undefined && typeof input.archive !== 'boolean') throw new KeyInputError('archive must be true or false');
    if (input.archive === true && !tier.archive) throw new KeyInputError(`tier ${tier.name} has no archive access`);
    const now = this.env.now();
    const active = (await this.list(account)).filter((k) => keyState(k, now) === 'active').length;
    if (active >= MAX_ACTIVE_KEYS) throw new KeyInputError(`an account may hold ${MAX_ACTIVE_KEYS} active keys: revoke one first`);
    return this.keys.create({
      account: account.id,
      tier: tier.name,
      label: typeof input.label === 'string' ? input.label.trim() : input.label,
      chains,
      // Only narrowing: `false` takes archive away; otherwise the key follows its tier.
      archive: input.archive === false ? false : undefined,
    });
  }

  async rotate(account: AccountRecord, id: string): Promise<{ record: KeyRecord; value: string }> {
    const record = await this.own(account, id);
    if (keyState(record, this.env.now()) !== 'active')
      throw new KeyInputError(`key ${record.prefix} is ${keyState(record, this.env.now())} and cannot be rotated`);
    return this.keys.rotate(record.id);
  }

  async revoke(account: AccountRecord, id: string): Promise<KeyRecord> {
    const record = await this.own(account, id);
    return this.keys.revoke(record.id);
  }

  /** Limits and usage of every key of the account, or of one of them. */
  async usage(account: AccountRecord, keyId?: string): Promise<UsageReport> {
    const w = usageWindow(this.env.now());
    const all = await this.list(account);
    const chosen = keyId === undefined ? all : [await this.own(account, keyId)];
    const rows = await Promise.all(chosen.map((k) => this.limiter.usage(k.id, w.since)));
    const configured = this.env.tiers();
    const tierNames = [...new Set([...account.tiers, ...chosen.map((k) => k.tier)])];
    const now = this.env.now();
    return {
      window: { today: w.today, month: w.month },
      tiers: tierNames.flatMap((n) => (configured[n] === undefined ? [] : [limitsView(configured[n])])),
      totals: totals(rows.flat(), w),
      keys: chosen.map((k, i) => {
        const t = configured[k.tier];
        return {
          id: k.id,
          prefix: k.prefix,
          label: k.label,
          tier: k.tier,
          state: keyState(k, now),
          ...totals(rows[i] ?? [], w),
          quota: { daily: t === undefined ? null : finite(t.daily), monthly: t === undefined ? null : finite(t.monthly) },
        };
      }),
      series: series(rows.flat(), w),
    };
  }
}
