// What an API key looks like: `nrk_` + 32 base62 characters of CSPRNG output. Only
// the SHA-256 of a key is ever stored; the first characters are kept as a prefix so
// a person can recognise a key without it being usable.

import { hash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'nrk_';
const BODY_LENGTH = 32;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Shape of anything we accept as a key before hashing; anything else is refused unread. */
const ACCEPTABLE = /^[A-Za-z0-9_-]{16,128}$/;

export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      // 62 * 4 = 248: rejecting bytes ≥ 248 keeps every character equally likely.
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

export function generateKey(): string {
  return KEY_PREFIX + randomBase62(BODY_LENGTH);
}

export function generateId(kind: string): string {
  return `${kind}_${randomBase62(12)}`;
}

/** One-shot hashing: no Hash object per request (this runs on every call). */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** The recognisable, non-secret start of a key (e.g. `nrk_AbC1`). */
export function keyPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 4);
}

export function isAcceptableKey(key: string): boolean {
  return ACCEPTABLE.test(key);
}
