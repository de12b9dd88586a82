// The module map in docs/architecture.md names every folder and loose file of src/,
// once, and nothing that does not exist.

import { expect } from 'chai';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, readDoc } from '../../support/docs.js';

/** The `src/…` paths in the first column of the "Modules" table. */
function mapped(): string[] {
  const page = readDoc('docs/architecture.md');
  const start = page.indexOf('\n## Modules\n');
  expect(start, 'docs/architecture.md has a "Modules" section').to.be.greaterThan(0);
  const next = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, next < 0 ? undefined : next);
  const rows = section.split('\n').filter((l) => l.startsWith('| `'));
  return rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`(src\/[^`]+)`/g)].map((m) => m[1] as string));
}

describe('module map (docs/architecture.md)', () => {
  it('lists every folder and loose file of src/', () => {
    const listed = new Set(mapped());
    const tree = readdirSync(join(ROOT, 'src')).map((name) =>
      statSync(join(ROOT, 'src', name)).isDirectory() ? `src/${name}/` : `src/${name}`,
    );
    expect(tree.filter((p) => !listed.has(p))).to.deep.equal([]);
  });

  it('lists nothing that does not exist, and nothing twice', () => {
    const paths = mapped();
    expect(paths.length).to.be.greaterThan(20);
    const missing = paths.filter((p) => !existsSync(join(ROOT, p)) || p.endsWith('/') !== statSync(join(ROOT, p)).isDirectory());
    expect(missing).to.deep.equal([]);
    expect(paths.filter((p, i) => paths.indexOf(p) !== i)).to.deep.equal([]);
  });
});
