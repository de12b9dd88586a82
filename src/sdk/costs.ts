// Per-call costs: exact names first, then `prefix*` patterns (longest first), else 1.
// Plugins resolve the costs of their known methods and routes once, when a chain is
// created; only calls outside those tables are resolved on the way, without a memo
// (so hostile names cannot fill one).

export class CostTable {
  private readonly exact = new Map<string, number>();
  private readonly prefixes: Array<readonly [string, number]> = [];
  /** No entries at all: every cost is 1 without a lookup. */
  readonly empty: boolean;

  constructor(defaults: Readonly<Record<string, number>>, overrides: Readonly<Record<string, number>>) {
    for (const [k, v] of Object.entries({ ...defaults, ...overrides })) {
      if (k.endsWith('*')) this.prefixes.push([k.slice(0, -1), v]);
      else this.exact.set(k, v);
    }
    this.prefixes.sort((a, b) => b[0].length - a[0].length);
    this.empty = this.exact.size === 0 && this.prefixes.length === 0;
  }

  /**
   * Cost of a call named `full` as sent (`eth_getLogs`, a REST route template) whose
   * short name is `short` (`getLogs`; the same as `full` when there is no namespace).
   */
  of(full: string, short: string): number {
    if (this.empty) return 1;
    const exact = this.exact.get(short) ?? this.exact.get(full);
    if (exact !== undefined) return exact;
    for (const [p, c] of this.prefixes) {
      if (full.startsWith(p) || short.startsWith(p)) return c;
    }
    return 1;
  }
}
