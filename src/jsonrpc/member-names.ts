// Member names that a Go node would read differently from JSON.parse. Go's decoder
// keeps the LAST of duplicate members and matches struct fields case-insensitively
// (`Method`, `PARAMS`, `ſ` for `s`), so `{"method":"a","Method":"b"}` is "a" to the
// gateway and "b" to geth. One scan of an item's text refuses any object holding two
// names equal ignoring case, and names the gateway reads that are spelt otherwise.

import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COMMA,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
  skipString,
  skipValue,
  skipWs,
} from './raw-json.js';

/** Above this many members an object's names go into a Set: the pairwise check stays small. */
const PAIRWISE_MAX = 32;
/** Names echoed in error messages are cut here: the message must stay small. */
const ECHO_MAX = 40;
/** A lone surrogate (`"\ud800"`): Go decodes it as U+FFFD, JS keeps it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * One UTF-16 unit as Go folds names for matching struct fields: ToUpper(ToLower(r)).
 * ASCII is done inline; other units use a table built on first need (128 KB, once),
 * which also holds the letters whose fold is ASCII: `ſ` → S, Kelvin sign → K, `İ` `ı` → I.
 */
function fold(c: number): number {
  if (c >= 97 && c <= 122) return c - 32;
  if (c < 128) return c;
  return (wideFolds ??= buildWideFolds())[c] as number;
}

let wideFolds: Uint16Array | undefined;

function buildWideFolds(): Uint16Array {
  const table = new Uint16Array(65536);
  for (let c = 0; c < 65536; c++) {
    const ch = String.fromCharCode(c);
    // Go uses the simple (one letter) mappings; JS the full ones, which differ only where
    // they give several letters (ß → SS) or, for İ, a dotted i: keep the one-letter form.
    const lowered = c === 0x130 ? 'i' : ch.toLowerCase();
    const lower = lowered.length === 1 ? lowered : ch;
    const upper = lower.toUpperCase();
    table[c] = (upper.length === 1 ? upper : lower).charCodeAt(0);
  }
  return table;
}

function foldText(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) out += String.fromCharCode(fold(s.charCodeAt(i)));
  return out;
}

/** Hash of a name's folded text: names that fold alike hash alike, so most compares stop here. */
function foldHash(s: string, from: number, to: number): number {
  let h = 0;
  for (let i = from; i < to; i++) h = (Math.imul(h, 31) + fold(s.charCodeAt(i))) | 0;
  return h;
}

/** Names that must be spelt exactly: the envelope's at the top of an item, a plugin's inside it. */
export class ExactNames {
  readonly topHashes: Int32Array;
  readonly nestedHashes: Int32Array;
  constructor(
    readonly top: readonly string[],
    readonly nested: readonly string[],
  ) {
    this.topHashes = Int32Array.from(top, (n) => foldHash(n, 0, n.length));
    this.nestedHashes = Int32Array.from(nested, (n) => foldHash(n, 0, n.length));
  }
}

export const ENVELOPE_NAMES = new ExactNames(['jsonrpc', 'id', 'method', 'params'], []);

/** The envelope's names plus the names a plugin reads inside params (e.g. EVM `fromBlock`). */
export function exactNames(nested: readonly string[]): ExactNames {
  return new ExactNames(ENVELOPE_NAMES.top, [...nested]);
}

/**
 * Per-scan state, reused (the scan is synchronous): where each recorded name starts,
 * how long it is and its fold hash; per open container the index of its first name
 * (-1: an array). Names written with escapes and objects past PAIRWISE_MAX members,
 * both rare, use the two maps, emptied after each scan that used them.
 */
let starts = new Int32Array(64);
let lens = new Int32Array(64);
let hashes = new Int32Array(64);
let bases = new Int32Array(64);
const decoded = new Map<number, string>();
const sets = new Map<number, Set<string>>();

function grown(a: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  if (need < a.length) return a;
  const b = new Int32Array(Math.max(need + 1, a.length * 2));
  b.set(a);
  return b;
}

/** The name at index k as Go reads it: decoded, lone surrogates as U+FFFD. */
function nameText(s: string, k: number): string {
  return decoded.get(k) ?? s.slice(starts[k], (starts[k] as number) + (lens[k] as number));
}

/** Do the names at a and b (same hash) fold to the same text? */
function sameFolded(s: string, a: number, b: number): boolean {
  if (decoded.size > 0 && (decoded.has(a) || decoded.has(b))) return foldText(nameText(s, a)) === foldText(nameText(s, b));
  const len = lens[a] as number;
  if (len !== lens[b]) return false;
  const sa = starts[a] as number;
  const sb = starts[b] as number;
  for (let i = 0; i < len; i++) if (fold(s.charCodeAt(sa + i)) !== fold(s.charCodeAt(sb + i))) return false;
  return true;
}

/** Is name k, whose hash matched `name`'s, that name spelt otherwise? (Spelt exactly is fine.) */
function isVariant(s: string, k: number, name: string): boolean {
  const text = decoded.size === 0 ? undefined : decoded.get(k);
  if (text !== undefined) return text !== name && text.length === name.length && foldText(text) === foldText(name);
  const start = starts[k] as number;
  if (lens[k] !== name.length) return false;
  let exact = true;
  for (let i = 0; i < name.length; i++) {
    const c = s.charCodeAt(start + i);
    const n = name.charCodeAt(i);
    if (c !== n) {
      if (fold(c) !== fold(n)) return false;
      exact = false;
    }
  }
  return !exact;
}

function problem(s: string, k: number, what: string): string {
  const text = nameText(s, k);
  const name = JSON.stringify(text.length > ECHO_MAX ? `${text.slice(0, ECHO_MAX)}…` : text);
  return `Invalid request: member ${name} ${what} (member names must be unique ignoring case)`;
}

/** A name literal with escapes (`"meth\u006fd"`), decoded as Go decodes it. */
function decodeName(s: string, from: number, to: number): string {
  return (JSON.parse(s.slice(from - 1, to + 1)) as string).replace(LONE_SURROGATE, '\uFFFD');
}

/**
 * Check every object in `s`, the text of one item that JSON.parse has accepted.
 * Returns undefined when no object holds two names equal ignoring case and no name
 * in `names` is spelt in another case; else what is wrong.
 */
export function memberNameProblem(s: string, names: ExactNames = ENVELOPE_NAMES): string | undefined {
  const found = scan(s, names);
  if (decoded.size > 0) decoded.clear();
  if (sets.size > 0) sets.clear();
  return found;
}

function scan(s: string, names: ExactNames): string | undefined {
  let depth = 0;
  let count = 0; // names recorded in `starts`
  let expectName = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === QUOTE && !expectName) {
      i = skipString(s, i) - 1;
    } else if (c === QUOTE) {
      expectName = false;
      const k = count++;
      if (k >= starts.length) {
        starts = grown(starts, k);
        lens = grown(lens, k);
        hashes = grown(hashes, k);
      }
      if (decoded.size > 0) decoded.delete(k); // left by a closed object whose slot this is now
      // One pass finds the name's end and hashes it; a name with escapes is decoded first.
      let h = 0;
      let j = i + 1;
      for (; ; j++) {
        const d = s.charCodeAt(j);
        if (d === QUOTE) break;
        if (d === BACKSLASH) {
          j = skipString(s, i) - 1;
          const text = decodeName(s, i + 1, j);
          decoded.set(k, text);
          h = foldHash(text, 0, text.length);
          break;
        }
        h = (Math.imul(h, 31) + (d >= 97 && d <= 122 ? d - 32 : d < 128 ? d : fold(d))) | 0;
      }
      starts[k] = i + 1;
      lens[k] = j - i - 1;
      hashes[k] = h;
      const found = checkName(s, k, depth, names);
      if (found !== undefined) return found;
      i = j;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth >= bases.length) bases = grown(bases, depth);
      bases[depth++] = c === OPEN_BRACE ? count : -1;
      expectName = c === OPEN_BRACE;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (c === CLOSE_BRACE) {
        count = bases[depth] as number;
        if (sets.size > 0) sets.delete(depth);
      }
      expectName = false;
    } else if (c === COMMA) {
      expectName = bases[depth - 1] !== -1;
    }
  }
  return undefined;
}

/** Compare name k with the exact names for its depth and with the names before it in its object. */
function checkName(s: string, k: number, depth: number, names: ExactNames): string | undefined {
  const h = hashes[k];
  const table = depth === 1 ? names.top : names.nested;
  const tableHashes = depth === 1 ? names.topHashes : names.nestedHashes;
  for (let n = 0; n < tableHashes.length; n++) {
    if (tableHashes[n] === h && isVariant(s, k, table[n] as string)) return problem(s, k, `is "${table[n]}" in another case`);
  }
  const base = bases[depth - 1] as number;
  let set = sets.size === 0 ? undefined : sets.get(depth - 1);
  if (set === undefined && k - base >= PAIRWISE_MAX) {
    set = new Set<string>();
    for (let j = base; j < k; j++) set.add(foldText(nameText(s, j)));
    sets.set(depth - 1, set);
  }
  if (set !== undefined) {
    const key = foldText(nameText(s, k));
    if (set.has(key)) return problem(s, k, 'appears twice');
    set.add(key);
    return undefined;
  }
  for (let j = base; j < k; j++) if (hashes[j] === h && sameFolded(s, j, k)) return problem(s, k, 'appears twice');
  return undefined;
}

/**
 * The raw `id` of an item refused for its names, when it is beyond doubt: exactly one
 * top-level name folds to "id" and it is spelt `id`. Else undefined (answered with null).
 */
export function unambiguousId(s: string): string | undefined {
  let i = skipWs(s, 0) + 1;
  let found: string | undefined;
  for (;;) {
    i = skipWs(s, i);
    if (s.charCodeAt(i) !== QUOTE) return found;
    const end = skipString(s, i);
    const literal = s.slice(i + 1, end - 1);
    const name = literal.includes('\\') ? decodeName(s, i + 1, end - 1) : literal;
    i = skipWs(s, skipWs(s, end) + 1); // past the colon
    const valueEnd = skipValue(s, i);
    if (name.length === 2 && foldText(name) === 'ID') {
      if (name !== 'id' || found !== undefined) return undefined;
      found = s.slice(i, valueEnd);
    }
    i = skipWs(s, valueEnd);
    if (s.charCodeAt(i) !== COMMA) return found;
    i++;
  }
}
