// docs/configuration.md's settings tables are what `npm run schema` generates from the
// config's shape, and every setting in the shape says what it does.

import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { BEGIN, END, REFERENCE_FILE, referenceSection, undescribed, withReference } from '../../../src/config/reference.js';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('configuration reference', () => {
  it('is what `npm run schema` generates from the shape', async () => {
    const page = await readFile(join(ROOT, REFERENCE_FILE), 'utf8');
    expect(page === withReference(page), `${REFERENCE_FILE} is stale: run \`npm run schema\``).to.equal(true);
  });

  it('describes every setting of the shape', () => {
    expect(undescribed()).to.deep.equal([]);
  });

  it('has a row for settings at every depth, with defaults and what they accept', () => {
    const section = referenceSection();
    expect(section.startsWith(BEGIN) && section.endsWith(END)).to.equal(true);
    expect(section).to.contain('| `server.port` | `8080` | integer 0–65535 |');
    expect(section).to.contain('| `tiers.<name>.daily` | `unlimited` | number ≥ 0, or `unlimited` |');
    expect(section).to.contain('| `chains.<name>.nodes[].name` | required | text |');
    expect(section).to.contain(
      '| `chains.<name>.consensus.onDisagree` | `answer-majority` | `answer-majority`, `error`, `prefer-archive` |',
    );
    expect(section).to.contain('### `chains.<name>.health`');
  });

  it('refuses a page without its markers', () => {
    expect(() => withReference('# no markers\n')).to.throw(/lacks the markers/);
  });
});
