// Every kind of row the record holds, as one value each, whatever database keeps
// them: what `store export` writes and `store import` reads (one JSON object a line,
// after a header line naming the format), and what `store migrate --from` adopts from
// a file or Redis store. A key row holds hashes, never a value; anything that could
// carry one is refused, and every row read is checked before anything is written.

import type { AccountRecord, SessionRecord, SigninTokenRecord } from '../accounts/account-store.js';
import type { KeyRecord } from '../auth/key-store.js';
import { mergeRestrictions, RESTRICTION_FIELDS } from '../auth/restrictions.js';
import { ControlError } from '../control-errors.js';
import type { NodeHoldRecord } from '../ops/holds/hold-store.js';
import type { UsageRow } from '../quota/usage.js';

export type RecordRow =
  | { readonly kind: 'account'; readonly account: AccountRecord }
  | { readonly kind: 'key'; readonly key: KeyRecord }
  | { readonly kind: 'token'; readonly token: SigninTokenRecord }
  | { readonly kind: 'session'; readonly session: SessionRecord }
  | { readonly kind: 'usage'; readonly keyId: string; readonly usage: UsageRow }
  | { readonly kind: 'hold'; readonly id: string; readonly hold: NodeHoldRecord };

export type RowKind = RecordRow['kind'];

/** In the order rows are written and exported (accounts before the keys that name them). */
export const ROW_KINDS: readonly RowKind[] = ['account', 'key', 'token', 'session', 'usage', 'hold'];

/** The first line of an export: what it is, so `store import` refuses anything else. */
export const EXPORT_HEADER = { format: 'noderouter-record', version: 1 } as const;

export type RowCounts = Record<RowKind, number>;

export const noRows = (): RowCounts => ({ account: 0, key: 0, token: 0, session: 0, usage: 0, hold: 0 });

export function countRows(rows: readonly RecordRow[]): RowCounts {
  const counts = noRows();
  for (const r of rows) counts[r.kind]++;
  return counts;
}

const NOUNS: Readonly<Record<RowKind, [string, string]>> = {
  account: ['account', 'accounts'],
  key: ['key', 'keys'],
  token: ['sign-in token', 'sign-in tokens'],
  session: ['session', 'sessions'],
  usage: ['usage row', 'usage rows'],
  hold: ['hold', 'holds'],
};

/** "3 keys, 1 account, 0 sessions …" in the order of ROW_KINDS. */
export function describeCounts(counts: RowCounts): string {
  return ROW_KINDS.map((k) => `${counts[k]} ${NOUNS[k][counts[k] === 1 ? 0 : 1]}`).join(', ');
}

/** Where a row lives, as messages name it: `key key_…`, `usage key_… 2026-01-02 l1`. */
export function rowName(r: RecordRow): string {
  switch (r.kind) {
    case 'account':
      return `account ${r.account.id} (${r.account.name})`;
    case 'key':
      return `key ${r.key.id}`;
    case 'token':
      return `sign-in token ${r.token.hash.slice(0, 12)}…`;
    case 'session':
      return `session ${r.session.hash.slice(0, 12)}…`;
    case 'usage':
      return `usage ${r.keyId} ${r.usage.day} ${r.usage.chain}`;
    case 'hold':
      return `hold ${r.id}`;
  }
}

/** A record's rows read and written whole, whatever database keeps it (opened by src/app/open-record.ts). */
export interface RecordRows {
  /** Where it is, as messages name it: `/var/lib/noderouter/noderouter.db (sqlite)`. */
  readonly name: string;
  /** The migrations this open applied (none when it was up to date). */
  readonly applied: readonly number[];
  /** The schema version it is at now. */
  readonly version: number;
  read(): Promise<RecordRow[]>;
  /** One transaction; refused whole (RECORD_CONFLICT) when a row differs and `force` is not set. */
  write(rows: readonly RecordRow[], options: { readonly force?: boolean; readonly source?: string }): Promise<WriteReport>;
  close(): Promise<void>;
}

export interface WriteReport {
  /** Rows the record did not have. */
  readonly added: RowCounts;
  /** Rows the record held differently, replaced (with `force`). */
  readonly replaced: RowCounts;
  /** Rows the record held already as they are. */
  readonly same: RowCounts;
}

export function encodeRow(r: RecordRow): string {
  return JSON.stringify(r);
}

const HASH = /^[0-9a-f]{64}$/;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isText = (v: unknown): v is string => typeof v === 'string';
const isOptionalText = (v: unknown): boolean => v === undefined || v === null || typeof v === 'string';
const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function invalid(where: string, what: string): never {
  throw new ControlError('INVALID_INPUT', `${where}: ${what}`);
}

/** A key record as `keys export` and `store export` write it; anything that could carry a key value is refused. */
export function checkKeyRecord(v: unknown, where: string): KeyRecord {
  const r = v as KeyRecord;
  const ok =
    isObject(v) &&
    isText(r.id) &&
    isText(r.hash) &&
    HASH.test(r.hash) &&
    isText(r.prefix) &&
    r.prefix.length <= 8 &&
    isText(r.account) &&
    isText(r.tier) &&
    Array.isArray(r.retired) &&
    r.retired.every((x) => isObject(x) && isText(x.hash) && HASH.test(x.hash)) &&
    !('key' in v) &&
    !('value' in v);
  if (!ok) invalid(where, 'not a key record of `keys export` (id, hash, prefix, account, tier, retired)');
  if (r.restrictions === undefined) return r;
  const fields = r.restrictions as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((f) => !(RESTRICTION_FIELDS as readonly string[]).includes(f));
  if (unknown.length > 0) invalid(where, `restrictions.${unknown[0]} is not a restriction (${RESTRICTION_FIELDS.join(', ')})`);
  const checked = mergeRestrictions(fields, undefined, (field, message) => invalid(where, `restrictions.${field}: ${message}`));
  if (checked !== undefined) return { ...r, restrictions: checked };
  const { restrictions: _none, ...unrestricted } = r;
  return unrestricted;
}

/** JSON drops undefined members: absent optional fields come back as undefined, as every store hands them over. */
function account(v: unknown, where: string): AccountRecord {
  const a = v as Record<string, unknown>;
  if (
    !isObject(v) ||
    !isText(a.id) ||
    !isText(a.name) ||
    !Array.isArray(a.tiers) ||
    !a.tiers.every(isText) ||
    !isText(a.defaultTier) ||
    !isText(a.createdAt) ||
    ![a.email, a.disabledAt, a.deletedAt].every(isOptionalText)
  ) {
    invalid(where, 'not an account (id, name, tiers, defaultTier, createdAt)');
  }
  return {
    id: a.id,
    name: a.name,
    email: (a.email ?? undefined) as string | undefined,
    tiers: a.tiers,
    defaultTier: a.defaultTier,
    createdAt: a.createdAt,
    disabledAt: (a.disabledAt ?? undefined) as string | undefined,
    deletedAt: (a.deletedAt ?? undefined) as string | undefined,
  };
}

function token(v: unknown, where: string): SigninTokenRecord {
  const t = v as Record<string, unknown>;
  if (!isObject(v) || !isText(t.hash) || !HASH.test(t.hash) || !isText(t.accountId) || !isText(t.createdAt) || !isText(t.expiresAt)) {
    invalid(where, 'not a sign-in token (hash, accountId, createdAt, expiresAt)');
  }
  return { hash: t.hash, accountId: t.accountId, createdAt: t.createdAt, expiresAt: t.expiresAt };
}

function session(v: unknown, where: string): SessionRecord {
  const s = v as Record<string, unknown>;
  if (
    !isObject(v) ||
    !isText(s.hash) ||
    !HASH.test(s.hash) ||
    (s.kind !== 'account' && s.kind !== 'operator') ||
    !isOptionalText(s.accountId) ||
    !isOptionalText(s.grant) ||
    !isText(s.createdAt) ||
    !isText(s.expiresAt)
  ) {
    invalid(where, 'not a session (hash, kind, createdAt, expiresAt)');
  }
  return {
    hash: s.hash,
    kind: s.kind,
    accountId: (s.accountId ?? undefined) as string | undefined,
    grant: (s.grant ?? undefined) as string | undefined,
    createdAt: s.createdAt,
    expiresAt: s.expiresAt,
  };
}

function usage(v: unknown, where: string): UsageRow {
  const u = v as Record<string, unknown>;
  if (
    !isObject(v) ||
    !isText(u.day) ||
    !/^\d{4}-\d{2}-\d{2}$/.test(u.day) ||
    !isText(u.chain) ||
    ![u.calls, u.errors, u.limited].every(isCount) ||
    !(u.invalid === undefined || isCount(u.invalid))
  ) {
    invalid(where, 'not a usage row (day YYYY-MM-DD, chain, calls, errors, limited, invalid)');
  }
  const row: UsageRow = { day: u.day, chain: u.chain, calls: u.calls as number, errors: u.errors as number, limited: u.limited as number };
  // As the usage book writes rows: `invalid` only where there were any.
  if (typeof u.invalid === 'number' && u.invalid > 0) row.invalid = u.invalid;
  return row;
}

function hold(v: unknown, where: string): NodeHoldRecord {
  const h = v as Record<string, unknown>;
  if (!isObject(v) || (h.state !== 'cordoned' && h.state !== 'draining') || !isText(h.since) || !isText(h.reason)) {
    invalid(where, 'not a hold (state cordoned or draining, since, reason)');
  }
  return { state: h.state, since: h.since, reason: h.reason };
}

/** One line of an export (`n` counts from 1, the header included), checked whole. */
export function parseRow(line: string, n: number): RecordRow {
  const where = `line ${n}`;
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    invalid(where, 'not JSON');
  }
  if (!isObject(v)) invalid(where, 'not a row of `store export`');
  switch (v.kind) {
    case 'account':
      return { kind: 'account', account: account(v.account, where) };
    case 'key':
      return { kind: 'key', key: checkKeyRecord(v.key, where) };
    case 'token':
      return { kind: 'token', token: token(v.token, where) };
    case 'session':
      return { kind: 'session', session: session(v.session, where) };
    case 'usage':
      if (!isText(v.keyId)) invalid(where, 'a usage row needs its keyId');
      return { kind: 'usage', keyId: v.keyId, usage: usage(v.usage, where) };
    case 'hold':
      if (!isText(v.id) || !v.id.includes('/')) invalid(where, 'a hold needs its id ("chain/node")');
      return { kind: 'hold', id: v.id, hold: hold(v.hold, where) };
    default:
      return invalid(where, `kind ${JSON.stringify(v.kind)} is not a row of \`store export\` (${ROW_KINDS.join(', ')})`);
  }
}

/** The rows of an export's text; the header line is required, so nothing else is imported by mistake. */
export function parseExport(text: string): RecordRow[] {
  const lines = text.split('\n');
  const first = lines.findIndex((l) => l.trim() !== '');
  if (first < 0) invalid('the input', 'is empty: expected the output of `noderouter store export`');
  let header: unknown;
  try {
    header = JSON.parse(lines[first] as string);
  } catch {
    header = undefined;
  }
  const h = header as Record<string, unknown> | undefined;
  if (!isObject(h) || h.format !== EXPORT_HEADER.format) {
    invalid(`line ${first + 1}`, 'is not the header of `noderouter store export` ({"format":"noderouter-record",…})');
  }
  if (h.version !== EXPORT_HEADER.version) {
    invalid(`line ${first + 1}`, `export format version ${String(h.version)} is not one this noderouter reads (${EXPORT_HEADER.version})`);
  }
  const rows: RecordRow[] = [];
  for (let i = first + 1; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trim() !== '') rows.push(parseRow(line, i + 1));
  }
  return rows;
}
