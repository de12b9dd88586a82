// The PostgreSQL key store on a real server, beyond the contract every backend passes
// (test/unit/auth/key-repository.test.ts, key-restrict.test.ts), with each instance a
// pool of its own: values never reach the database; two instances share keys, and a
// revocation, restriction or rotation on one reaches the other's key cache within a
// look at the change log (a second), well inside the cache's TTL; a gateway hears
// exactly which hashes another instance changed (or everything, when it fell behind);
// a cache miss costs one query; last use is kept without counting as a change; and two
// instances creating keys at once lose none, each change logged once, in order.

import { expect } from 'chai';
import { hashKey } from '../../../src/auth/key-format.js';
import { KeyCache } from '../../../src/auth/key-cache.js';
import { KeyRepository } from '../../../src/auth/key-repository.js';
import type { StoreChange } from '../../../src/auth/key-store.js';
import { GatewayError } from '../../../src/errors.js';
import type { PgDatabase } from '../../../src/record/pg-database.js';
import { openPgKeyStore, PgKeyBackend } from '../../../src/record/pg-key-store.js';
import { tempSchema, type TempSchema } from '../../support/pg.js';
import { until } from '../../support/until.js';

const START = Date.parse('2026-11-20T10:00:00.000Z');
const CACHE = { ttlMs: 60_000, maxEntries: 100, negativeTtlMs: 60_000 };

/** How a cache answers a key now: 'ok', or the error code it refuses it with. */
async function answer(cache: KeyCache, value: string): Promise<string> {
  try {
    await cache.lookup(value);
    return 'ok';
  } catch (err) {
    if (err instanceof GatewayError) return err.code;
    throw err;
  }
}

/** The statements an instance sends while `fn` runs. */
async function statementsDuring(db: PgDatabase, fn: () => Promise<unknown>): Promise<number> {
  let sent = 0;
  const query = db.query.bind(db);
  db.query = <R>(text: string, values?: readonly unknown[]): Promise<R[]> => {
    sent++;
    return query<R>(text, values);
  };
  try {
    await fn();
  } finally {
    db.query = query;
  }
  return sent;
}

describe('record: PostgreSQL key store', () => {
  let schema: TempSchema;
  let clock: number;
  const now = (): number => clock;
  beforeEach(async () => {
    schema = await tempSchema();
    clock = START;
  });
  afterEach(() => schema.cleanup());

  it('keeps hashes only: no value is ever written to any table', async () => {
    const store = await openPgKeyStore(await schema.open(), { now });
    const { record: key, value } = await store.create({ account: 'acme', tier: 'free' });
    const rotated = await store.rotate(key.id, 600);
    await store.revoke(key.id);
    const everything = (
      await Promise.all(
        ['keys', 'retired_key_values', 'key_changes'].map(async (t) =>
          (await schema.query<{ row: string }>(`SELECT t::text AS row FROM ${schema.table(t)} t`)).map((r) => r.row),
        ),
      )
    )
      .flat()
      .join('\n');
    for (const v of [value, rotated.value]) {
      expect(everything.includes(v), 'a key value in the record').to.equal(false);
      expect(everything.includes(hashKey(v)), 'its hash in the record').to.equal(true);
    }
  });

  it('shares keys between two instances, and a change on one reaches the other’s key cache within a look at the log', async () => {
    const gateway = await openPgKeyStore(await schema.open(), { live: true });
    const cache = new KeyCache(gateway, CACHE);
    const admin = await openPgKeyStore(await schema.open());
    const { record: key, value } = await admin.create({ account: 'acme', tier: 'free' });
    // Made on one instance, it works on the other at once (a cache miss asks the record).
    expect(await answer(cache, value)).to.equal('ok');
    await admin.restrict(key.id, () => ({ origins: ['https://app.example.com'] }));
    await until(async () => (await cache.lookup(value)).restrictions !== undefined, { what: 'the restriction reached the cache' });
    const { value: next } = await admin.rotate(key.id, 60);
    expect(await answer(cache, next)).to.equal('ok');
    await admin.revoke(key.id);
    // The old answer is cached for a minute; the revocation is heard well before.
    const heardAt = Date.now();
    await until(async () => (await answer(cache, value)) === 'INVALID_KEY', { what: 'the revocation reached the cache', timeoutMs: 3_000 });
    expect(Date.now() - heardAt).to.be.below(CACHE.ttlMs);
    expect(await answer(cache, next)).to.equal('INVALID_KEY');
    await gateway.close();
  });

  it('tells a gateway exactly which hashes another instance changed, and everything when it fell behind the log', async () => {
    const writer = await openPgKeyStore(await schema.open(), { now });
    const backend = await PgKeyBackend.open(await schema.open(), false);
    const gateway = new KeyRepository(backend, { now });
    const heard: StoreChange[] = [];
    gateway.onChange((c) => heard.push(c));
    const { record: key, value } = await writer.create({ account: 'acme', tier: 'free' });
    await writer.revoke(key.id);
    await backend.poll();
    expect(heard).to.deep.equal([{ hashes: [hashKey(value)] }, { hashes: [hashKey(value)], invalid: [hashKey(value)] }]);
    // Its own changes it announced already: the log does not repeat them.
    heard.length = 0;
    await gateway.create({ account: 'acme', tier: 'free' });
    expect(heard).to.have.length(1);
    await backend.poll();
    expect(heard).to.have.length(1);
    // Entries it never read were pruned: it cannot know which hashes changed.
    heard.length = 0;
    await writer.create({ account: 'acme', tier: 'free' });
    await writer.create({ account: 'acme', tier: 'free' });
    const log = schema.table('key_changes');
    await schema.query(`DELETE FROM ${log} WHERE seq < (SELECT max(seq) FROM ${log})`);
    await backend.poll();
    expect(heard).to.deep.equal([{ all: true }]);
    await backend.poll();
    expect(heard).to.have.length(1);
  });

  it('finds a key on a cache miss with one query, whether by its current or a retired value', async () => {
    const db = await schema.open();
    const store = await openPgKeyStore(db, { now });
    const { record: key, value } = await store.create({ account: 'acme', tier: 'free' });
    const { value: next } = await store.rotate(key.id, 600);
    for (const v of [next, value, 'nrk_unknown']) {
      expect(await statementsDuring(db, () => store.findByHash(hashKey(v))), v).to.equal(1);
    }
    expect((await store.findByHash(hashKey(value)))?.validUntil).to.equal(START + 600_000);
  });

  it('keeps last use apart from changes: batched, merged into reads, never logged as a change', async () => {
    const gateway = await openPgKeyStore(await schema.open(), { live: true, now });
    const cli = await openPgKeyStore(await schema.open(), { now });
    const { record: key } = await cli.create({ account: 'acme', tier: 'free' });
    const at = START + 5_000;
    gateway.touch(key.id, at);
    await gateway.close();
    expect((await cli.get(key.id))?.lastUsedAt).to.equal(new Date(at).toISOString());
    expect((await cli.list({ account: 'acme' }))[0]?.lastUsedAt).to.equal(new Date(at).toISOString());
    expect(await schema.query(`SELECT count(*)::int AS n FROM ${schema.table('key_changes')}`)).to.deep.equal([{ n: 1 }]);
    // An older time never moves it back; a change of the key keeps it.
    cli.touch(key.id, at - 1_000);
    await cli.close();
    await cli.revoke(key.id);
    expect((await cli.get(key.id))?.lastUsedAt).to.equal(new Date(at).toISOString());
  });

  it('loses no key when two instances create keys at the same moment, and logs each change once, in order', async () => {
    const a = await openPgKeyStore(await schema.open());
    const b = await openPgKeyStore(await schema.open());
    const make = async (store: KeyRepository, account: string): Promise<string[]> => {
      const hashes: string[] = [];
      for (let i = 0; i < 15; i++) hashes.push((await store.create({ account, tier: 'free' })).record.hash);
      return hashes;
    };
    const made = await Promise.all([make(a, 'acc_a'), make(b, 'acc_b')]);
    expect(await a.list({ account: 'acc_a' })).to.have.length(15);
    expect(await b.list({ account: 'acc_b' })).to.have.length(15);
    for (const h of made.flat()) expect((await b.findByHash(h))?.record.hash).to.equal(h);
    const seqs = await schema.query<{ seq: string }>(`SELECT seq FROM ${schema.table('key_changes')} ORDER BY seq`);
    expect(seqs.map((r) => Number(r.seq))).to.deep.equal(Array.from({ length: 30 }, (_, i) => i + 1));
  });
});
