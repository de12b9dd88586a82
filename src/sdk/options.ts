// Option checks and readers shared by the built-in plugins. Checks return problems as
// [pathBelowOptions, message] pairs (the contract's validateOptions shape) and say
// what is expected; readers apply defaults in create(), where options are valid.

export type Problems = Array<[string, string]>;
type Options = Readonly<Record<string, unknown>>;

/** A namespace or path segment: a letter, then letters and digits (no `_`, which splits methods). */
const NAME = /^[A-Za-z][A-Za-z0-9]*$/;
/** A cost key: a name, or a prefix pattern ending in a single `*`. */
const COST_KEY = /^[^*]+\*?$/;

export function unknownKeys(options: Options, known: readonly string[], problems: Problems): void {
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) problems.push([k, `is not a known option (known: ${known.join(', ')})`]);
  }
}

function isPositiveInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

export function positiveInt(options: Options, name: string, problems: Problems): void {
  const v = options[name];
  if (v !== undefined && !isPositiveInt(v)) problems.push([name, 'must be a positive integer']);
}

export function nameList(options: Options, name: string, example: string, problems: Problems): void {
  const v = options[name];
  if (v === undefined) return;
  if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'string' || !NAME.test(x))) {
    problems.push([name, `must be a non-empty list of names (letters and digits) like ${example}`]);
  }
}

/** A method pattern: letters, digits, `_`, `.`, `/`, `-`, with `*` wildcards. */
const PATTERN = /^[A-Za-z0-9_./*-]{1,128}$/;

export function patternList(options: Options, name: string, example: string, problems: Problems): void {
  const v = options[name];
  if (v === undefined) return;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || !PATTERN.test(x))) {
    problems.push([name, `must be a list of method names or patterns with * like ${example}`]);
  }
}

/** A list-of-patterns option, or an empty list. */
export function patternsOption(options: Options, name: string): readonly string[] {
  const v = options[name];
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : [];
}

export function costTable(options: Options, example: string, problems: Problems): void {
  const v = options.costs;
  if (v === undefined) return;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    problems.push(['costs', `must map names or patterns ending in * to positive integers, e.g. ${example}`]);
    return;
  }
  for (const [k, c] of Object.entries(v as Record<string, unknown>)) {
    if (!COST_KEY.test(k)) problems.push([`costs.${k}`, 'a pattern may hold one *, at its end (e.g. "trace_*")']);
    else if (!isPositiveInt(c)) problems.push([`costs.${k}`, 'must be a positive integer']);
  }
}

/** A positive integer option, or its default. */
export function intOption(options: Options, name: string, fallback: number): number {
  const v = options[name];
  return isPositiveInt(v) ? v : fallback;
}

/** A list-of-names option, or its default. */
export function namesOption(options: Options, name: string, fallback: readonly string[]): readonly string[] {
  const v = options[name];
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string') ? v : fallback;
}

/** The `costs` map, or an empty one. */
export function costsOption(options: Options): Readonly<Record<string, number>> {
  const v = options.costs;
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, number>) : {};
}
