// Key permission patterns: `*` matches any run of characters, everything else is
// literal. A pattern is split once on `*` and matched segment by segment, greedily
// left to right (the first fit of each middle segment is always a right choice), so
// matching is linear in the value whatever the pattern: no regex, no backtracking.

interface Compiled {
  /** The literal text before the first `*`. */
  readonly head: string;
  /** The literal text after the last `*`; undefined when the pattern has no `*`. */
  readonly tail: string | undefined;
  /** Literal segments between stars, in order (empty ones dropped). */
  readonly middle: readonly string[];
}

const compiled = new Map<string, Compiled>();
/** Patterns come from key records: a bound keeps hostile imports from growing the map. */
const MAX_COMPILED = 10_000;

function compile(pattern: string): Compiled {
  let c = compiled.get(pattern);
  if (c !== undefined) return c;
  const parts = pattern.split('*');
  c =
    parts.length === 1
      ? { head: pattern, tail: undefined, middle: [] }
      : { head: parts[0] as string, tail: parts[parts.length - 1] as string, middle: parts.slice(1, -1).filter((p) => p !== '') };
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(pattern, c);
  return c;
}

export function matchesPattern(pattern: string, value: string): boolean {
  if (pattern === '*') return true;
  const { head, tail, middle } = compile(pattern);
  if (tail === undefined) return value === pattern;
  if (value.length < head.length + tail.length || !value.startsWith(head) || !value.endsWith(tail)) return false;
  // Middle segments must fit, in order, between the head and the tail.
  let at = head.length;
  const end = value.length - tail.length;
  for (const segment of middle) {
    const found = value.indexOf(segment, at);
    if (found < 0 || found + segment.length > end) return false;
    at = found + segment.length;
  }
  return true;
}

export function matchesAny(patterns: readonly string[], value: string): boolean {
  for (const p of patterns) if (matchesPattern(p, value)) return true;
  return false;
}
