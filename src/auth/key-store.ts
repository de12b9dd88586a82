// The key store contract: records of API keys, found by the SHA-256 of their value.
// Backends (file, Redis) implement it; the cache and the request path see only
// this interface. A record never holds a key's value.

import { generateId, generateKey, hashKey, keyPrefix } from './key-format.js';

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
  readonly expiresAt?: string;
}

/** What changed, so caches can drop exactly those hashes (or everything). */
export type StoreChange = { readonly hashes: readonly string[] } | { readonly all: true };

export interface KeyStore {
  /** Find the record a presented value's hash belongs to, current or retired. */
  findByHash(hash: string): Promise<KeyMatch | undefined>;
  /** Creates a key; the value is returned here and never again. */
  create(input: NewKey): Promise<{ record: KeyRecord; value: string }>;
  get(idOrPrefix: string): Promise<KeyRecord | undefined>;
  list(filter?: { account?: string }): Promise<KeyRecord[]>;
  revoke(id: string): Promise<KeyRecord>;
  /** New value; the old one keeps working for `graceSeconds`. */
  rotate(id: string, graceSeconds: number): Promise<{ record: KeyRecord; value: string }>;
  /** Store a record as it is, replacing one with the same id (import between stores: hashes move, never values). */
  put(record: KeyRecord): Promise<void>;
  /** Record last use (may be batched by the backend). */
  touch(id: string, at: number): void;
  onChange(listener: (change: StoreChange) => void): void;
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
    createdAt: new Date(now).toISOString(),
    lastUsedAt: undefined,
    revokedAt: undefined,
    expiresAt: input.expiresAt,
    rotatedAt: undefined,
    retired: [],
  };
  return { record, value };
}

/** A rotated key: a new value; the old one is retired until the grace ends. */
export function rotatedKeyRecord(old: KeyRecord, graceSeconds: number, now: number): { record: KeyRecord; value: string; until: number } {
  if (old.revokedAt !== undefined) throw new KeyInputError(`key ${old.prefix} is revoked and cannot be rotated`);
  const value = generateKey();
  const until = now + graceSeconds * 1000;
  const record: KeyRecord = {
    ...old,
    hash: hashKey(value),
    prefix: keyPrefix(value),
    rotatedAt: new Date(now).toISOString(),
    // Values whose grace has passed are dropped: they can never work again.
    retired: [
      ...old.retired.filter((r) => Date.parse(r.until) > now),
      { hash: old.hash, prefix: old.prefix, until: new Date(until).toISOString() },
    ],
  };
  return { record, value, until };
}

/** A key operation refused for its input or the key's state: the caller's mistake, never a 500. */
export class KeyInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyInputError';
  }
}

export class KeyNotFoundError extends Error {
  constructor(readonly ref: string) {
    super(`no key with id or prefix "${ref}"`);
    this.name = 'KeyNotFoundError';
  }
}

const patternCache = new Map<string, RegExp>();

/** `*` matches any run of characters; everything else is literal. Compiled once per pattern. */
export function matchesPattern(pattern: string, value: string): boolean {
  if (pattern === '*') return true;
  let re = patternCache.get(pattern);
  if (re === undefined) {
    const body = pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
      .join('.*');
    re = new RegExp(`^${body}$`);
    patternCache.set(pattern, re);
  }
  return re.test(value);
}

export function matchesAny(patterns: readonly string[], value: string): boolean {
  for (const p of patterns) if (matchesPattern(p, value)) return true;
  return false;
}
