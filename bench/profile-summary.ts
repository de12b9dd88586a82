// What npm run heap-profile prints: a sampling heap profile's self size added up by
// package or file and by function (placed as npm run profile places its CPU samples).
// Pure, so the unit tests give it fixed profiles.

export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

/** Where a sample goes: a package under node_modules, a file of ours (relative to `root`), or Node's own. */
export function placeOf(url: string, name: string, root: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return `package ${pkg[1]}`;
  if (url.startsWith('node:')) return url;
  if (url === '') return name;
  return url.replace(`file://${root}`, '');
}

/** A function as the tables name it: its name, and its place and line (1-based). */
export function functionOf(cf: CallFrame, root: string): string {
  return `${cf.functionName || '(anonymous)'}  ${placeOf(cf.url, cf.functionName, root)}:${cf.lineNumber + 1}`;
}

export interface Totals {
  readonly all: number;
  readonly byPlace: Map<string, number>;
  readonly byFunction: Map<string, number>;
}

function add(m: Map<string, number>, k: string, v: number): void {
  m.set(k, (m.get(k) ?? 0) + v);
}

/** A node of V8's sampling heap profile: the bytes allocated in this frame itself, and its callees. */
export interface HeapNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children?: readonly HeapNode[];
}

/** Self size of a sampling heap profile (V8's estimate of the bytes allocated), by place and function. */
export function heapTotals(head: HeapNode, root: string): Totals {
  const byPlace = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let all = 0;
  // Iterative: a deep stack of frames must not overflow this one.
  const stack: HeapNode[] = [head];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    if (n.selfSize > 0) {
      add(byPlace, placeOf(n.callFrame.url, n.callFrame.functionName, root), n.selfSize);
      add(byFunction, functionOf(n.callFrame, root), n.selfSize);
      all += n.selfSize;
    }
    for (const c of n.children ?? []) stack.push(c);
  }
  return { all, byPlace, byFunction };
}

/** The `n` largest entries in bytes per request, with their share of `all`: `  412 B/req  12.3%  name`. */
export function topPerRequest(totals: ReadonlyMap<string, number>, all: number, requests: number, n: number): string {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${(v / requests).toFixed(0).padStart(7)} B/req ${((100 * v) / all).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
}
