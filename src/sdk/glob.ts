// Glob patterns over names for plugins (`*` matches any run of characters): the same
// linear-time matching key permissions use, with a matcher built once per list.

import { matchesAny, matchesPattern } from '../auth/patterns.js';

export type Matcher = (name: string) => boolean;

export const matchesGlob = matchesPattern;

/** A matcher for any of the patterns (an empty list matches nothing). */
export function globMatcher(patterns: readonly string[]): Matcher {
  if (patterns.length === 0) return () => false;
  if (patterns.includes('*')) return () => true;
  return (name) => matchesAny(patterns, name);
}
