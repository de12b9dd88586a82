// A small strict reader for configuration trees: every accessor records a problem
// naming the exact path and the fix instead of throwing, so one run reports every
// mistake in a file. Unknown keys are problems (a typo must never be ignored).

import { describeDuration, parseDuration } from './duration.js';

export class ConfigProblems {
  readonly list: string[] = [];
  add(path: string, message: string): void {
    this.list.push(`${path} ${message}`);
  }
}

export type Tree = Record<string, unknown>;

export function isTree(v: unknown): v is Tree {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

export class Reader {
  constructor(readonly problems: ConfigProblems) {}

  /** An object with only the given keys; undefined (with a problem) otherwise. */
  section(v: unknown, path: string, known: readonly string[], required = false): Tree | undefined {
    if (v === undefined || v === null) {
      if (required) this.problems.add(path, 'is required');
      return undefined;
    }
    if (!isTree(v)) {
      this.problems.add(path, 'must be a mapping (key: value lines)');
      return undefined;
    }
    for (const k of Object.keys(v)) {
      if (!known.includes(k)) this.problems.add(join(path, k), `is not a known setting (known: ${known.join(', ')})`);
    }
    return v;
  }

  /** A mapping whose keys are names the user chooses (chains, tiers). */
  named(v: unknown, path: string, required = false): Tree | undefined {
    if (v === undefined || v === null) {
      if (required) this.problems.add(path, 'is required');
      return undefined;
    }
    if (!isTree(v)) {
      this.problems.add(path, 'must be a mapping of names to settings');
      return undefined;
    }
    return v;
  }

  string(v: unknown, path: string, fallback?: string): string {
    if (v === undefined || v === null) {
      if (fallback === undefined) this.problems.add(path, 'is required (a string)');
      return fallback ?? '';
    }
    if (typeof v !== 'string' || v.length === 0) {
      this.problems.add(path, 'must be a non-empty string');
      return fallback ?? '';
    }
    return v;
  }

  optionalString(v: unknown, path: string): string | undefined {
    if (v === undefined || v === null) return undefined;
    return this.string(v, path);
  }

  int(v: unknown, path: string, fallback: number | undefined, min = 0, max = Number.MAX_SAFE_INTEGER): number {
    if (v === undefined || v === null) {
      if (fallback === undefined) this.problems.add(path, `is required (an integer from ${min})`);
      return fallback ?? min;
    }
    // Values interpolated from ${ENV} arrive as strings.
    const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
      this.problems.add(path, `must be an integer from ${min} to ${max}`);
      return fallback ?? min;
    }
    return n;
  }

  /** A positive number, or the word `unlimited` (Infinity). */
  limit(v: unknown, path: string, fallback: number): number {
    if (v === undefined || v === null) return fallback;
    if (v === 'unlimited') return Infinity;
    const n = typeof v === 'string' && /^\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) {
      this.problems.add(path, 'must be a number of 0 or more, or "unlimited"');
      return fallback;
    }
    return n;
  }

  /** A duration (`15m`, `12h`, `7d`, or seconds) within [min, max], in milliseconds. */
  duration(v: unknown, path: string, fallbackMs: number, minMs: number, maxMs: number): number {
    if (v === undefined || v === null) return fallbackMs;
    const ms = parseDuration(v);
    if (ms === undefined || ms < minMs || ms > maxMs) {
      this.problems.add(
        path,
        `must be a duration like "90s", "15m", "12h" or "7d", from ${describeDuration(minMs)} to ${describeDuration(maxMs)}`,
      );
      return fallbackMs;
    }
    return ms;
  }

  bool(v: unknown, path: string, fallback: boolean): boolean {
    if (v === undefined || v === null) return fallback;
    if (v === true || v === 'true') return true;
    if (v === false || v === 'false') return false;
    this.problems.add(path, 'must be true or false');
    return fallback;
  }

  oneOf<T extends string>(v: unknown, path: string, choices: readonly T[], fallback?: T): T {
    if ((v === undefined || v === null) && fallback !== undefined) return fallback;
    if (typeof v === 'string' && (choices as readonly string[]).includes(v)) return v as T;
    const quoted = choices.map((c) => `"${c}"`);
    const list = quoted.length === 2 ? `${quoted[0]} or ${quoted[1]}` : `one of ${quoted.join(', ')}`;
    this.problems.add(path, `must be ${list}`);
    return fallback ?? (choices[0] as T);
  }

  list(v: unknown, path: string, required = false): unknown[] {
    if (v === undefined || v === null) {
      if (required) this.problems.add(path, 'is required (a list)');
      return [];
    }
    if (!Array.isArray(v)) {
      this.problems.add(path, 'must be a list');
      return [];
    }
    return v;
  }

  stringList(v: unknown, path: string, fallback: string[]): string[] {
    if (v === undefined || v === null) return fallback;
    const items = this.list(v, path);
    return items.map((item, i) => this.string(item, join(path, i)));
  }
}
