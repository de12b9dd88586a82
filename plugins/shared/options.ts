// Option checks shared by the built-in plugins: each returns problems as
// [pathBelowOptions, message] pairs, the contract's validateOptions shape.

export type Problems = Array<[string, string]>;

export function unknownKeys(options: Readonly<Record<string, unknown>>, known: readonly string[], problems: Problems): void {
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) problems.push([k, `is not a known option (known: ${known.join(', ')})`]);
  }
}

export function positiveInt(options: Readonly<Record<string, unknown>>, name: string, problems: Problems): void {
  const v = options[name];
  if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) problems.push([name, 'must be a positive integer']);
}

export function nameList(options: Readonly<Record<string, unknown>>, name: string, problems: Problems): void {
  const v = options[name];
  if (v === undefined) return;
  if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'string' || !/^[A-Za-z][A-Za-z0-9]*$/.test(x))) {
    problems.push([name, 'must be a non-empty list of names like [eth, evm]']);
  }
}

export function costTable(options: Readonly<Record<string, unknown>>, problems: Problems): void {
  const v = options.costs;
  if (v === undefined) return;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    problems.push(['costs', 'must map method names or patterns to positive integers, e.g. { getLogs: 5, "trace_*": 10 }']);
    return;
  }
  for (const [k, c] of Object.entries(v)) {
    if (typeof c !== 'number' || !Number.isInteger(c) || c < 1) problems.push([`costs.${k}`, 'must be a positive integer']);
  }
}

/** Options the built-in plugins share, checked by kind; `known` lists the ones a plugin takes. */
export function checkOptions(options: Readonly<Record<string, unknown>>, known: readonly string[]): Problems {
  const problems: Problems = [];
  unknownKeys(options, known, problems);
  for (const name of known) {
    if (name === 'namespaces') nameList(options, name, problems);
    else if (name === 'costs') costTable(options, problems);
    else positiveInt(options, name, problems);
  }
  return problems;
}
