// Per-method costs: exact names first, then `prefix*` patterns, else 1. Resolved
// once per method name and remembered (method names seen are bounded by the label
// set in practice; the memo is capped to stay bounded under hostile input).

const MEMO_CAP = 4096;

export class CostTable {
  private readonly exact = new Map<string, number>();
  private readonly prefixes: Array<[string, number]> = [];
  private readonly memo = new Map<string, number>();

  constructor(defaults: Readonly<Record<string, number>>, overrides: unknown) {
    const all = { ...defaults, ...(overrides as Record<string, number> | undefined) };
    for (const [k, v] of Object.entries(all)) {
      if (k.endsWith('*')) this.prefixes.push([k.slice(0, -1), v]);
      else this.exact.set(k, v);
    }
    this.prefixes.sort((a, b) => b[0].length - a[0].length);
  }

  /** Cost of a method; `short` is the name after the namespace (getLogs), `full` as sent. */
  of(full: string, short: string): number {
    const m = this.memo.get(full);
    if (m !== undefined) return m;
    let cost = this.exact.get(short) ?? this.exact.get(full);
    if (cost === undefined) {
      for (const [p, c] of this.prefixes) {
        if (full.startsWith(p)) {
          cost = c;
          break;
        }
      }
    }
    const result = cost ?? 1;
    if (this.memo.size < MEMO_CAP) this.memo.set(full, result);
    return result;
  }
}
