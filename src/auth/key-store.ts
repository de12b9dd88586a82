// The key store contract: records of API keys, found by the SHA-256 of their value,
// and the pure rules over one record (a new key, rotation, revocation, which hashes
// work until when). The key repository applies them over a file or Redis backend;
// the cache and the request path see only this interface. A record never holds a
// key's value.

import { ControlError } from '../control-errors.js';
import { generateId, generateKey, hashKey, keyPrefix } from './key-format.js';
import type { KeyRestrictions } from './restrictions.js';

export interface KeyPermissions {
  /** Chain endpoint name patterns (`*` wildcard); ['*'] = every chain. */
  readonly chains: readonly string[];
  /** Archive access; undefined = as the tier says. */
  readonly archive: boolean | undefined;
  /** Method (or REST path) patterns allowed; ['*'] = all. */
  readonly allow: readonly string[];
  /** Method patterns refused even when allowed. */
  readonly deny: readonly string[];
}

export const ALL_PERMITTED: KeyPermissions = Object.freeze({
  chains: Object.freeze(['*']),
  archive: undefined,
  allow: Object.freeze(['*']),
  deny: Object.freeze([]),
});

/** A superseded value kept working until `until` (rotation grace). */
export interface RetiredValue {
  readonly hash: string;
  readonly prefix: string;
  readonly until: string;
}

export interface KeyRecord {
  readonly id: string;
  readonly hash: string;
  readonly prefix: string;
  readonly account: string;
  readonly tier: string;
  readonly label: string;
  readonly permissions: KeyPermissions;
  /** Where the key may be used from; absent: anywhere. */
  readonly restrictions?: KeyRestrictions;
  readonly createdAt: string;
  readonly lastUsedAt: string | undefined;
  readonly revokedAt: string | undefined;
  readonly expiresAt: string | undefined;
  readonly rotatedAt: string | undefined;
  readonly retired: readonly RetiredValue[];
}

export type KeyState = 'active' | 'revoked' | 'expired';

export function keyState(record: KeyRecord, now: number): KeyState {
  if (record.revokedAt !== undefined) return 'revoked';
  if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now) return 'expired';
  return 'active';
}

/** A successful lookup: the record, and until when the presented value works. */
export interface KeyMatch {
  readonly record: KeyRecord;
  /** Epoch ms after which the presented value stops working (rotation grace or expiry). */
  readonly validUntil: number;
}

export interface NewKey {
  readonly account: string;
  readonly tier: string;
  readonly label?: string;
  readonly permissions?: Partial<KeyPermissions>;
  /** Checked and canonical (restrictions.ts); absent or undefined: unrestricted. */
  readonly restrictions?: KeyRestrictions | undefined;
  readonly expiresAt?: string;
}

/**
 * What changed, so caches can drop exactly those hashes (or everything). `invalid`
 * names the hashes that no longer work at all (revoked, or retired values dropped):
 * a cache may refuse them at once, even while the store cannot be asked.
 */
export type StoreChange = { readonly hashes: readonly string[]; readonly invalid?: readonly string[] } | { readonly all: true };

export interface KeyStore {
  /** Find the record a presented value's hash belongs to, current or retired. */
  findByHash(hash: string): Promise<KeyMatch | undefined>;
  /** Creates a key; the value is returned here and never again. */
  create(input: NewKey): Promise<{ record: KeyRecord; value: string }>;
  /** By id, or by prefix when exactly one key has it (KeyAmbiguousError when several do). */
  get(idOrPrefix: string): Promise<KeyRecord | undefined>;
  list(filter?: { account?: string }): Promise<KeyRecord[]>;
  /** Revoking a revoked key changes nothing (no write, no announcement). */
  revoke(id: string): Promise<KeyRecord>;
  /** Replace the key's restrictions (checked by the caller); `change` gets the current ones (another writer may have changed them). */
  restrict(id: string, change: (current: KeyRestrictions | undefined) => KeyRestrictions | undefined): Promise<KeyRecord>;
  /** New value; the old one keeps working for `graceSeconds`. */
  rotate(id: string, graceSeconds: number): Promise<{ record: KeyRecord; value: string }>;
  /** Store a record as it is, replacing one with the same id (import between stores: hashes move, never values). */
  put(record: KeyRecord): Promise<void>;
  /** Record last use (may be batched by the backend). */
  touch(id: string, at: number): void;
  onChange(listener: (change: StoreChange) => void): void;
  /**
   * Also tell `announce` of every change this process makes, awaited before the change
   * returns (the primary of a cluster tells its workers: revoked on their next request).
   */
  announceTo(announce: (change: StoreChange) => Promise<void>): void;
  /** Another process of this cluster made `change`: read the backend again, then tell the listeners. */
  sync(change: StoreChange): Promise<void>;
  close(): Promise<void>;
}

/** A new key: its value (returned once, never stored) and its record (hash only). */
export function newKeyRecord(input: NewKey, now: number = Date.now()): { record: KeyRecord; value: string } {
  const value = generateKey();
  const record: KeyRecord = {
    id: generateId('key'),
    hash: hashKey(value),
    prefix: keyPrefix(value),
    account: input.account,
    tier: input.tier,
    label: input.label ?? '',
    permissions: { ...ALL_PERMITTED, ...input.permissions },
    ...(input.restrictions === undefined ? {} : { restrictions: input.restrictions }),
    createdAt: new Date(now).toISOString(),
    lastUsedAt: undefined,
    revokedAt: undefined,
    expiresAt: input.expiresAt,
    rotatedAt: undefined,
    retired: [],
  };
  return { record, value };
}

/**
 * Retired values a key keeps at most (the newest): rotating again past it ends the
 * oldest one's grace at once, so rotating in a loop cannot grow a record (or the
 * hash index) without bound.
 */
export const MAX_RETIRED = 5;

/** A rotated key: a new value; the old one is retired until the grace ends. */
export function rotatedKeyRecord(old: KeyRecord, graceSeconds: number, now: number): { record: KeyRecord; value: string; until: number } {
  if (old.revokedAt !== undefined) throw new KeyInputError(`key ${old.prefix} is revoked and cannot be rotated`);
  const value = generateKey();
  const until = now + graceSeconds * 1000;
  // Values whose grace has passed are dropped: they can never work again.
  const retired = [
    ...old.retired.filter((r) => Date.parse(r.until) > now),
    { hash: old.hash, prefix: old.prefix, until: new Date(until).toISOString() },
  ];
  const record: KeyRecord = {
    ...old,
    hash: hashKey(value),
    prefix: keyPrefix(value),
    rotatedAt: new Date(now).toISOString(),
    retired: retired.slice(-MAX_RETIRED),
  };
  return { record, value, until };
}

/** The record revoked at `now`; a revoked record is returned as it is. */
export function revokedKeyRecord(old: KeyRecord, now: number): KeyRecord {
  return old.revokedAt !== undefined ? old : { ...old, revokedAt: new Date(now).toISOString() };
}

/** The record with new restrictions (undefined: none); a revoked key cannot be changed. */
export function restrictedKeyRecord(old: KeyRecord, restrictions: KeyRestrictions | undefined): KeyRecord {
  if (old.revokedAt !== undefined) throw new KeyInputError(`key ${old.prefix} is revoked and cannot be changed`);
  const { restrictions: _previous, ...rest } = old;
  return restrictions === undefined ? rest : { ...rest, restrictions };
}

/** Every hash a record names: its value's and its retired values'. */
export function hashesOf(record: KeyRecord): string[] {
  return [record.hash, ...record.retired.map((r) => r.hash)];
}

/** The hashes of a record that can still work after `now` (none once revoked). */
export function workingHashes(record: KeyRecord, now: number): string[] {
  if (record.revokedAt !== undefined) return [];
  return [record.hash, ...record.retired.filter((r) => Date.parse(r.until) > now).map((r) => r.hash)];
}

/**
 * What a change from `before` to `after` announces: every hash either record names,
 * and those of them that no longer work.
 */
export function changeBetween(before: KeyRecord | undefined, after: KeyRecord, now: number): Extract<StoreChange, { hashes: unknown }> {
  const hashes = [...new Set([...hashesOf(after), ...(before === undefined ? [] : hashesOf(before))])];
  const working = new Set(workingHashes(after, now));
  const invalid = hashes.filter((h) => !working.has(h));
  return invalid.length === 0 ? { hashes } : { hashes, invalid };
}

/** The lookup answer for a hash of this record: until when that value works. */
export function matchOf(record: KeyRecord, hash: string): KeyMatch {
  const expiry = record.expiresAt === undefined ? Infinity : Date.parse(record.expiresAt);
  if (record.hash === hash) return { record, validUntil: expiry };
  const retired = record.retired.find((r) => r.hash === hash);
  return { record, validUntil: Math.min(expiry, retired === undefined ? 0 : Date.parse(retired.until)) };
}

/** A key operation refused for its input or the key's state: the caller's mistake, never a 500. */
export class KeyInputError extends ControlError {
  /** `field`: the input field at fault (`origins`, `ips` …), so a form can show the message beside it. */
  constructor(message: string, field?: string) {
    super('INVALID_INPUT', message, { field });
    this.name = 'KeyInputError';
  }
}

/** Too many key changes for one account in too little time: the caller may try again in `retryAfter` seconds. */
export class KeyChangesLimitedError extends ControlError {
  constructor(retryAfter: number, perHour: number) {
    super('TOO_MANY_KEY_CHANGES', `too many key changes for this account (at most ${perHour} an hour): try again in ${retryAfter} s`, {
      retryAfter,
    });
    this.name = 'KeyChangesLimitedError';
  }
}

/** A prefix several keys share: only the id says which one is meant. */
export class KeyAmbiguousError extends KeyInputError {
  constructor(readonly ref: string) {
    super(`prefix "${ref}" matches more than one key: use the key's id (key_…) instead`);
    this.name = 'KeyAmbiguousError';
  }
}

export class KeyNotFoundError extends ControlError {
  constructor(readonly ref: string) {
    super('KEY_NOT_FOUND', `no key with id or prefix "${ref}"`);
    this.name = 'KeyNotFoundError';
  }
}

export { matchesAny, matchesPattern } from './patterns.js';
