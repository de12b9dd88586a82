// Byte-exact views into JSON text that JSON.parse has already accepted (or that we
// validate separately): the raw text of each batch member and of an object's member.
// JSON-RPC ids must come back exactly as sent (`18446744073709551615`, `"\u0041"`),
// which a round trip through JS values cannot promise.

/** Char codes of JSON's structural characters, for scanners over JSON text. */
export const QUOTE = 34;
export const BACKSLASH = 92;
export const OPEN_BRACE = 123;
export const CLOSE_BRACE = 125;
export const OPEN_BRACKET = 91;
export const CLOSE_BRACKET = 93;
export const COMMA = 44;
export const COLON = 58;

function isWs(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

export function skipWs(s: string, i: number): number {
  while (i < s.length && isWs(s.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string literal whose opening quote is at i, or -1. */
export function skipString(s: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = s.indexOf('"', j);
    if (q < 0) return -1;
    let bs = 0;
    for (let k = q - 1; k > i && s.charCodeAt(k) === BACKSLASH; k--) bs++;
    if (bs % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** Does the text look like one JSON object (`{`…`}` once white space is trimmed)? A cheap check, not a parse. */
export function isObjectText(text: string): boolean {
  let i = 0;
  let j = text.length - 1;
  while (i <= j && isWs(text.charCodeAt(i))) i++;
  while (j >= i && isWs(text.charCodeAt(j))) j--;
  return text.charCodeAt(i) === OPEN_BRACE && text.charCodeAt(j) === CLOSE_BRACE;
}

/** Index just past the JSON value starting at i (no leading whitespace), or -1. */
export function skipValue(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === QUOTE) return skipString(s, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const d = s.charCodeAt(j);
      if (d === QUOTE) {
        j = skipString(s, j);
        if (j < 0) return -1;
        j--;
      } else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < s.length) {
    const d = s.charCodeAt(j);
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isWs(d)) break;
    j++;
  }
  return j > i ? j : -1;
}

/**
 * Raw text of each member of a top-level JSON array, or undefined when `s` is not one.
 * At most `max` + 1 members are read: a longer array comes back with `max` + 1 of them
 * (the rest unread and unchecked), so a huge batch costs a scan, never its members.
 */
export function splitArray(s: string, max = Infinity): string[] | undefined {
  let i = skipWs(s, 0);
  if (s.charCodeAt(i) !== OPEN_BRACKET) return undefined;
  const out: string[] = [];
  i = skipWs(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_BRACKET) return skipWs(s, i + 1) === s.length ? out : undefined;
  for (;;) {
    const end = skipValue(s, i);
    if (end < 0) return undefined;
    out.push(s.slice(i, end));
    if (out.length > max) return out;
    i = skipWs(s, end);
    const c = s.charCodeAt(i);
    if (c === COMMA) {
      i = skipWs(s, i + 1);
      continue;
    }
    if (c === CLOSE_BRACKET) return skipWs(s, i + 1) === s.length ? out : undefined;
    return undefined;
  }
}

/** Is the name literal at [i, end) (quotes included) `name`, a plain name (no quote, no backslash)? */
function nameIs(s: string, i: number, end: number, name: string): boolean {
  const len = end - i - 2;
  if (len === name.length) return s.startsWith(name, i + 1);
  // Escapes make a literal longer than its text (`"\u0069d"` is `id`): decoded, which is rare.
  if (len < name.length) return false;
  for (let k = i + 1; k < end - 1; k++) if (s.charCodeAt(k) === BACKSLASH) return JSON.parse(s.slice(i, end)) === name;
  return false;
}

/** Where the value of the first top-level member `name` of a JSON object's text starts, or -1. No allocation. */
export function memberStart(s: string, name: string): number {
  let i = skipWs(s, 0);
  if (s.charCodeAt(i) !== OPEN_BRACE) return -1;
  i = skipWs(s, i + 1);
  while (i < s.length && s.charCodeAt(i) === QUOTE) {
    const keyEnd = skipString(s, i);
    if (keyEnd < 0) return -1;
    const found = nameIs(s, i, keyEnd, name);
    i = skipWs(s, keyEnd);
    if (s.charCodeAt(i) !== COLON) return -1;
    i = skipWs(s, i + 1);
    if (found) return i;
    const end = skipValue(s, i);
    if (end < 0) return -1;
    i = skipWs(s, end);
    if (s.charCodeAt(i) !== COMMA) return -1;
    i = skipWs(s, i + 1);
  }
  return -1;
}

/** Raw text of the top-level member `name` of a JSON object's text, or undefined. */
export function memberRaw(s: string, name: string): string | undefined {
  const start = memberStart(s, name);
  if (start < 0) return undefined;
  const end = skipValue(s, start);
  return end < 0 ? undefined : s.slice(start, end);
}

/** The text with the value of its top-level member `name` replaced by `raw`; unchanged when it has none. */
export function withMemberRaw(s: string, name: string, raw: string): string {
  const start = memberStart(s, name);
  const end = start < 0 ? -1 : skipValue(s, start);
  return end < 0 ? s : s.slice(0, start) + raw + s.slice(end);
}

/**
 * Are there at most `limit` opening brackets and braces in the text (strings included)?
 * Then no nesting can be deeper than `limit`: the usual small call never needs the
 * character-by-character walk of nestingDepth. Native indexOf does the counting.
 */
export function fewOpenings(s: string, limit: number): boolean {
  let n = 0;
  for (let i = s.indexOf('{'); i >= 0; i = s.indexOf('{', i + 1)) if (++n > limit) return false;
  for (let i = s.indexOf('['); i >= 0; i = s.indexOf('[', i + 1)) if (++n > limit) return false;
  return true;
}

/** Maximum nesting depth of a JSON text (strings skipped); -1 when unbalanced. */
export function nestingDepth(s: string, limit: number): number {
  let depth = 0;
  let max = 0;
  for (let j = 0; j < s.length; j++) {
    const d = s.charCodeAt(j);
    if (d === QUOTE) {
      j = skipString(s, j);
      if (j < 0) return -1;
      j--;
    } else if (d === OPEN_BRACE || d === OPEN_BRACKET) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) depth--;
  }
  return depth === 0 ? max : -1;
}
