// Every row of a SQLite record read out, and rows written in, whole: what export,
// import and adoption move. A write is one IMMEDIATE transaction that first compares
// each row with what the record holds (row-plan.ts: the same, new, or different) and
// writes nothing when any differs unless told to replace; key changes go to the change
// log like any other commit (running gateways drop those hashes), and a key's last use
// only moves forward. Names and hashes another row holds are refused, never overwritten.

import type { AccountRecord, SessionRecord, SigninTokenRecord } from '../accounts/account-store.js';
import type { KeyRecord } from '../auth/key-store.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';
import type { RecordRow, RecordRows, WriteReport } from './record-rows.js';
import { CHANGES_KEPT, KeyChanges, planWrite, type HeldRows, type UsageCounts, type Verdict, type WriteOptions } from './row-plan.js';
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
import { KEY_COLUMNS, recordOf, rowOf, type KeyRow, type RetiredRow } from './key-rows.js';
import { INSERT_KEY, INSERT_RETIRED, UPDATE_KEY } from './sqlite-key-store.js';
import { readUsage } from './sqlite-usage-store.js';

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

/** Writes `rows` in one transaction; refuses (writing nothing) when any differs from the record and `force` is not set. */
export function writeRows(db: SqliteDatabase, rows: readonly RecordRow[], options: WriteOptions = {}): WriteReport {
  const w = new RowWriter(db);
  const now = options.now ?? Date.now;
  return db.writer(() => {
    const plan = planWrite(rows, w, options);
    const changes = new KeyChanges();
    rows.forEach((r, i) => {
      const verdict = plan.verdicts[i] as Verdict;
      w.write(r, verdict);
      if (r.kind === 'key' && verdict !== 'same') changes.add(plan.keysBefore.get(r.key.id), r.key, now());
    });
    w.finish(changes);
    return plan.report;
  })();
}

/** The statements of one write: what the record holds where each row goes, and the writes. */
class RowWriter implements HeldRows {
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

  constructor(db: SqliteDatabase) {
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

  key(id: string): KeyRecord | undefined {
    const row = this.keyById.get(id);
    return row === undefined ? undefined : recordOf(row, this.retiredOf.all(id));
  }

  hashOwner(hash: string): string | undefined {
    return this.keyByHash.get(hash)?.id ?? this.retiredOwner.get(hash)?.key_id;
  }

  account(id: string): AccountRecord | undefined {
    const row = this.accountById.get(id);
    return row === undefined ? undefined : accountOf(row);
  }

  nameOwner(key: string): string | undefined {
    return this.accountByName.get(key)?.id;
  }

  token(hash: string): SigninTokenRecord | undefined {
    const row = this.tokenByHash.get(hash);
    return row === undefined ? undefined : tokenOf(row);
  }

  session(hash: string): SessionRecord | undefined {
    const row = this.sessionByHash.get(hash);
    return row === undefined ? undefined : sessionOf(row);
  }

  usage(keyId: string, day: string, chain: string): UsageCounts | undefined {
    return this.usageOf.get(keyId, day, chain);
  }

  hold(id: string): NodeHoldRecord | undefined {
    return this.holdById.get(id);
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
  }

  /** The key changes, told to running gateways through the change log. */
  finish(changes: KeyChanges): void {
    const entries = changes.entries();
    for (const e of entries) this.log.run('import', JSON.stringify(e.hashes), e.invalid === undefined ? null : JSON.stringify(e.invalid));
    if (entries.length > 0) this.prune.run(CHANGES_KEPT);
  }
}
