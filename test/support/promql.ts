// Just enough PromQL reading to check dashboards and alerts against a scrape: the
// metric names an expression selects, the label names it matches on, and the labels
// it groups by. Functions, keywords, strings, ranges and template variables are skipped.

export interface Selector {
  readonly metric: string;
  readonly labels: string[];
}

export interface ExprRefs {
  readonly selectors: Selector[];
  /** Labels named in by/without/on/ignoring clauses. */
  readonly grouping: string[];
}

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);
/** Aggregations may be followed by `by (...)` before their parenthesis. */
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'count',
  'group',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'count_values',
]);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const IDENT = /[A-Za-z_:][A-Za-z0-9_:]*/y;

function skipString(s: string, i: number): number {
  const q = s[i];
  let j = i + 1;
  while (j < s.length && s[j] !== q) j += s[j] === '\\' ? 2 : 1;
  return j + 1;
}

function labelList(s: string, i: number, into: string[]): number {
  // s[i] === '('
  const end = s.indexOf(')', i);
  for (const part of s.slice(i + 1, end).split(',')) {
    const name = part.trim();
    if (name !== '') into.push(name);
  }
  return end + 1;
}

export function parsePromQl(expr: string): ExprRefs {
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  let last: Selector | undefined;
  let i = 0;
  while (i < expr.length) {
    const c = expr[i] as string;
    if (c === '"' || c === "'" || c === '`') {
      i = skipString(expr, i);
      continue;
    }
    if (c === '[') {
      i = expr.indexOf(']', i) + 1;
      continue;
    }
    if (c === '$') {
      IDENT.lastIndex = i + 1;
      const m = IDENT.exec(expr);
      i = i + 1 + (m?.[0].length ?? 0);
      continue;
    }
    if (c === '{') {
      const target = last;
      let j = i + 1;
      while (j < expr.length && expr[j] !== '}') {
        const ch = expr[j] as string;
        if (ch === '"' || ch === "'") {
          j = skipString(expr, j);
          continue;
        }
        IDENT.lastIndex = j;
        const m = IDENT.exec(expr);
        if (m !== null) {
          target?.labels.push(m[0]);
          j += m[0].length;
          continue;
        }
        j++;
      }
      i = j + 1;
      last = undefined;
      continue;
    }
    if (/[0-9]/.test(c)) {
      while (i < expr.length && /[0-9.eE+\-a-z]/.test(expr[i] as string)) i++;
      continue;
    }
    IDENT.lastIndex = i;
    const m = IDENT.exec(expr);
    if (m === null) {
      i++;
      continue;
    }
    const word = m[0];
    i += word.length;
    let k = i;
    while (k < expr.length && expr[k] === ' ') k++;
    if (GROUPING.has(word)) {
      if (expr[k] === '(') i = labelList(expr, k, grouping);
      last = undefined;
      continue;
    }
    if (KEYWORDS.has(word.toLowerCase()) || AGGREGATIONS.has(word) || expr[k] === '(') {
      last = undefined;
      continue;
    }
    last = { metric: word, labels: [] };
    selectors.push(last);
  }
  return { selectors, grouping };
}

/** Sample names and their label names from a Prometheus text exposition. */
export function parseExposition(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      if (name === undefined) continue;
      const names = type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
      for (const n of names) if (!out.has(n)) out.set(n, new Set());
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const name = brace >= 0 && brace < space ? line.slice(0, brace) : line.slice(0, space);
    const labels = out.get(name) ?? new Set<string>();
    if (brace >= 0 && brace < space) {
      for (const m of line.slice(brace + 1, line.lastIndexOf('}')).matchAll(/([A-Za-z_][A-Za-z0-9_]*)="/g)) labels.add(m[1] as string);
    }
    out.set(name, labels);
  }
  return out;
}

export interface LabelMatch {
  readonly metric: string;
  readonly label: string;
  /** The values a matcher names: one for = and !=, each alternative of a plain =~ or !~ alternation. */
  readonly values: string[];
}

const SELECTOR = /([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}/g;
const MATCHER = /([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g;
const PLAIN = /^[A-Za-z0-9_|]*$/;

/** The label values an expression's selectors name (template variables and real regexes left out). */
export function labelMatches(expr: string): LabelMatch[] {
  const out: LabelMatch[] = [];
  for (const [, metric, inside] of expr.matchAll(SELECTOR)) {
    for (const [, label, op, value] of (inside as string).matchAll(MATCHER)) {
      const v = value as string;
      if (!PLAIN.test(v)) continue;
      out.push({ metric: metric as string, label: label as string, values: op === '=~' || op === '!~' ? v.split('|') : [v] });
    }
  }
  return out;
}
