// What writing rows into a record would do, the same for SQLite and PostgreSQL: each
// row compared with what the record holds (new, the same, or different), names and
// hashes another row holds refused outright, differing rows refusing the whole write
// unless told to replace them, and the key changes a write tells running gateways
// through the change log. Reading what the record holds, and writing, is each
// database's own (sqlite-rows.ts, pg-rows.ts); this module touches no database.

import type { AccountRecord, SessionRecord, SigninTokenRecord } from '../accounts/account-store.js';
import { nameKey } from '../accounts/account-store.js';
import { changeBetween, type KeyRecord } from '../auth/key-store.js';
import { ControlError } from '../control-errors.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';
import type { UsageRow } from '../quota/usage.js';
import { changeText } from './key-rows.js';
import { noRows, rowName, type RecordRow, type WriteReport } from './record-rows.js';

/** Refused: rows the record holds differently (nothing was written). */
export class RecordConflictError extends ControlError {
  constructor(
    readonly differing: readonly string[],
    message: string,
  ) {
    super('RECORD_CONFLICT', message);
    this.name = 'RecordConflictError';
  }
}

export interface WriteOptions {
  /** Replace rows the record holds differently; without it any such row refuses the whole write. */
  readonly force?: boolean;
  readonly now?: () => number;
  /** Names the rows' source in a refusal ("keys.json", "the input"). */
  readonly source?: string;
}

export type Verdict = 'added' | 'same' | 'replaced';

/** Hashes per change-log entry: a bulk write is several entries, each small enough to read at once. */
export const HASHES_PER_ENTRY = 1_000;
/** Entries a write leaves in the change log (as every key store keeps). */
export const CHANGES_KEPT = 10_000;
/** Differing rows named in a refusal (the rest are counted). */
const NAMED = 10;

/** The usage counts a row holds (absent `invalid` is none). */
export type UsageCounts = Pick<UsageRow, 'calls' | 'errors' | 'limited' | 'invalid'>;

/** What the record holds where each row would go, read before anything is written. */
export interface HeldRows {
  key(id: string): KeyRecord | undefined;
  /** The key whose current or retired value has this hash. */
  hashOwner(hash: string): string | undefined;
  account(id: string): AccountRecord | undefined;
  /** The account whose name folds to this (nameKey). */
  nameOwner(nameKey: string): string | undefined;
  token(hash: string): SigninTokenRecord | undefined;
  session(hash: string): SessionRecord | undefined;
  usage(keyId: string, day: string, chain: string): UsageCounts | undefined;
  hold(id: string): NodeHoldRecord | undefined;
}

const tokenText = (t: SigninTokenRecord): string => JSON.stringify([t.hash, t.accountId, t.createdAt, t.expiresAt]);
const sessionText = (s: SessionRecord): string =>
  JSON.stringify([s.hash, s.kind, s.accountId ?? null, s.grant ?? null, s.createdAt, s.expiresAt]);
const accountText = (a: AccountRecord): string =>
  JSON.stringify([a.id, a.name, a.email ?? null, a.tiers, a.defaultTier, a.createdAt, a.disabledAt ?? null, a.deletedAt ?? null]);
const usageText = (u: UsageCounts): string => JSON.stringify([u.calls, u.errors, u.limited, u.invalid ?? 0]);
const holdText = (h: NodeHoldRecord): string => JSON.stringify([h.state, h.since, h.reason]);

const verdictOf = <T>(held: T | undefined, wanted: T, text: (v: T) => string): Verdict =>
  held === undefined ? 'added' : text(held) === text(wanted) ? 'same' : 'replaced';

/** What writing `r` would be; refuses a name or hash that another row holds (no flag can make that right). */
function compare(r: RecordRow, held: HeldRows): Verdict {
  switch (r.kind) {
    case 'key': {
      for (const hash of [r.key.hash, ...r.key.retired.map((x) => x.hash)]) {
        const owner = held.hashOwner(hash);
        if (owner !== undefined && owner !== r.key.id) {
          throw new ControlError(
            'RECORD_CONFLICT',
            `${rowName(r)}: one of its hashes is key ${owner}'s in the record: nothing was written`,
          );
        }
      }
      return verdictOf(held.key(r.key.id), r.key, changeText);
    }
    case 'account': {
      const owner = held.nameOwner(nameKey(r.account.name));
      if (owner !== undefined && owner !== r.account.id) {
        throw new ControlError('RECORD_CONFLICT', `${rowName(r)}: the name is account ${owner}'s in the record: nothing was written`);
      }
      return verdictOf(held.account(r.account.id), r.account, accountText);
    }
    case 'token':
      return verdictOf(held.token(r.token.hash), r.token, tokenText);
    case 'session':
      return verdictOf(held.session(r.session.hash), r.session, sessionText);
    case 'usage':
      return verdictOf<UsageCounts>(held.usage(r.keyId, r.usage.day, r.usage.chain), r.usage, usageText);
    case 'hold':
      return verdictOf(held.hold(r.id), r.hold, holdText);
  }
}

export interface WritePlan {
  /** Each row's verdict, in the rows' order. */
  readonly verdicts: readonly Verdict[];
  readonly report: WriteReport;
  /** Each key written as the record held it before (undefined: new). */
  readonly keysBefore: ReadonlyMap<string, KeyRecord | undefined>;
}

/** Every row compared with what the record holds; refused whole when any differs and `force` is not set. */
export function planWrite(rows: readonly RecordRow[], held: HeldRows, options: WriteOptions): WritePlan {
  const keysBefore = new Map<string, KeyRecord | undefined>();
  for (const r of rows) if (r.kind === 'key') keysBefore.set(r.key.id, held.key(r.key.id));
  const verdicts = rows.map((r) => compare(r, held));
  const differing = rows.filter((_, i) => verdicts[i] === 'replaced');
  if (differing.length > 0 && options.force !== true) {
    const named = differing.slice(0, NAMED).map(rowName);
    const more = differing.length > NAMED ? ` and ${differing.length - NAMED} more` : '';
    throw new RecordConflictError(
      differing.map(rowName),
      `${differing.length} row${differing.length === 1 ? '' : 's'} of ${options.source ?? 'the input'} differ from what the record holds (${named.join(', ')}${more}); nothing was written. Run again with --force to replace them`,
    );
  }
  const report: WriteReport = { added: noRows(), replaced: noRows(), same: noRows() };
  rows.forEach((r, i) => report[verdicts[i] as Verdict][r.kind]++);
  return { verdicts, report, keysBefore };
}

/** One change-log entry: the hashes of keys written, and those of them that no longer work. */
export interface LogEntry {
  readonly hashes: readonly string[];
  readonly invalid: readonly string[] | undefined;
}

/** The key changes of one write, told to running gateways as change-log entries. */
export class KeyChanges {
  private readonly hashes: string[] = [];
  private readonly invalid: string[] = [];

  /** A key written new or replaced (a key written the same is no change anyone announces). */
  add(before: KeyRecord | undefined, after: KeyRecord, now: number): void {
    const change = changeBetween(before, after, now);
    this.hashes.push(...change.hashes);
    this.invalid.push(...(change.invalid ?? []));
  }

  entries(): LogEntry[] {
    const out: LogEntry[] = [];
    for (let i = 0; i < this.hashes.length; i += HASHES_PER_ENTRY) {
      const hashes = this.hashes.slice(i, i + HASHES_PER_ENTRY);
      const gone = new Set(hashes);
      const invalid = this.invalid.filter((h) => gone.has(h));
      out.push({ hashes, invalid: invalid.length === 0 ? undefined : invalid });
    }
    return out;
  }
}
