// What a signed-in account may do with API keys: list its own, create one within the
// operator's rules (its allowed tiers; chains and archive only narrowed), restrict
// where each may be used from, rotate and revoke its own (paced per account, within
// the cap on active keys), and read its
// limits and usage (from the record's usage history, as of the gateways' last flush):
// each key's, all of them per tier, revoked keys included, and per method. A key of
// another account is "not found", exactly like a key that does not exist.
// Checks shared with the CLI and the admin API stay in KeyService.

import type { KeyChangeGuard, KeyService, RestrictInput } from '../auth/key-service.js';
import { RESTRICTION_FIELDS } from '../auth/restrictions.js';
import { KeyInputError, KeyNotFoundError, keyState, type KeyRecord } from '../auth/key-store.js';
import type { TierConfig } from '../config/types.js';
import type { UsageHistory } from '../quota/usage-history.js';
import { DAY_MS, dayRows, methodRows, type DayUsage, type MethodUsage } from '../quota/usage-report.js';
import type { AccountRecord } from './account-store.js';
import { series, totals, usageWindow, type UsageSeries, type UsageTotals } from './usage-summary.js';

/** Limits on numbers for display; null stands for unlimited (JSON has no Infinity). */
export interface AccountLimitsView {
  readonly rate: number | null;
  readonly burst: number | null;
  readonly daily: number | null;
  readonly monthly: number | null;
}

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
  /** What all of an account's keys on the tier get together. */
  readonly account: AccountLimitsView;
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
    account: {
      rate: finite(t.account.rate),
      burst: finite(t.account.burst),
      daily: finite(t.account.daily),
      monthly: finite(t.account.monthly),
    },
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

/** All of the account's keys on one tier (revoked ones included) against the account's quotas there. */
export interface TierUsage extends UsageTotals {
  readonly tier: string;
  readonly quota: { readonly daily: number | null; readonly monthly: number | null };
}

export interface UsageReport {
  readonly window: { readonly today: string; readonly month: string };
  /** Limits of the account's tiers and of the tiers its keys are on. */
  readonly tiers: readonly LimitsView[];
  readonly totals: UsageTotals;
  readonly keys: readonly KeyUsage[];
  /** Per tier the account's keys are on (empty when the report is about one key). */
  readonly byTier: readonly TierUsage[];
  readonly series: UsageSeries;
  /** The series' 30 days per method, the busiest first. */
  readonly methods: readonly MethodUsage[];
  /** How far behind the calls the figures may be: usage history is written every usage.flushInterval. */
  readonly lagSeconds: number;
}

export interface CreateOwnKeyInput {
  label?: unknown;
  tier?: unknown;
  /** Chain endpoint names; absent = every chain (now and later). */
  chains?: unknown;
  /** false narrows below the tier; true only where the tier has archive access. */
  archive?: unknown;
  origins?: unknown;
  ips?: unknown;
  referrers?: unknown;
  contracts?: unknown;
  userAgents?: unknown;
}

/** Only the restriction fields of a body: nothing else of a key changes this way. */
function restrictionsOf(input: Readonly<Record<string, unknown>>): RestrictInput {
  const out: RestrictInput = {};
  for (const f of RESTRICTION_FIELDS) if (input[f] !== undefined) out[f] = input[f];
  return out;
}

export interface AccountKeysEnv {
  readonly tiers: () => Readonly<Record<string, TierConfig>>;
  /** Names of the configured chain endpoints. */
  readonly chains: () => readonly string[];
  readonly now: () => number;
  /** Paces key changes per account (keys.changesPerHour). */
  readonly changes: KeyChangeGuard;
  /** usage.flushInterval: how far behind the calls usage history may be. */
  readonly usageLagMs: () => number;
}

export class AccountKeys {
  constructor(
    private readonly keys: KeyService,
    private readonly history: UsageHistory,
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
    return this.keys.create(
      {
        account: account.id,
        tier: tier.name,
        label: typeof input.label === 'string' ? input.label.trim() : input.label,
        chains,
        // Only narrowing: `false` takes archive away; otherwise the key follows its tier.
        archive: input.archive === false ? false : undefined,
        ...restrictionsOf(input as Record<string, unknown>),
      },
      this.env.changes,
    );
  }

  /** Change where one of the account's keys may be used from (paced like other key changes). */
  async restrict(account: AccountRecord, id: string, input: Readonly<Record<string, unknown>>): Promise<KeyRecord> {
    const record = await this.own(account, id);
    return this.keys.restrict(record.id, restrictionsOf(input), this.env.changes);
  }

  async rotate(account: AccountRecord, id: string): Promise<{ record: KeyRecord; value: string }> {
    const record = await this.own(account, id);
    if (keyState(record, this.env.now()) !== 'active')
      throw new KeyInputError(`key ${record.prefix} is ${keyState(record, this.env.now())} and cannot be rotated`);
    return this.keys.rotate(record.id, undefined, this.env.changes);
  }

  async revoke(account: AccountRecord, id: string): Promise<KeyRecord> {
    const record = await this.own(account, id);
    return this.keys.revoke(record.id, this.env.changes);
  }

  /** Limits and usage of every key of the account, or of one of them. */
  async usage(account: AccountRecord, keyId?: string): Promise<UsageReport> {
    const now = this.env.now();
    const w = usageWindow(now);
    const all = await this.list(account);
    const chosen = keyId === undefined ? all : [await this.own(account, keyId)];
    // One read for all of the account's keys; a key's rows carry the account they were made
    // under: its id, or its name for keys adopted from before it existed.
    const range = {
      ...(keyId === undefined ? { account: [account.id, account.name] } : { keyId: chosen[0]?.id }),
      // Through the end of today: the window's days whole.
      to: Date.parse(`${w.today}T00:00:00Z`) + DAY_MS,
    };
    const [days, methods] = await Promise.all([
      this.history.read({ ...range, from: Date.parse(`${w.since}T00:00:00Z`), by: ['key', 'chain', 'outcome'], step: 'day' }),
      this.history.read({ ...range, from: Date.parse(`${w.first}T00:00:00Z`), by: ['method', 'outcome'], step: 'total' }),
    ]);
    const rows = chosen.map((k) => dayRows(days.filter((r) => r.keyId === k.id)));
    const configured = this.env.tiers();
    const tierNames = [...new Set([...account.tiers, ...chosen.map((k) => k.tier)])];
    const mine = rows.flat();
    return {
      window: { today: w.today, month: w.month },
      tiers: tierNames.flatMap((n) => (configured[n] === undefined ? [] : [limitsView(configured[n])])),
      totals: totals(mine, w),
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
      byTier: keyId === undefined ? byTier(chosen, rows, configured, w) : [],
      series: series(mine, w),
      methods: methodRows(methods),
      lagSeconds: Math.ceil(this.env.usageLagMs() / 1000),
    };
  }
}

/** Each tier's keys' rows added up, against the account's quotas on that tier. */
function byTier(
  keys: readonly KeyRecord[],
  rows: ReadonlyArray<readonly DayUsage[]>,
  configured: Readonly<Record<string, TierConfig>>,
  w: ReturnType<typeof usageWindow>,
): TierUsage[] {
  const grouped = new Map<string, DayUsage[]>();
  keys.forEach((k, i) => {
    const list = grouped.get(k.tier) ?? [];
    list.push(...(rows[i] ?? []));
    grouped.set(k.tier, list);
  });
  return [...grouped].map(([tier, list]) => {
    const t = configured[tier];
    return {
      tier,
      ...totals(list, w),
      quota: { daily: t === undefined ? null : finite(t.account.daily), monthly: t === undefined ? null : finite(t.account.monthly) },
    };
  });
}
