// Secrets other than API keys: one-time sign-in tokens, session ids, the CSRF token
// of a session, and the constant-time comparison every secret check uses. Only
// digests of these are ever stored (hashKey, the same SHA-256 as keys).

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from './key-format.js';

export const SIGNIN_TOKEN_PREFIX = 'nrs_';
const SIGNIN_TOKEN = /^nrs_[A-Za-z0-9]{32}$/;
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

/** `nrs_` + 32 base62 characters (190 bits), so a leaked one is recognisable in logs and scans. */
export function newSigninToken(): string {
  return SIGNIN_TOKEN_PREFIX + randomBase62(32);
}

export function isSigninTokenShape(v: unknown): v is string {
  return typeof v === 'string' && SIGNIN_TOKEN.test(v);
}

/** 256 random bits, base64url: the value of the session cookie. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

export function isSessionIdShape(v: unknown): v is string {
  return typeof v === 'string' && SESSION_ID.test(v);
}

/**
 * The session's CSRF token, derived from the session id (an HMAC keyed by it), so no
 * second secret is stored and every instance computes the same token. It reveals
 * nothing about the id, and differs from the id's stored SHA-256.
 */
export function csrfTokenFor(sessionId: string): string {
  return createHmac('sha256', sessionId).update('noderouter dashboard csrf v1').digest('base64url');
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** A checker for one secret: compares SHA-256 digests in constant time, so timing reveals nothing. */
export function secretMatcher(secret: string | undefined): (candidate: string | undefined) => boolean {
  if (secret === undefined) return () => false;
  const want = digest(secret);
  return (candidate) => candidate !== undefined && timingSafeEqual(want, digest(candidate));
}

export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}
