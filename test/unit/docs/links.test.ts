// Every relative link in README.md and docs/*.md points at a file that exists, and a
// link into a page at a heading it has; every page of docs/ is reachable from README.

import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { ROOT, anchors, docPages, readDoc, relativeLinks } from '../../support/docs.js';

describe('documentation links', () => {
  it('point at files and headings that exist', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of docPages()) {
      for (const { target, line } of relativeLinks(readDoc(page))) {
        checked++;
        const [path = '', hash] = target.split('#');
        const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), decodeURIComponent(path));
        if (!existsSync(file)) broken.push(`${page}:${line} ${target}: no such file`);
        else if (hash !== undefined && file.endsWith('.md') && !anchors(readDoc(relative(ROOT, file))).has(hash))
          broken.push(`${page}:${line} ${target}: no such heading`);
      }
    }
    expect(checked, 'links read').to.be.greaterThan(50);
    expect(broken).to.deep.equal([]);
  });

  it('stay inside the repository', () => {
    const outside = docPages().flatMap((page) =>
      relativeLinks(readDoc(page))
        .filter(({ target }) => relative(ROOT, join(ROOT, dirname(page), target.split('#')[0] ?? '')).startsWith('..'))
        .map(({ target, line }) => `${page}:${line} ${target}`),
    );
    expect(outside).to.deep.equal([]);
  });

  it('reach every page of docs/ from the README', () => {
    const linked = new Set(relativeLinks(readDoc('README.md')).map(({ target }) => target.split('#')[0]));
    expect(docPages().filter((p) => p !== 'README.md' && !linked.has(p))).to.deep.equal([]);
  });

  it('make anchors as GitHub does', () => {
    const text =
      "# Node pools\n\n## Reads at `latest` agree\n\n## Breakers are the nodes' own\n\n```sh\n# not a heading\n```\n\n## Node pools\n";
    expect([...anchors(text)]).to.deep.equal(['node-pools', 'reads-at-latest-agree', 'breakers-are-the-nodes-own', 'node-pools-1']);
  });
});
