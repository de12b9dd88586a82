// Every ```yaml block of README.md and docs/*.md is a noderouter config fragment that
// check-config accepts. The convention: a block is merged into the shipped default
// config (config/gateway.yaml; mappings merged key by key, lists and values replaced)
// and the result validated as `noderouter check-config` would, plugins' options
// included. ${NAME} without a default that the environment lacks reads as a
// placeholder. A block that is not a noderouter config says so on the line before
// its fence: <!-- not a noderouter config: why -->.

import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ConfigError, parseConfig } from '../../../src/config/load.js';
import { ROOT, docPages, fences, readDoc } from '../../support/docs.js';

const OPT_OUT = /^<!-- not a noderouter config: \S.* -->$/;
const DEFAULT_FILE = join(ROOT, 'config', 'gateway.yaml');

type Tree = Record<string, unknown>;

function isTree(v: unknown): v is Tree {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function merge(base: unknown, over: unknown): unknown {
  if (!isTree(base) || !isTree(over)) return over;
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = merge(base[k], v);
  return out;
}

/** The environment with every ${NAME} (no default) the text names and the environment lacks. */
function envFor(text: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '', ADMIN_PORT: '' };
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) env[m[1] as string] ??= 'placeholder';
  return env;
}

interface Example {
  readonly where: string;
  readonly code: string;
}

function examples(): { readonly checked: Example[]; readonly skipped: Example[] } {
  const checked: Example[] = [];
  const skipped: Example[] = [];
  for (const page of docPages()) {
    for (const f of fences(readDoc(page))) {
      if (f.lang !== 'yaml' && f.lang !== 'yml') continue;
      (OPT_OUT.test(f.before.trim()) ? skipped : checked).push({ where: `${page}:${f.line}`, code: f.code });
    }
  }
  return { checked, skipped };
}

describe('YAML examples in the documentation', () => {
  it('are each accepted by check-config once merged into the default config', async function () {
    this.timeout(20_000);
    const base: unknown = parse(readFileSync(DEFAULT_FILE, 'utf8'));
    const { checked } = examples();
    expect(checked.length, 'YAML examples found').to.be.greaterThan(5);
    const refused: string[] = [];
    for (const { where, code } of checked) {
      const fragment: unknown = parse(code);
      expect(isTree(fragment), `${where} is a mapping of settings`).to.equal(true);
      const text = stringify(merge(base, fragment));
      try {
        await parseConfig(text, DEFAULT_FILE, envFor(text));
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        refused.push(`${where}:\n${err.problems.map((p) => `  - ${p}`).join('\n')}`);
      }
    }
    expect(refused).to.deep.equal([]);
  });

  it('opt out only with the marker, and only for what is not a noderouter config', () => {
    const { skipped } = examples();
    for (const { where, code } of skipped) {
      const tree: unknown = parse(code);
      const known = ['server', 'tiers', 'chains', 'store', 'log', 'tracing', 'admin', 'dashboard', 'keys', 'cache', 'devnet'];
      expect(
        isTree(tree) && Object.keys(tree).some((k) => known.includes(k)),
        `${where} opts out but looks like a noderouter config`,
      ).to.equal(false);
    }
  });

  it('catches a fragment check-config refuses', async () => {
    const base: unknown = parse(readFileSync(DEFAULT_FILE, 'utf8'));
    const text = stringify(merge(base, parse('chains:\n  l1:\n    strategy: fastest\n')));
    const err = await parseConfig(text, DEFAULT_FILE, envFor(text)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as ConfigError).problems.join('\n')).to.contain('chains.l1.strategy');
  });
});
