// Finding the caller's API key in a request: header `apikey` (any case: Node
// lower-cases names) or query `apikey` (any case). Returns the query with the key
// removed so nothing downstream can forward it.

import { GatewayError } from '../errors.js';
import { isAcceptableKey } from './key-format.js';

const HAS_QUERY_KEY = /(?:^|&)apikey=/i;

export interface ExtractedKey {
  readonly key: string;
  /** The query string without any apikey parameter. */
  readonly query: string;
}

function addCandidate(found: string | undefined, value: string): string {
  if (found !== undefined && found !== value) throw new GatewayError('CONFLICTING_KEYS');
  return value;
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
  if (query !== '' && HAS_QUERY_KEY.test(query)) {
    const kept: string[] = [];
    for (const pair of query.split('&')) {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      if (name.toLowerCase() === 'apikey') {
        let value: string;
        try {
          value = decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' '));
        } catch {
          throw new GatewayError('INVALID_KEY');
        }
        key = addCandidate(key, value);
      } else if (pair !== '') kept.push(pair);
    }
    rest = kept.join('&');
  }
  if (key === undefined || key === '') throw new GatewayError('MISSING_KEY');
  if (!isAcceptableKey(key)) throw new GatewayError('INVALID_KEY');
  return { key, query: rest };
}
