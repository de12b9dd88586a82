// Atomic JSON writes: a temp file created exclusively under a random name, renamed
// over the document; a file or symlink planted at the temp name is never written.

import { expect } from 'chai';
import { mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJsonFile, writeJsonAtomic } from '../../../src/store/json-file.js';

describe('atomic JSON files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'noderouter-json-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('replaces the document, mode 0600, leaving no temp file behind', async () => {
    const path = join(dir, 'doc.json');
    await writeJsonAtomic(path, { a: 1 });
    await writeJsonAtomic(path, { a: 2 }, 1);
    expect((await readJsonFile(path, () => ({}))).value).to.deep.equal({ a: 2 });
    expect((await stat(path)).mode & 0o777).to.equal(0o600);
    expect(await readdir(dir)).to.deep.equal(['doc.json']);
  });

  it('never writes through a symlink or file planted at the temp name: it takes another name', async () => {
    const path = join(dir, 'doc.json');
    const victim = join(dir, 'victim.txt');
    await writeFile(victim, 'untouched');
    const planted = `${path}.planted.tmp`;
    await symlink(victim, planted);
    const names = [planted, `${path}.second.tmp`];
    await writeJsonAtomic(path, { a: 3 }, undefined, () => names.shift() as string);
    expect(await readFile(victim, 'utf8')).to.equal('untouched');
    expect((await readJsonFile(path, () => ({}))).value).to.deep.equal({ a: 3 });
    expect(names).to.deep.equal([]);
  });

  it('gives up, writing nothing, when every name it tries is taken', async () => {
    const path = join(dir, 'doc.json');
    const planted = `${path}.planted.tmp`;
    await writeFile(planted, 'someone else’s');
    let err: unknown;
    await writeJsonAtomic(path, { a: 4 }, undefined, () => planted).catch((e: unknown) => (err = e));
    expect((err as NodeJS.ErrnoException).code).to.equal('EEXIST');
    expect(await readFile(planted, 'utf8')).to.equal('someone else’s');
    expect((await readdir(dir)).sort()).to.deep.equal(['doc.json.planted.tmp']);
  });
});
