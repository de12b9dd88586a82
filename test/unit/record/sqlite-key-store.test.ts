// The SQLite key store on real files, beyond the contract every backend passes
// (test/unit/auth/key-repository.test.ts, key-restrict.test.ts): values never reach
// the file, a rotated value works through its grace and is found by its hash, revoking
// and restricting are seen by another connection at once, keys list by account, a
// gateway hears exactly which hashes another process changed (or everything, when it
// fell behind), last use is kept without counting as a change, and two processes
// creating keys at once lose none.

import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { hashKey } from '../../../src/auth/key-format.js';
import { KeyRepository } from '../../../src/auth/key-repository.js';
import { KeyAmbiguousError, KeyNotFoundError, type KeyRecord, type StoreChange } from '../../../src/auth/key-store.js';
import { openSqliteKeyStore, SqliteKeyBackend } from '../../../src/record/sqlite-key-store.js';
import { runTogether, tempRecord, type TempRecord } from '../../support/record.js';

const START = Date.parse('2026-11-20T10:00:00.000Z');

describe('record: SQLite key store', () => {
  let record: TempRecord;
  let clock: number;
  const now = (): number => clock;
  beforeEach(async () => {
    record = await tempRecord();
    clock = START;
  });
  afterEach(() => record.cleanup());

  it('keeps hashes only: no value is ever written to the file', async () => {
    const db = record.open();
    const store = openSqliteKeyStore(db, { now });
    const { record: key, value } = await store.create({ account: 'acme', tier: 'free' });
    const rotated = await store.rotate(key.id, 600);
    await store.close();
    db.close();
    const bytes = Buffer.concat([await readFile(record.path), await readFile(`${record.path}-wal`).catch(() => Buffer.alloc(0))]);
    for (const v of [value, rotated.value]) {
      expect(bytes.includes(Buffer.from(v)), 'a key value in the file').to.equal(false);
      expect(bytes.includes(Buffer.from(hashKey(v))), 'its hash in the file').to.equal(true);
    }
  });

  it('finds a rotated value by its hash until its grace ends, and drops it at the next rotation after that', async () => {
    const db = record.open();
    const store = openSqliteKeyStore(db, { now });
    const other = openSqliteKeyStore(record.open(), { now });
    const { record: key, value: first } = await store.create({ account: 'acme', tier: 'free' });
    const { value: second } = await store.rotate(key.id, 60);
    const old = await other.findByHash(hashKey(first));
    expect(old?.record.id).to.equal(key.id);
    expect(old?.validUntil).to.equal(START + 60_000);
    expect((await other.findByHash(hashKey(second)))?.validUntil).to.equal(Infinity);
    expect(db.db.prepare('SELECT hash, key_id, position, until FROM retired_key_values').all()).to.deep.equal([
      { hash: hashKey(first), key_id: key.id, position: 1, until: new Date(START + 60_000).toISOString() },
    ]);
    clock += 61_000;
    // Past its grace the value no longer works, though the record still names it.
    expect((await other.findByHash(hashKey(first)))?.validUntil).to.be.below(clock);
    const { value: third } = await store.rotate(key.id, 60);
    expect(await other.findByHash(hashKey(first))).to.equal(undefined);
    expect((await other.get(key.id))?.retired.map((r) => r.hash)).to.deep.equal([hashKey(second)]);
    expect((await other.findByHash(hashKey(third)))?.record.hash).to.equal(hashKey(third));
  });

  it('revokes and restricts for every connection at once, refusing a key it cannot find', async () => {
    const store = openSqliteKeyStore(record.open(), { now });
    const other = openSqliteKeyStore(record.open(), { now });
    const { record: key, value } = await store.create({ account: 'acme', tier: 'free' });
    const restricted = await store.restrict(key.prefix, () => ({ origins: ['https://app.example.com'] }));
    expect(restricted.restrictions).to.deep.equal({ origins: ['https://app.example.com'] });
    expect((await other.findByHash(hashKey(value)))?.record.restrictions).to.deep.equal({ origins: ['https://app.example.com'] });
    await store.revoke(key.id);
    expect((await other.findByHash(hashKey(value)))?.record.revokedAt).to.equal(new Date(START).toISOString());
    let err: unknown;
    await other.revoke('key_nosuchkey').catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(KeyNotFoundError);
  });

  it('lists keys by account oldest first, follows a key moved to another account, and refuses a shared prefix', async () => {
    const store = openSqliteKeyStore(record.open(), { now });
    const made: KeyRecord[] = [];
    for (const account of ['acc_a', 'acc_b', 'acc_a', 'acc_a']) {
      made.push((await store.create({ account, tier: 'free' })).record);
      clock += 1_000;
    }
    const [a1, b1, a2, a3] = made as [KeyRecord, KeyRecord, KeyRecord, KeyRecord];
    await store.rotate(a2.id, 600);
    const listed = await store.list({ account: 'acc_a' });
    expect(listed.map((k) => k.id)).to.deep.equal([a1.id, a2.id, a3.id]);
    expect(listed[1]?.retired).to.have.length(1);
    expect((await store.list()).map((k) => k.id)).to.deep.equal([a1.id, b1.id, a2.id, a3.id]);
    await store.put({ ...a3, account: 'acc_b' });
    expect((await store.list({ account: 'acc_b' })).map((k) => k.id)).to.deep.equal([b1.id, a3.id]);
    await store.put({ ...b1, prefix: a1.prefix });
    let err: unknown;
    await store.get(a1.prefix).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(KeyAmbiguousError);
  });

  it('tells a gateway exactly which hashes another process changed, and everything when it fell behind the log', async () => {
    const writer = openSqliteKeyStore(record.open(), { now });
    const backend = new SqliteKeyBackend(record.open(), false);
    const gateway = new KeyRepository(backend, { now });
    const heard: StoreChange[] = [];
    gateway.onChange((c) => heard.push(c));
    const { record: key, value } = await writer.create({ account: 'acme', tier: 'free' });
    await writer.revoke(key.id);
    backend.poll();
    expect(heard).to.deep.equal([{ hashes: [hashKey(value)] }, { hashes: [hashKey(value)], invalid: [hashKey(value)] }]);
    // Its own changes it announced already: the log does not repeat them.
    heard.length = 0;
    await gateway.create({ account: 'acme', tier: 'free' });
    expect(heard).to.have.length(1);
    backend.poll();
    expect(heard).to.have.length(1);
    // Entries it never read were pruned: it cannot know which hashes changed.
    heard.length = 0;
    await writer.create({ account: 'acme', tier: 'free' });
    await writer.create({ account: 'acme', tier: 'free' });
    record.open().db.prepare('DELETE FROM key_changes WHERE seq < (SELECT max(seq) FROM key_changes)').run();
    backend.poll();
    expect(heard).to.deep.equal([{ all: true }]);
    backend.poll();
    expect(heard).to.have.length(1);
    // A live store reads the log by itself.
    const live = openSqliteKeyStore(record.open(), { live: true, now });
    const seen = new Promise<StoreChange>((resolve) => live.onChange(resolve));
    const { value: fresh } = await writer.create({ account: 'acme', tier: 'free' });
    expect(await seen).to.deep.equal({ hashes: [hashKey(fresh)] });
    await live.close();
  });

  it('keeps last use apart from changes: batched, merged into reads, never logged as a change', async () => {
    const db = record.open();
    const gateway = openSqliteKeyStore(record.open(), { live: true, now });
    const cli = openSqliteKeyStore(db, { now });
    const { record: key } = await cli.create({ account: 'acme', tier: 'free' });
    const at = START + 5_000;
    gateway.touch(key.id, at);
    await gateway.close();
    expect((await cli.get(key.id))?.lastUsedAt).to.equal(new Date(at).toISOString());
    expect((await cli.list({ account: 'acme' }))[0]?.lastUsedAt).to.equal(new Date(at).toISOString());
    expect(db.db.prepare('SELECT count(*) AS n FROM key_changes').get()).to.deep.equal({ n: 1 });
    // An older time never moves it back; a change of the key keeps it.
    cli.touch(key.id, at - 1_000);
    await cli.close();
    await cli.revoke(key.id);
    expect((await cli.get(key.id))?.lastUsedAt).to.equal(new Date(at).toISOString());
  });

  it('loses no key when two processes create keys at the same moment, and logs each change once, in order', async () => {
    const results = (await runTogether([
      ['keys', record.path, 'acc_a', '15'],
      ['keys', record.path, 'acc_b', '15'],
    ])) as Array<{ hashes: string[] }>;
    const db = record.open();
    const store = openSqliteKeyStore(db);
    expect(await store.list({ account: 'acc_a' })).to.have.length(15);
    expect(await store.list({ account: 'acc_b' })).to.have.length(15);
    for (const h of results.flatMap((r) => r.hashes)) expect((await store.findByHash(h))?.record.hash).to.equal(h);
    const seqs = db.db
      .prepare<[], { seq: number }>('SELECT seq FROM key_changes ORDER BY seq')
      .all()
      .map((r) => r.seq);
    expect(seqs).to.deep.equal(Array.from({ length: 30 }, (_, i) => i + 1));
  });
});
