// The file key store with real files: last use is kept apart from the key file, and
// a change drops exactly the changed key's hashes from caches.

import { expect } from 'chai';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastUsedPathFor, openFileKeyStore } from '../../../src/auth/file-key-store.js';
import type { StoreChange } from '../../../src/auth/key-store.js';

describe('file key store', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'noderouter-keys-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('keeps last use in its own file, never rewriting the key file for it', async () => {
    const path = join(dir, 'keys.json');
    const live = await openFileKeyStore(path, { live: true });
    const { record } = await live.create({ account: 'a', tier: 't' });
    const written = (await stat(path)).mtimeMs;
    const at = Date.parse('2026-11-20T10:00:00.000Z');
    live.touch(record.id, at);
    await live.close();
    expect((await stat(path)).mtimeMs).to.equal(written);
    expect(JSON.parse(await readFile(lastUsedPathFor(path), 'utf8'))).to.deep.equal({ version: 1, lastUsed: { [record.id]: at } });
    // A reader (the CLI) sees the last use in the record.
    const reader = await openFileKeyStore(path);
    expect((await reader.get(record.id))?.lastUsedAt).to.equal('2026-11-20T10:00:00.000Z');
    expect((await reader.list()).map((r) => r.lastUsedAt)).to.deep.equal(['2026-11-20T10:00:00.000Z']);
    await reader.close();
  });

  it('announces the changed key’s hashes, old and new, on revoke and rotate', async () => {
    const store = await openFileKeyStore(join(dir, 'keys.json'));
    const changes: StoreChange[] = [];
    store.onChange((c) => changes.push(c));
    const a = await store.create({ account: 'a', tier: 't' });
    await store.create({ account: 'b', tier: 't' });
    const rotated = await store.rotate(a.record.id, 60);
    await store.revoke(a.record.id);
    expect(changes).to.have.length(4);
    expect(changes[2]).to.deep.equal({ hashes: [rotated.record.hash, a.record.hash] });
    expect(new Set((changes[3] as { hashes: string[] }).hashes)).to.deep.equal(new Set([rotated.record.hash, a.record.hash]));
    await store.close();
  });
});
