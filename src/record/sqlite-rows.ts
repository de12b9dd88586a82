// Every row of a SQLite record read out, and rows written in, whole: what export,
// import and adoption move. A write is one IMMEDIATE transaction that first compares
// each row with what the record holds (the same, new, or different) and writes nothing
// when any differs unless told to replace; key changes go to the change log like any
// other commit (running gateways drop those hashes), and a key's last use only moves
// forward. Names and hashes another row holds are refused, never overwritten.

import type { AccountRecord, SessionRecord, SigninTokenRecord } from '../accounts/account-store.js';
import { nameKey } from '../accounts/account-store.js';
import { changeBetween, type KeyRecord } from '../auth/key-store.js';
import { ControlError } from '../control-errors.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';
import type { UsageRow } from '../quota/usage.js';
import { noRows, rowName, type RecordRow, type RecordRows, type WriteReport } from './record-rows.js';
import {
  ACCOUNT_COLUMNS,
  accountOf,
  accountParams,
  sessionOf,
  tokenOf,
  type AccountParams,
  type AccountRow,
  type SessionRow,
  type TokenRow,
} from './account-rows.js';
import { appliedMigrations } from './migrations.js';
import { SqliteDatabase } from './sqlite-database.js';
import {
  changeText,
  INSERT_KEY,
  INSERT_RETIRED,
  KEY_COLUMNS,
  recordOf,
  rowOf,
  UPDATE_KEY,
  type KeyRow,
  type RetiredRow,
} from './key-rows.js';
import { readUsage } from './sqlite-usage-store.js';

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

/** Hashes per change-log entry: a bulk write is several entries, each small enough to read at once. */
const HASHES_PER_ENTRY = 1_000;
const CHANGES_KEPT = 10_000;
/** Differing rows named in a refusal (the rest are counted). */
const NAMED = 10;

const tokenText = (t: SigninTokenRecord): string => JSON.stringify([t.hash, t.accountId, t.createdAt, t.expiresAt]);
const sessionText = (s: SessionRecord): string =>
  JSON.stringify([s.hash, s.kind, s.accountId ?? null, s.grant ?? null, s.createdAt, s.expiresAt]);
const accountText = (a: AccountRecord): string =>
  JSON.stringify([a.id, a.name, a.email ?? null, a.tiers, a.defaultTier, a.createdAt, a.disabledAt ?? null, a.deletedAt ?? null]);
const usageText = (u: Pick<UsageRow, 'calls' | 'errors' | 'limited' | 'invalid'>): string =>
  JSON.stringify([u.calls, u.errors, u.limited, u.invalid ?? 0]);
const holdText = (h: NodeHoldRecord): string => JSON.stringify([h.state, h.since, h.reason]);

/** Every row of the record, kind by kind in ROW_KINDS' order, each kind in a fixed order. */
export function readRows(db: SqliteDatabase): RecordRow[] {
  const rows: RecordRow[] = [];
  for (const a of db.statement<[], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, id`).all()) {
    rows.push({ kind: 'account', account: accountOf(a) });
  }
  const retired = new Map<string, RetiredRow[]>();
  for (const r of db
    .statement<[], RetiredRow>('SELECT key_id, hash, prefix, until FROM retired_key_values ORDER BY key_id, position')
    .all()) {
    const list = retired.get(r.key_id);
    if (list === undefined) retired.set(r.key_id, [r]);
    else list.push(r);
  }
  for (const k of db.statement<[], KeyRow>(`SELECT ${KEY_COLUMNS} FROM keys ORDER BY created_at, id`).all()) {
    rows.push({ kind: 'key', key: recordOf(k, retired.get(k.id) ?? []) });
  }
  for (const t of db.statement<[], TokenRow>('SELECT hash, account_id, created_at, expires_at FROM signin_tokens ORDER BY hash').all()) {
    rows.push({ kind: 'token', token: tokenOf(t) });
  }
  for (const s of db
    .statement<[], SessionRow>('SELECT hash, kind, account_id, grant_digest, created_at, expires_at FROM sessions ORDER BY hash')
    .all()) {
    rows.push({ kind: 'session', session: sessionOf(s) });
  }
  for (const [keyId, list] of Object.entries(readUsage(db))) for (const usage of list) rows.push({ kind: 'usage', keyId, usage });
  for (const h of db
    .statement<[], { id: string; state: 'cordoned' | 'draining'; since: string; reason: string }>(
      'SELECT id, state, since, reason FROM node_holds ORDER BY id',
    )
    .all()) {
    rows.push({ kind: 'hold', id: h.id, hold: { state: h.state, since: h.since, reason: h.reason } });
  }
  return rows;
}

/** The rows of the SQLite record at `path` (opened, its migrations applied, until close). */
export function sqliteRows(path: string): RecordRows {
  const db = SqliteDatabase.open(path);
  return {
    name: `${db.path} (sqlite)`,
    applied: db.applied,
    version: appliedMigrations(db.db).at(-1) ?? 0,
    read: async () => readRows(db),
    write: async (rows, options) => writeRows(db, rows, options),
    close: async () => db.close(),
  };
}

type Verdict = 'added' | 'same' | 'replaced';

/** Writes `rows` in one transaction; refuses (writing nothing) when any differs from the record and `force` is not set. */
export function writeRows(db: SqliteDatabase, rows: readonly RecordRow[], options: WriteOptions = {}): WriteReport {
  const w = new RowWriter(db, options.now ?? Date.now);
  return db.writer(() => {
    const verdicts = rows.map((r) => w.compare(r));
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
    rows.forEach((r, i) => {
      const verdict = verdicts[i] as Verdict;
      report[verdict][r.kind]++;
      w.write(r, verdict);
    });
    w.finish();
    return report;
  })();
}

/** The statements of one write, and the key changes it logs. */
class RowWriter {
  private readonly keyById;
  private readonly keyByHash;
  private readonly retiredOwner;
  private readonly retiredOf;
  private readonly insertKey;
  private readonly updateKey;
  private readonly dropRetired;
  private readonly insertRetired;
  private readonly accountById;
  private readonly accountByName;
  private readonly upsertAccount;
  private readonly tokenByHash;
  private readonly putToken;
  private readonly sessionByHash;
  private readonly putSession;
  private readonly usageOf;
  private readonly putUsage;
  private readonly holdById;
  private readonly putHold;
  private readonly log;
  private readonly prune;
  /** Hashes of the keys written, for the change log; `invalid`: those that no longer work. */
  private readonly hashes: string[] = [];
  private readonly invalid: string[] = [];
  /** Keys as the record held them before this write (read by compare). */
  private readonly before = new Map<string, KeyRecord | undefined>();

  constructor(
    db: SqliteDatabase,
    private readonly now: () => number,
  ) {
    this.keyById = db.statement<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM keys WHERE id = ?`);
    this.keyByHash = db.statement<[string], { id: string }>('SELECT id FROM keys WHERE hash = ?');
    this.retiredOwner = db.statement<[string], { key_id: string }>('SELECT key_id FROM retired_key_values WHERE hash = ?');
    this.retiredOf = db.statement<[string], RetiredRow>(
      'SELECT key_id, hash, prefix, until FROM retired_key_values WHERE key_id = ? ORDER BY position',
    );
    this.insertKey = db.statement<[KeyRow]>(INSERT_KEY);
    this.updateKey = db.statement<[KeyRow]>(UPDATE_KEY);
    this.dropRetired = db.statement<[string]>('DELETE FROM retired_key_values WHERE key_id = ?');
    this.insertRetired = db.statement<[string, string, number, string, string]>(INSERT_RETIRED);
    this.accountById = db.statement<[string], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`);
    this.accountByName = db.statement<[string], { id: string }>('SELECT id FROM accounts WHERE name_key = ?');
    this.upsertAccount = db.statement<AccountParams>(
      `INSERT INTO accounts (name, name_key, email, tiers, default_tier, created_at, disabled_at, deleted_at, id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, name_key = excluded.name_key, email = excluded.email,
         tiers = excluded.tiers, default_tier = excluded.default_tier, created_at = excluded.created_at,
         disabled_at = excluded.disabled_at, deleted_at = excluded.deleted_at`,
    );
    this.tokenByHash = db.statement<[string], TokenRow>(
      'SELECT hash, account_id, created_at, expires_at FROM signin_tokens WHERE hash = ?',
    );
    this.putToken = db.statement<[string, string, string, string]>(
      'INSERT OR REPLACE INTO signin_tokens (hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
    );
    this.sessionByHash = db.statement<[string], SessionRow>(
      'SELECT hash, kind, account_id, grant_digest, created_at, expires_at FROM sessions WHERE hash = ?',
    );
    this.putSession = db.statement<[string, string, string | null, string | null, string, string]>(
      'INSERT OR REPLACE INTO sessions (hash, kind, account_id, grant_digest, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.usageOf = db.statement<[string, string, string], { calls: number; errors: number; limited: number; invalid: number }>(
      'SELECT calls, errors, limited, invalid FROM usage_days WHERE key_id = ? AND day = ? AND chain = ?',
    );
    this.putUsage = db.statement<[string, string, string, number, number, number, number]>(
      `INSERT INTO usage_days (key_id, day, chain, calls, errors, limited, invalid) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (key_id, day, chain) DO UPDATE SET
         calls = excluded.calls, errors = excluded.errors, limited = excluded.limited, invalid = excluded.invalid`,
    );
    this.holdById = db.statement<[string], { state: 'cordoned' | 'draining'; since: string; reason: string }>(
      'SELECT state, since, reason FROM node_holds WHERE id = ?',
    );
    this.putHold = db.statement<[string, string, string, string]>(
      `INSERT INTO node_holds (id, state, since, reason) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, since = excluded.since, reason = excluded.reason`,
    );
    this.log = db.statement<[string, string, string | null]>('INSERT INTO key_changes (origin, hashes, invalid) VALUES (?, ?, ?)');
    this.prune = db.statement<[number]>('DELETE FROM key_changes WHERE seq <= (SELECT max(seq) FROM key_changes) - ?');
  }

  private key(id: string): KeyRecord | undefined {
    const row = this.keyById.get(id);
    return row === undefined ? undefined : recordOf(row, this.retiredOf.all(id));
  }

  /** What writing `r` would be; refuses a name or hash that another row holds (no flag can make that right). */
  compare(r: RecordRow): Verdict {
    const verdict = (held: string | undefined, wanted: string): Verdict =>
      held === undefined ? 'added' : held === wanted ? 'same' : 'replaced';
    switch (r.kind) {
      case 'key': {
        const held = this.key(r.key.id);
        this.before.set(r.key.id, held);
        for (const hash of [r.key.hash, ...r.key.retired.map((x) => x.hash)]) {
          const owner = this.keyByHash.get(hash)?.id ?? this.retiredOwner.get(hash)?.key_id;
          if (owner !== undefined && owner !== r.key.id) {
            throw new ControlError(
              'RECORD_CONFLICT',
              `${rowName(r)}: one of its hashes is key ${owner}'s in the record: nothing was written`,
            );
          }
        }
        return verdict(held === undefined ? undefined : changeText(held), changeText(r.key));
      }
      case 'account': {
        const owner = this.accountByName.get(nameKey(r.account.name))?.id;
        if (owner !== undefined && owner !== r.account.id) {
          throw new ControlError('RECORD_CONFLICT', `${rowName(r)}: the name is account ${owner}'s in the record: nothing was written`);
        }
        const held = this.accountById.get(r.account.id);
        return verdict(held === undefined ? undefined : accountText(accountOf(held)), accountText(r.account));
      }
      case 'token': {
        const held = this.tokenByHash.get(r.token.hash);
        return verdict(held === undefined ? undefined : tokenText(tokenOf(held)), tokenText(r.token));
      }
      case 'session': {
        const held = this.sessionByHash.get(r.session.hash);
        return verdict(held === undefined ? undefined : sessionText(sessionOf(held)), sessionText(r.session));
      }
      case 'usage': {
        const held = this.usageOf.get(r.keyId, r.usage.day, r.usage.chain);
        return verdict(held === undefined ? undefined : usageText(held), usageText(r.usage));
      }
      case 'hold': {
        const held = this.holdById.get(r.id);
        return verdict(held === undefined ? undefined : holdText(held), holdText(r.hold));
      }
    }
  }

  write(r: RecordRow, verdict: Verdict): void {
    switch (r.kind) {
      case 'key':
        return this.writeKey(r.key, verdict);
      case 'account':
        if (verdict !== 'same') this.upsertAccount.run(...accountParams(r.account));
        return;
      case 'token':
        if (verdict !== 'same') this.putToken.run(r.token.hash, r.token.accountId, r.token.createdAt, r.token.expiresAt);
        return;
      case 'session': {
        const s = r.session;
        if (verdict !== 'same') this.putSession.run(s.hash, s.kind, s.accountId ?? null, s.grant ?? null, s.createdAt, s.expiresAt);
        return;
      }
      case 'usage': {
        const u = r.usage;
        if (verdict !== 'same') this.putUsage.run(r.keyId, u.day, u.chain, u.calls, u.errors, u.limited, u.invalid ?? 0);
        return;
      }
      case 'hold':
        if (verdict !== 'same') this.putHold.run(r.id, r.hold.state, r.hold.since, r.hold.reason);
        return;
    }
  }

  private writeKey(key: KeyRecord, verdict: Verdict): void {
    const row = rowOf(key);
    if (verdict === 'same') {
      // Only last use may differ: it moves forward, and is no change anyone announces.
      this.updateKey.run(row);
      return;
    }
    this.dropRetired.run(key.id);
    if (verdict === 'added') this.insertKey.run(row);
    else this.updateKey.run(row);
    key.retired.forEach((r, i) => this.insertRetired.run(r.hash, key.id, i + 1, r.prefix, r.until));
    const change = changeBetween(this.before.get(key.id), key, this.now());
    if ('hashes' in change) {
      this.hashes.push(...change.hashes);
      this.invalid.push(...(change.invalid ?? []));
    }
  }

  /** The key changes, told to running gateways through the change log. */
  finish(): void {
    for (let i = 0; i < this.hashes.length; i += HASHES_PER_ENTRY) {
      const hashes = this.hashes.slice(i, i + HASHES_PER_ENTRY);
      const gone = new Set(hashes);
      const invalid = this.invalid.filter((h) => gone.has(h));
      this.log.run('import', JSON.stringify(hashes), invalid.length === 0 ? null : JSON.stringify(invalid));
    }
    if (this.hashes.length > 0) this.prune.run(CHANGES_KEPT);
  }
}
