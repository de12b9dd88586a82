// Every row of a PostgreSQL record read out, and rows written in, whole: what export,
// import and adoption move, as sqlite-rows.ts does for SQLite. A read is one
// read-only snapshot; a write is one transaction that locks the record's tables
// against other writers (readers go on: lookups never wait), reads what the record
// holds where the rows go in one query per kind, compares (row-plan.ts: the same, new,
// or different) and writes nothing when any differs unless told to replace. Key
// changes go to the change log every instance reads, and a key's last use only moves
// forward. The key and account statements are their stores' own.

import type { AccountRecord, SessionRecord, SigninTokenRecord } from '../accounts/account-store.js';
import type { KeyRecord } from '../auth/key-store.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';
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
import { holdsOf, type HoldRow } from './hold-rows.js';
import { rowOf } from './key-rows.js';
import { accountStatements } from './pg-account-store.js';
import type { PgDatabase, PgSession } from './pg-database.js';
import { keyStatements, keyValues, readRecord, type ReadRow } from './pg-key-store.js';
import { appliedPgMigrations } from './pg-migrations.js';
import type { RecordRow, RecordRows, WriteReport } from './record-rows.js';
import { KeyChanges, planWrite, type HeldRows, type UsageCounts, type Verdict, type WriteOptions } from './row-plan.js';
import { USAGE_COLUMNS, usageByKey, type UsageDayRow } from './usage-rows.js';

/** The tables a write changes, locked in one order (the change log first, as a key commit takes it). */
const WRITTEN = ['key_changes', 'keys', 'retired_key_values', 'accounts', 'signin_tokens', 'sessions', 'usage_days', 'node_holds'];

const slot = (...parts: string[]): string => parts.join('\u0000');

/**
 * The statement texts, with the record's schema. Text is ordered byte by byte
 * (COLLATE "C"), as SQLite orders it, so both records export their rows in one order.
 */
function statements(db: PgDatabase) {
  const keys = db.table('keys');
  const retired = db.table('retired_key_values');
  const accounts = db.table('accounts');
  const tokens = db.table('signin_tokens');
  const sessions = db.table('sessions');
  const usage = db.table('usage_days');
  const holds = db.table('node_holds');
  return {
    snapshot: 'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY',
    lock: `LOCK TABLE ${WRITTEN.map((t) => db.table(t)).join(', ')} IN EXCLUSIVE MODE`,
    allAccounts: `SELECT ${ACCOUNT_COLUMNS} FROM ${accounts} ORDER BY created_at, id COLLATE "C"`,
    allTokens: `SELECT ${TOKEN_COLUMNS} FROM ${tokens} ORDER BY hash COLLATE "C"`,
    allSessions: `SELECT ${SESSION_COLUMNS} FROM ${sessions} ORDER BY hash COLLATE "C"`,
    allUsage: `SELECT ${USAGE_COLUMNS} FROM ${usage} ORDER BY key_id COLLATE "C", day, chain COLLATE "C"`,
    allHolds: `SELECT id, state, since, reason FROM ${holds} ORDER BY id COLLATE "C"`,
    // What the record holds where the rows go: one query per kind.
    hashOwners: `SELECT hash, key_id AS id, 1 AS rank FROM ${retired} WHERE hash = ANY($1::text[])
      UNION ALL SELECT hash, id, 0 AS rank FROM ${keys} WHERE hash = ANY($1::text[]) ORDER BY rank DESC`,
    accountsById: `SELECT ${ACCOUNT_COLUMNS} FROM ${accounts} WHERE id = ANY($1::text[])`,
    nameOwners: `SELECT name_key, id FROM ${accounts} WHERE name_key = ANY($1::text[])`,
    tokensByHash: `SELECT ${TOKEN_COLUMNS} FROM ${tokens} WHERE hash = ANY($1::text[])`,
    sessionsByHash: `SELECT ${SESSION_COLUMNS} FROM ${sessions} WHERE hash = ANY($1::text[])`,
    usageAt: `SELECT ${USAGE_COLUMNS.split(', ')
      .map((c) => `u.${c}`)
      .join(', ')} FROM ${usage} u
      JOIN unnest($1::text[], $2::date[], $3::text[]) AS v(key_id, day, chain) USING (key_id, day, chain)`,
    holdsById: `SELECT id, state, since, reason FROM ${holds} WHERE id = ANY($1::text[])`,
    // An import sets a row's counts (the usage store adds to them; this replaces).
    putUsage: `INSERT INTO ${usage} (${USAGE_COLUMNS}) VALUES ($1, $2::date, $3, $4::bigint, $5::bigint, $6::bigint, $7::bigint)
      ON CONFLICT (key_id, day, chain) DO UPDATE SET
        calls = excluded.calls, errors = excluded.errors, limited = excluded.limited, invalid = excluded.invalid`,
    putHold: `INSERT INTO ${holds} (id, state, since, reason) VALUES ($1, $2, $3::timestamptz, $4)
      ON CONFLICT (id) DO UPDATE SET state = excluded.state, since = excluded.since, reason = excluded.reason`,
  };
}

type Statements = ReturnType<typeof statements> & {
  readonly key: ReturnType<typeof keyStatements>;
  readonly account: ReturnType<typeof accountStatements>;
};

/** Every row of the record, kind by kind in ROW_KINDS' order, each kind in sqlite-rows.ts's order. */
async function readRows(db: PgDatabase, sql: Statements): Promise<RecordRow[]> {
  return db.transaction(async (tx) => {
    await tx.query(sql.snapshot);
    const rows: RecordRow[] = [];
    for (const a of await tx.query<AccountRow>(sql.allAccounts)) rows.push({ kind: 'account', account: accountOf(a) });
    for (const k of await tx.query<ReadRow>(sql.key.everyKey)) rows.push({ kind: 'key', key: readRecord(k) });
    for (const t of await tx.query<TokenRow>(sql.allTokens)) rows.push({ kind: 'token', token: tokenOf(t) });
    for (const s of await tx.query<SessionRow>(sql.allSessions)) rows.push({ kind: 'session', session: sessionOf(s) });
    const usage = usageByKey(await tx.query<UsageDayRow>(sql.allUsage));
    for (const [keyId, list] of Object.entries(usage)) for (const u of list) rows.push({ kind: 'usage', keyId, usage: u });
    for (const [id, hold] of holdsOf(await tx.query<HoldRow>(sql.allHolds))) rows.push({ kind: 'hold', id, hold });
    return rows;
  });
}

/** What the record holds where `rows` go, read in one query per kind (under the write's locks). */
async function readHeld(tx: PgSession, sql: Statements, rows: readonly RecordRow[]): Promise<HeldRows> {
  const ids = { key: new Set<string>(), hash: new Set<string>(), account: new Set<string>(), name: new Set<string>() };
  const tokenHashes = new Set<string>();
  const sessionHashes = new Set<string>();
  const holdIds = new Set<string>();
  const usageAt: Array<[string, string, string]> = [];
  for (const r of rows) {
    if (r.kind === 'key') {
      ids.key.add(r.key.id);
      for (const h of [r.key.hash, ...r.key.retired.map((x) => x.hash)]) ids.hash.add(h);
    } else if (r.kind === 'account') {
      ids.account.add(r.account.id);
      ids.name.add(accountParams(r.account)[1]);
    } else if (r.kind === 'token') tokenHashes.add(r.token.hash);
    else if (r.kind === 'session') sessionHashes.add(r.session.hash);
    else if (r.kind === 'usage') usageAt.push([r.keyId, r.usage.day, r.usage.chain]);
    else holdIds.add(r.id);
  }
  const keys = new Map<string, KeyRecord>();
  for (const k of await tx.query<ReadRow>(sql.key.byIds, [[...ids.key]])) keys.set(k.id, readRecord(k));
  // Retired owners first, then keys': a current value's owner wins, as SQLite looks.
  const hashOwners = new Map<string, string>();
  for (const o of await tx.query<{ hash: string; id: string }>(sql.hashOwners, [[...ids.hash]])) hashOwners.set(o.hash, o.id);
  const accounts = new Map<string, AccountRecord>();
  for (const a of await tx.query<AccountRow>(sql.accountsById, [[...ids.account]])) accounts.set(a.id, accountOf(a));
  const nameOwners = new Map<string, string>();
  for (const o of await tx.query<{ name_key: string; id: string }>(sql.nameOwners, [[...ids.name]])) nameOwners.set(o.name_key, o.id);
  const tokens = new Map<string, SigninTokenRecord>();
  for (const t of await tx.query<TokenRow>(sql.tokensByHash, [[...tokenHashes]])) tokens.set(t.hash, tokenOf(t));
  const sessions = new Map<string, SessionRecord>();
  for (const s of await tx.query<SessionRow>(sql.sessionsByHash, [[...sessionHashes]])) sessions.set(s.hash, sessionOf(s));
  const usage = new Map<string, UsageCounts>();
  const usageRows = await tx.query<UsageDayRow>(sql.usageAt, [
    usageAt.map((u) => u[0]),
    usageAt.map((u) => u[1]),
    usageAt.map((u) => u[2]),
  ]);
  for (const u of usageRows) usage.set(slot(u.key_id, u.day, u.chain), u);
  const holds: ReadonlyMap<string, NodeHoldRecord> = holdsOf(await tx.query<HoldRow>(sql.holdsById, [[...holdIds]]));
  return {
    key: (id) => keys.get(id),
    hashOwner: (hash) => hashOwners.get(hash),
    account: (id) => accounts.get(id),
    nameOwner: (key) => nameOwners.get(key),
    token: (hash) => tokens.get(hash),
    session: (hash) => sessions.get(hash),
    usage: (keyId, day, chain) => usage.get(slot(keyId, day, chain)),
    hold: (id) => holds.get(id),
  };
}

async function writeRow(tx: PgSession, sql: Statements, r: RecordRow, verdict: Verdict): Promise<void> {
  if (r.kind === 'key') return writeKey(tx, sql, r.key, verdict);
  if (verdict === 'same') return;
  switch (r.kind) {
    case 'account':
      await tx.query(verdict === 'added' ? sql.account.insert : sql.account.update, accountParams(r.account));
      return;
    case 'token':
      await tx.query(sql.account.addToken, tokenParams(r.token));
      return;
    case 'session':
      await tx.query(sql.account.addSession, sessionParams(r.session));
      return;
    case 'usage': {
      const u = r.usage;
      await tx.query(sql.putUsage, [r.keyId, u.day, u.chain, u.calls, u.errors, u.limited, u.invalid ?? 0]);
      return;
    }
    case 'hold':
      await tx.query(sql.putHold, [r.id, r.hold.state, r.hold.since, r.hold.reason]);
      return;
  }
}

async function writeKey(tx: PgSession, sql: Statements, key: KeyRecord, verdict: Verdict): Promise<void> {
  const values = keyValues(rowOf(key));
  // Only last use may differ: it moves forward, and is no change anyone announces.
  if (verdict === 'same') {
    await tx.query(sql.key.update, values);
    return;
  }
  // Retired rows first: the old current value may become a retired one.
  await tx.query(sql.key.dropRetired, [key.id]);
  await tx.query(verdict === 'added' ? sql.key.insert : sql.key.update, values);
  if (key.retired.length > 0) {
    await tx.query(sql.key.insertRetired, [
      key.id,
      key.retired.map((x) => x.hash),
      key.retired.map((x) => x.prefix),
      key.retired.map((x) => x.until),
    ]);
  }
}

/** Writes `rows` in one transaction; refuses (writing nothing) when any differs from the record and `force` is not set. */
export async function writePgRows(db: PgDatabase, rows: readonly RecordRow[], options: WriteOptions = {}): Promise<WriteReport> {
  const sql = allStatements(db);
  const now = options.now ?? Date.now;
  return db.transaction(async (tx) => {
    await tx.query(sql.lock);
    const plan = planWrite(rows, await readHeld(tx, sql, rows), options);
    const changes = new KeyChanges();
    for (const [i, r] of rows.entries()) {
      const verdict = plan.verdicts[i] as Verdict;
      await writeRow(tx, sql, r, verdict);
      if (r.kind === 'key' && verdict !== 'same') changes.add(plan.keysBefore.get(r.key.id), r.key, now());
    }
    // Running gateways hear of the keys from the log: 'import' is no instance's origin, so every one does.
    let last: number | undefined;
    for (const e of changes.entries()) {
      const [logged] = await tx.query<{ seq: number }>(sql.key.log, ['import', e.hashes, e.invalid ?? null]);
      last = logged?.seq;
    }
    if (last !== undefined) await tx.query(sql.key.prune, [last]);
    return plan.report;
  });
}

function allStatements(db: PgDatabase): Statements {
  return { ...statements(db), key: keyStatements(db), account: accountStatements(db) };
}

/** The rows of an open PostgreSQL record (closed with it). */
export async function pgRows(db: PgDatabase, where: string): Promise<RecordRows> {
  let version = 0;
  try {
    version = (await appliedPgMigrations(db, db.schema)).at(-1) ?? 0;
  } catch (err) {
    await db.close();
    throw err;
  }
  return {
    name: `${where} (postgres)`,
    applied: db.applied,
    version,
    read: () => readRows(db, allStatements(db)),
    write: (rows, options) => writePgRows(db, rows, options),
    close: () => db.close(),
  };
}
