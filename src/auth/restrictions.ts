// Where a key may be used from, as its record holds it: allowed origins, client
// addresses (CIDR), referrer prefixes, contract addresses and user agents, each an
// optional list (absent: unrestricted). Input from the CLI, the admin API and the
// dashboard is checked and written in canonical form here, with messages that name
// the field; a record's lists are compiled once (per record object) for matching.

import { inRange, ipBytes, parseRange, type IpRange } from './ip-ranges.js';
import { matchesAny } from './patterns.js';
import { canonicalOrigin, canonicalReferrer, OriginMatcher, ReferrerMatcher } from './origin-patterns.js';

export interface KeyRestrictions {
  /** `Origin` values the key may be used from (exact, or `https://*.example.com`). */
  readonly origins?: readonly string[];
  /** Client addresses and CIDR ranges, IPv4 and IPv6. */
  readonly ips?: readonly string[];
  /** `Referer` prefixes (an origin pattern and a path prefix). */
  readonly referrers?: readonly string[];
  /** Contract addresses calls may target (hex, lower case), for calls a plugin names targets of. */
  readonly contracts?: readonly string[];
  /** `User-Agent` patterns (`*` matches any run of characters). */
  readonly userAgents?: readonly string[];
}

export const RESTRICTION_FIELDS = ['origins', 'ips', 'referrers', 'contracts', 'userAgents'] as const;
export type RestrictionField = (typeof RESTRICTION_FIELDS)[number];

/** Entries one list may hold. */
export const MAX_ENTRIES = 100;
const MAX_ENTRY_LENGTH = 256;
const CONTRACT = /^0x([0-9a-f]{40}|[0-9a-f]{64})$/;
const USER_AGENT = /^[\x20-\x7e]+$/;
/** A list in one string: entries apart by commas or white space; User-Agent patterns (which hold spaces) by commas or lines. */
const SEPARATORS = /[\s,]+/;
const AGENT_SEPARATORS = /[,\n]+/;

/** One entry in canonical form; throws an Error with what is wrong (the field is added by the caller). */
const CANONICAL: Readonly<Record<RestrictionField, (entry: string) => string>> = {
  origins: canonicalOrigin,
  referrers: canonicalReferrer,
  ips(entry) {
    parseRange(entry);
    return entry.toLowerCase();
  },
  contracts(entry) {
    const c = entry.toLowerCase();
    if (!CONTRACT.test(c))
      throw new Error(`"${entry}" is not a contract address (0x and 40 hex digits, like 0x5fbdb2315678afecb367f032d93f642f64180aa3)`);
    return c;
  },
  userAgents(entry) {
    if (!USER_AGENT.test(entry)) throw new Error(`"${entry}" has characters a User-Agent cannot have`);
    return entry;
  },
};

/**
 * A field's list from input: an array of strings or one string of them (see SEPARATORS).
 * Absent (undefined) leaves the field as it was; null, [], '' or '*' lift it.
 */
function entries(v: unknown, field: RestrictionField, fail: (field: RestrictionField, message: string) => never): string[] | undefined {
  if (v === undefined) return undefined;
  if (v === null) return [];
  const list = typeof v === 'string' ? v.split(field === 'userAgents' ? AGENT_SEPARATORS : SEPARATORS) : v;
  if (!Array.isArray(list) || list.some((e) => typeof e !== 'string')) fail(field, 'must be a list of strings');
  const trimmed = (list as string[]).map((e) => e.trim()).filter((e) => e !== '');
  if (trimmed.length === 1 && trimmed[0] === '*') return [];
  if (trimmed.length > MAX_ENTRIES) fail(field, `may list at most ${MAX_ENTRIES} entries`);
  const out: string[] = [];
  for (const e of trimmed) {
    if (e.length > MAX_ENTRY_LENGTH) fail(field, `entries are at most ${MAX_ENTRY_LENGTH} characters`);
    if (e === '*') fail(field, '"*" (any) cannot be listed with other entries: give "*" alone to lift the restriction');
    let c: string;
    try {
      c = CANONICAL[field](e);
    } catch (err) {
      fail(field, (err as Error).message);
    }
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

/**
 * The restrictions `input` asks for, over `base` (the record's own): each field
 * given replaces that list, absent fields stay. Undefined when nothing is restricted.
 * `fail` throws the caller's error type with the field named.
 */
export function mergeRestrictions(
  input: Readonly<Partial<Record<RestrictionField, unknown>>>,
  base: KeyRestrictions | undefined,
  fail: (field: RestrictionField, message: string) => never,
): KeyRestrictions | undefined {
  const out: Partial<Record<RestrictionField, readonly string[]>> = {};
  let any = false;
  for (const field of RESTRICTION_FIELDS) {
    const list = entries(input[field], field, fail) ?? base?.[field];
    if (list === undefined || list.length === 0) continue;
    out[field] = list;
    any = true;
  }
  return any ? out : undefined;
}

/** Restrictions ready to match. Fail closed: a stored entry that cannot be read matches nothing, and its list still restricts. */
export interface CompiledRestrictions {
  readonly origins: OriginMatcher | undefined;
  readonly referrers: ReferrerMatcher | undefined;
  readonly ips: readonly IpRange[] | undefined;
  readonly contracts: ReadonlySet<string> | undefined;
  readonly userAgents: readonly string[] | undefined;
}

const compiledOf = new WeakMap<KeyRestrictions, CompiledRestrictions>();

function readable<T>(list: readonly string[], read: (e: string) => T): T[] {
  const out: T[] = [];
  for (const e of list) {
    try {
      out.push(read(e));
    } catch {
      // Matches nothing: the list (non-empty) still restricts.
    }
  }
  return out;
}

/** Compiled once per record object: records are replaced, never changed, when a key changes. */
export function compiledRestrictions(r: KeyRestrictions): CompiledRestrictions {
  let c = compiledOf.get(r);
  if (c !== undefined) return c;
  const some = (l: readonly string[] | undefined): l is readonly string[] => l !== undefined && l.length > 0;
  c = {
    origins: some(r.origins) ? new OriginMatcher(readable(r.origins, canonicalOrigin)) : undefined,
    referrers: some(r.referrers) ? new ReferrerMatcher(readable(r.referrers, canonicalReferrer)) : undefined,
    ips: some(r.ips) ? readable(r.ips, parseRange) : undefined,
    contracts: some(r.contracts) ? new Set(r.contracts.map((a) => a.toLowerCase())) : undefined,
    userAgents: some(r.userAgents) ? r.userAgents : undefined,
  };
  compiledOf.set(r, c);
  return c;
}

/** Is this address (as text) one the ranges allow? An address that cannot be read is allowed by none. */
export function addressAllowed(ranges: readonly IpRange[], address: string | undefined): boolean {
  const bytes = address === undefined ? undefined : ipBytes(address);
  if (bytes === undefined) return false;
  for (const r of ranges) if (inRange(bytes, r)) return true;
  return false;
}

export function userAgentAllowed(patterns: readonly string[], userAgent: string | undefined): boolean {
  return userAgent !== undefined && matchesAny(patterns, userAgent);
}
