// The import graph of src/ and plugins/, read from the sources: every relative import
// and `noderouter/*` resolved to a file (through the package's own exports), type-only
// imports included (a type cycle is a design cycle too). It has no cycles; the
// transports (HTTP, WebSocket, gRPC) never reach one another; the pool, keys, limits,
// cache and plugins reach neither koa nor a transport; the composition root and its
// factories (src/app/) are imported from above only (the CLI, the cluster's processes);
// each folder of src/ imports only the folders its rule names (LAYERS: the store at the
// bottom, the composition on top, koa in src/admin/ alone); and each plugin imports only
// its own folder, Node's builtins, packages and the public kits (noderouter/plugin, and
// noderouter/devnet for its devnet module).

import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const TRANSPORTS = ['src/transports/http/', 'src/transports/ws/', 'src/transports/grpc/'];
const KOA_FREE_AND_BELOW_TRANSPORTS = ['src/pool/', 'src/auth/', 'src/quota/', 'src/cache/', 'src/record/', 'plugins/'];

/**
 * What each part of src/ may import besides itself: a top-level folder or loose file, and
 * each transport on its own. A new import across parts is a design decision: it is made
 * here, on purpose, or not at all.
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  store: [],
  'errors.ts': [],
  'control-errors.ts': [],
  'package-root.ts': [],
  'grpc-wire': ['errors.ts'],
  plugin: ['exec'],
  jsonrpc: ['errors.ts', 'plugin'],
  sdk: ['auth', 'config', 'errors.ts', 'grpc-wire', 'jsonrpc', 'plugin'],
  config: ['auth', 'jsonrpc', 'package-root.ts', 'plugin'],
  auth: ['config', 'control-errors.ts', 'errors.ts', 'store'],
  quota: ['config', 'errors.ts', 'store'],
  accounts: ['auth', 'config', 'control-errors.ts', 'quota', 'store'],
  cache: [],
  pool: ['config', 'grpc-wire', 'plugin'],
  ops: ['chain', 'config', 'control-errors.ts', 'package-root.ts', 'pool', 'store'],
  record: ['accounts', 'auth', 'control-errors.ts', 'ops', 'quota'],
  exec: ['auth', 'cache', 'chain', 'config', 'errors.ts', 'grpc-wire', 'jsonrpc', 'ops', 'plugin', 'pool', 'quota'],
  subscriptions: ['config', 'errors.ts', 'exec', 'jsonrpc', 'plugin', 'pool'],
  chain: ['cache', 'config', 'exec', 'ops', 'plugin', 'pool', 'subscriptions'],
  'transports/shared': ['auth', 'chain', 'config', 'errors.ts', 'exec', 'jsonrpc', 'plugin', 'quota'],
  'transports/http': ['chain', 'config', 'errors.ts', 'exec', 'ops', 'plugin', 'quota', 'transports/shared'],
  'transports/ws': ['auth', 'chain', 'config', 'errors.ts', 'exec', 'ops', 'plugin', 'quota', 'subscriptions', 'transports/shared'],
  'transports/grpc': ['chain', 'config', 'errors.ts', 'exec', 'grpc-wire', 'ops', 'plugin', 'quota', 'transports/shared'],
  admin: [
    'accounts',
    'auth',
    'chain',
    'config',
    'control-errors.ts',
    'errors.ts',
    'exec',
    'ops',
    'package-root.ts',
    'plugin',
    'pool',
    'quota',
    'transports/http',
  ],
  devnet: ['config', 'jsonrpc', 'plugin'],
  cluster: ['app', 'auth', 'config', 'errors.ts', 'exec', 'ops', 'plugin', 'pool', 'quota'],
  app: [
    'accounts',
    'admin',
    'auth',
    'cache',
    'chain',
    'cluster',
    'config',
    'exec',
    'ops',
    'plugin',
    'pool',
    'quota',
    'record',
    'store',
    'transports/grpc',
    'transports/http',
    'transports/shared',
    'transports/ws',
  ],
  cli: ['accounts', 'admin', 'app', 'auth', 'cluster', 'config', 'control-errors.ts', 'devnet', 'package-root.ts', 'quota', 'record'],
  'bin.ts': ['cli'],
};

/** The part of src/ a file belongs to (LAYERS' keys); undefined outside src/. */
function partOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] !== 'src') return undefined;
  if (parts.length === 2) return parts[1];
  return parts[1] === 'transports' && parts.length > 3 ? `transports/${parts[2]}` : parts[1];
}

interface Import {
  readonly spec: string;
  readonly typeOnly: boolean;
}

// `import … from 'x'`, `export … from 'x'` (over several lines), `import 'x'`, and `import('x')`.
const STATIC = /^[ \t]*(?:import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s*)?['"]([^'"\n]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g;

/** The module specifiers a source imports (dynamic imports of computed names cannot be read and are not). */
function importsOf(text: string): Import[] {
  const out: Import[] = [];
  for (const m of text.matchAll(STATIC)) out.push({ spec: m[2] as string, typeOnly: m[1] !== undefined });
  for (const m of text.matchAll(DYNAMIC)) out.push({ spec: m[1] as string, typeOnly: false });
  return out;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sources(path));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** `noderouter/<sub>` → the file the package's exports give under the development ("source") condition. */
function packageExports(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { source?: string }> };
  const map = new Map<string, string>();
  for (const [sub, target] of Object.entries(pkg.exports)) {
    const source = typeof target === 'string' ? target : target.source;
    if (source !== undefined && source.endsWith('.ts'))
      map.set(`noderouter${sub.slice(1)}`, relative(ROOT, join(ROOT, source)).split(sep).join('/'));
  }
  return map;
}

const BUILTINS = new Set(builtinModules);

interface Resolved {
  readonly spec: string;
  /** The file it resolves to (relative imports and noderouter/*); undefined for builtins and packages. */
  readonly target: string | undefined;
}

interface Graph {
  readonly files: readonly string[];
  /** file → its imports as written, with what they resolve to. */
  readonly imports: ReadonlyMap<string, readonly Resolved[]>;
  /** file → the files it imports. */
  readonly edges: ReadonlyMap<string, readonly string[]>;
  /** file → the packages it imports (Node builtins left out). */
  readonly packages: ReadonlyMap<string, readonly string[]>;
  /** Imports that resolve to no file. */
  readonly unresolved: readonly string[];
}

function readGraph(): Graph {
  const files = [...sources('src'), ...sources('plugins')];
  const exportsMap = packageExports();
  const imports = new Map<string, Resolved[]>();
  const edges = new Map<string, string[]>();
  const packages = new Map<string, string[]>();
  const unresolved: string[] = [];
  for (const file of files) {
    const resolved: Resolved[] = [];
    const pkgs: string[] = [];
    for (const { spec } of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
      let target: string | undefined;
      if (spec.startsWith('.')) {
        const base = resolve(join(ROOT, dirname(file)), spec);
        const found = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')].find((c) => c.endsWith('.ts') && existsSync(c));
        if (found === undefined) unresolved.push(`${file}: ${spec}`);
        else target = relative(ROOT, found).split(sep).join('/');
      } else if (spec === 'noderouter' || spec.startsWith('noderouter/')) {
        target = exportsMap.get(spec);
        if (target === undefined) unresolved.push(`${file}: ${spec} (not in the package's exports)`);
      } else if (!spec.startsWith('node:') && !BUILTINS.has(spec)) {
        pkgs.push(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string));
      }
      resolved.push({ spec, target });
    }
    imports.set(file, resolved);
    edges.set(
      file,
      resolved.flatMap((r) => (r.target === undefined ? [] : [r.target])),
    );
    packages.set(file, pkgs);
  }
  return { files, imports, edges, packages, unresolved };
}

/** Strongly connected components of more than one file (or a file importing itself). */
function cycles(files: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v) as number, idx.get(w) as number));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (edges.get(v) ?? []).includes(v)) found.push(scc);
    }
  };
  for (const f of files) if (!idx.has(f)) visit(f);
  return found;
}

/** One concrete cycle through the first file of a component, as `a -> b -> a`. */
function cycleThrough(scc: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string {
  const inside = new Set(scc);
  const start = [...scc].sort()[0] as string;
  const parent = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const w of edges.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at: string | undefined = v; at !== undefined && at !== start; at = parent.get(at)) path.splice(1, 0, at);
        return [...path, start].join(' -> ');
      }
      if (!parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return scc.join(', ');
}

/** The import chain from `from` to the first file `bad` accepts, or undefined when none is reachable. */
function chainTo(from: string, edges: ReadonlyMap<string, readonly string[]>, bad: (file: string) => boolean): string | undefined {
  const parent = new Map<string, string>([[from, '']]);
  const queue = [from];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const w of edges.get(v) ?? []) {
      if (parent.has(w)) continue;
      parent.set(w, v);
      if (bad(w)) {
        const path = [w];
        for (let at = v; at !== ''; at = parent.get(at) as string) path.unshift(at);
        return path.join(' -> ');
      }
      queue.push(w);
    }
  }
  return undefined;
}

describe('architecture: the import graph of src/ and plugins/', () => {
  const graph = readGraph();
  const under = (prefixes: readonly string[]) => (f: string) => prefixes.some((p) => f.startsWith(p));

  it('reads imports of every form, and resolves every relative and noderouter/* import to a file', () => {
    const sample = [
      "import { a } from './a.js';",
      "import type {\n  B,\n  C,\n} from '../b.js';",
      "export * from './c.js';",
      "export { d, type E } from 'noderouter/plugin';",
      "import 'node:process';",
      "  const m = await import('./lazy.js');",
      "// import { no } from './commented.js';",
      " * import { no } from './doc.js';",
      'const s = \'import x from "./string.js"\';',
    ].join('\n');
    expect(importsOf(sample)).to.deep.equal([
      { spec: './a.js', typeOnly: false },
      { spec: '../b.js', typeOnly: true },
      { spec: './c.js', typeOnly: false },
      { spec: 'noderouter/plugin', typeOnly: false },
      { spec: 'node:process', typeOnly: false },
      { spec: './lazy.js', typeOnly: false },
    ]);
    expect(graph.unresolved).to.deep.equal([]);
    expect(graph.files.length).to.be.greaterThan(100);
    // The graph is the real one: the composition root reaches every transport.
    for (const t of TRANSPORTS)
      expect(
        chainTo('src/app/gateway.ts', graph.edges, (f) => f.startsWith(t)),
        t,
      ).to.be.a('string');
  });

  it('has no import cycle', () => {
    const found = cycles(graph.files, graph.edges).map((scc) => cycleThrough(scc, graph.edges));
    expect(found, `import cycles:\n  ${found.join('\n  ')}`).to.deep.equal([]);
  });

  it('never lets one transport reach another', () => {
    const found: string[] = [];
    for (const t of TRANSPORTS) {
      const others = TRANSPORTS.filter((o) => o !== t);
      for (const f of graph.files.filter((x) => x.startsWith(t))) {
        const chain = chainTo(f, graph.edges, under(others));
        if (chain !== undefined) found.push(chain);
      }
    }
    expect(found, `transports reaching one another:\n  ${found.join('\n  ')}`).to.deep.equal([]);
  });

  it('keeps the pool, keys, limits, cache and plugins free of koa and of every transport', () => {
    const koa = (f: string): boolean =>
      (graph.packages.get(f) ?? []).some((p) => p === 'koa' || p.startsWith('@koa/') || p.startsWith('koa-'));
    const found: string[] = [];
    for (const f of graph.files.filter(under(KOA_FREE_AND_BELOW_TRANSPORTS))) {
      if (koa(f)) found.push(`${f} imports koa`);
      const viaKoa = chainTo(f, graph.edges, koa);
      if (viaKoa !== undefined) found.push(`${viaKoa} (imports koa)`);
      const viaTransport = chainTo(f, graph.edges, under(TRANSPORTS));
      if (viaTransport !== undefined) found.push(viaTransport);
    }
    expect(found, `layering broken:\n  ${found.join('\n  ')}`).to.deep.equal([]);
  });

  it('keeps the composition on top: src/app/ serves the CLI and the cluster processes, src/cli/ the entry', () => {
    // Who may import each: the composition (src/app/: the root gateway.ts, its factories,
    // the services and chain set the commands and workers share) only itself, the
    // commands and the cluster's processes; the commands only the entry.
    const rules: Array<[(f: string) => boolean, (f: string) => boolean]> = [
      [(t) => t.startsWith('src/app/'), (f) => f.startsWith('src/app/') || f.startsWith('src/cli/') || f.startsWith('src/cluster/')],
      [(t) => t.startsWith('src/cli/'), (f) => f === 'src/bin.ts' || f.startsWith('src/cli/')],
    ];
    const found: string[] = [];
    for (const f of graph.files) {
      for (const t of graph.edges.get(f) ?? [])
        for (const [target, allowed] of rules) if (target(t) && !allowed(f)) found.push(`${f} -> ${t}`);
    }
    expect(found, `imports of the composition from below:\n  ${found.join('\n  ')}`).to.deep.equal([]);
    expect(chainTo('src/bin.ts', graph.edges, (f) => f === 'src/app/gateway.ts')).to.be.a('string');
  });

  it('lets each part of src/ import only what its layer allows, and names every part', () => {
    const found: string[] = [];
    const parts = new Set<string>();
    for (const f of graph.files) {
      const from = partOf(f);
      if (from === undefined) continue;
      parts.add(from);
      const allowed = LAYERS[from];
      if (allowed === undefined) {
        found.push(`${f}: its part (${from}) has no rule in LAYERS`);
        continue;
      }
      for (const t of graph.edges.get(f) ?? []) {
        const to = partOf(t);
        if (to !== undefined && to !== from && !allowed.includes(to)) found.push(`${f} -> ${t} (${from} may not import ${to})`);
      }
    }
    expect(found, `imports across layers:\n  ${found.join('\n  ')}`).to.deep.equal([]);
    // No rule for a part that is gone.
    expect(Object.keys(LAYERS).filter((p) => !parts.has(p))).to.deep.equal([]);
  });

  it('keeps koa in src/admin/ alone (the app factory that mounts it aside)', () => {
    const koa = (f: string): boolean =>
      (graph.packages.get(f) ?? []).some((p) => p === 'koa' || p.startsWith('@koa/') || p.startsWith('koa-'));
    const found = graph.files.filter((f) => koa(f) && !f.startsWith('src/admin/') && !f.startsWith('src/app/'));
    expect(found).to.deep.equal([]);
  });

  it('keeps the core free of every chain: nothing under src/ imports a plugin', () => {
    const found: string[] = [];
    for (const f of graph.files.filter((x) => x.startsWith('src/'))) {
      for (const { target } of graph.imports.get(f) ?? []) if (target?.startsWith('plugins/') === true) found.push(`${f} -> ${target}`);
    }
    expect(found, `the core importing plugins:\n  ${found.join('\n  ')}`).to.deep.equal([]);
  });

  it('lets each plugin import only its own folder, Node builtins, packages and the public SDK', () => {
    const sdk = new Set(['noderouter/plugin', 'noderouter/devnet']);
    const found: string[] = [];
    for (const f of graph.files.filter((x) => x.startsWith('plugins/'))) {
      const own = `${f.split('/').slice(0, 2).join('/')}/`;
      for (const { spec, target } of graph.imports.get(f) ?? []) {
        if (spec.startsWith('.') && target !== undefined && !target.startsWith(own)) found.push(`${f} -> ${target}`);
        if ((spec === 'noderouter' || spec.startsWith('noderouter/')) && !sdk.has(spec)) found.push(`${f} -> ${spec}`);
      }
    }
    expect(found, `plugins importing outside their folder and the SDK:\n  ${found.join('\n  ')}`).to.deep.equal([]);
    // The built-in families do reach the SDK, by its public name.
    const viaSdk = graph.files.filter((f) => f.startsWith('plugins/') && graph.imports.get(f)?.some((i) => i.spec === 'noderouter/plugin'));
    expect(viaSdk.length).to.be.greaterThan(3);
  });
});
