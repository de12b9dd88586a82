// Finding the caller's API key in a request: header `apikey` (any case: Node
// lower-cases names) or query `apikey` in any case and any percent-encoding
// (`api%6Bey`, `APIKEY`, `apikey%3D…`). Returns the query with every such parameter
// removed, so nothing downstream can forward the key to a node.

import { GatewayError } from '../errors.js';
import { isAcceptableKey } from './key-format.js';

/** A query that could hold the key: the name itself, or any percent-encoding. */
const MAYBE_QUERY_KEY = /apikey|%/i;
const PLUS = /\+/g;
/** Decoded this many times at most: a name encoded twice (`api%256Bey`) is still the key's. */
const MAX_DECODES = 3;

export interface ExtractedKey {
  readonly key: string;
  /** The query string without any apikey parameter. */
  readonly query: string;
}

function addCandidate(found: string | undefined, value: string): string {
  if (found !== undefined && found !== value) throw new GatewayError('CONFLICTING_KEYS');
  return value;
}

/** Could this query (without '?') name a key? A query that cannot is relayed as it is. */
export function mayHoldKey(query: string): boolean {
  return query !== '' && MAYBE_QUERY_KEY.test(query);
}

/** Throws MISSING_KEY, CONFLICTING_KEYS or INVALID_KEY (malformed: never looked up). */
export function extractKey(header: string | string[] | undefined, query: string): ExtractedKey {
  let key: string | undefined;
  if (typeof header === 'string' && !header.includes(',')) key = header.trim();
  else if (header !== undefined) {
    const values = Array.isArray(header) ? header : [header];
    for (const v of values) {
      // Node joins repeated unknown headers with ", ".
      for (const part of v.split(',')) key = addCandidate(key, part.trim());
    }
  }
  let rest = query;
  if (mayHoldKey(query)) {
    const found: string[] = [];
    rest = withoutKeyParams(query, found);
    for (const value of found) key = addCandidate(key, value);
  }
  if (key === undefined || key === '') throw new GatewayError('MISSING_KEY');
  if (!isAcceptableKey(key)) throw new GatewayError('INVALID_KEY');
  return { key, query: rest };
}

function decodeOnce(text: string): string {
  try {
    return decodeURIComponent(text.replace(PLUS, ' '));
  } catch {
    return text; // a stray `%` is no encoding: compared as it is
  }
}

/**
 * The value of a query segment that names the key, or undefined. Its name is the key's
 * when it decodes (up to MAX_DECODES times, any case) to `apikey`; a segment whose
 * `=` is itself encoded (`apikey%3D…`) is the key's too, as a decoder of the whole
 * query would read it.
 */
function keyParam(segment: string): string | undefined {
  const eq = segment.indexOf('=');
  let name = eq < 0 ? segment : segment.slice(0, eq);
  for (let n = 0; n < MAX_DECODES && name.includes('%'); n++) name = decodeOnce(name);
  const bare = name.trim();
  const lower = bare.toLowerCase();
  if (lower === 'apikey') return eq < 0 ? '' : decodeValue(segment.slice(eq + 1));
  if (lower.startsWith('apikey=')) return bare.slice(7) + (eq < 0 ? '' : `=${decodeValue(segment.slice(eq + 1))}`);
  return undefined;
}

function decodeValue(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(PLUS, ' '));
  } catch {
    throw new GatewayError('INVALID_KEY');
  }
}

/**
 * The query without the key's parameters; their non-empty values go to `found`. Pairs
 * are split on `&` and on `;` (some servers split there too), the rest is kept byte
 * for byte.
 */
function withoutKeyParams(query: string, found: string[]): string {
  const kept: string[] = [];
  for (const pair of query.split('&')) {
    const parts = pair.split(';');
    const keep: string[] = [];
    for (const part of parts) {
      const value = keyParam(part);
      if (value === undefined) keep.push(part);
      else if (value !== '') found.push(value);
    }
    if (keep.length === parts.length) {
      if (pair !== '') kept.push(pair);
    } else if (keep.some((p) => p !== '')) kept.push(keep.join(';'));
  }
  return kept.join('&');
}
