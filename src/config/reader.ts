// Problems found in a configuration tree, each "<path> <what is wrong and the fix>",
// so one run reports every mistake in a file.

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

/** `chains.l1` + `nodes` → `chains.l1.nodes`; + 0 → `chains.l1.nodes[0]`. */
export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}
