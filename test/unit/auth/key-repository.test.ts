// The key repository over every backend (a file, a real Redis, SQLite, PostgreSQL), with two store
// objects on one backing store standing for two instances (or the CLI and a
// gateway): changes made at the same moment all land, a shared prefix never picks
// a key, rotation keeps a bounded list of retired values, revoking twice writes once.

import { expect } from 'chai';
import { Redis } from 'ioredis';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFileKeyStore } from '../../../src/auth/file-key-store.js';
import { hashKey } from '../../../src/auth/key-format.js';
import { KeyAmbiguousError, MAX_RETIRED, type KeyRecord, type KeyStore, type StoreChange } from '../../../src/auth/key-store.js';
import { openRedisKeyStore } from '../../../src/auth/redis-key-store.js';
import { openPgKeyStore } from '../../../src/record/pg-key-store.js';
import { openSqliteKeyStore } from '../../../src/record/sqlite-key-store.js';
import { tempSchema } from '../../support/pg.js';
import { tempRecord } from '../../support/record.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../../support/redis.js';

interface Pair {
  readonly a: KeyStore;
  readonly b: KeyStore;
  close(): Promise<void>;
}

const backends: Array<[string, () => Promise<Pair>]> = [
  [
    'file',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'noderouter-repo-'));
      const path = join(dir, 'keys.json');
      const a = await openFileKeyStore(path);
      const b = await openFileKeyStore(path);
      return {
        a,
        b,
        close: async () => {
          await a.close();
          await b.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    'redis',
    async () => {
      const prefix = testPrefix();
      // Two clients: two instances' connections, so their commands really interleave.
      const ra = new Redis(REDIS_URL);
      const rb = new Redis(REDIS_URL);
      const a = await openRedisKeyStore(ra, { prefix });
      const b = await openRedisKeyStore(rb, { prefix });
      return {
        a,
        b,
        close: async () => {
          await a.close();
          await b.close();
          ra.disconnect();
          rb.disconnect();
          await deleteUnderPrefix(prefix);
        },
      };
    },
  ],
  [
    'sqlite',
    async () => {
      // Two connections to one file: two processes sharing the record.
      const record = await tempRecord();
      const a = openSqliteKeyStore(record.open());
      const b = openSqliteKeyStore(record.open());
      return {
        a,
        b,
        close: async () => {
          await a.close();
          await b.close();
          await record.cleanup();
        },
      };
    },
  ],
  [
    'postgres',
    async () => {
      // Two pools on one schema: two instances sharing the record.
      const schema = await tempSchema();
      const a = await openPgKeyStore(await schema.open());
      const b = await openPgKeyStore(await schema.open());
      return {
        a,
        b,
        close: async () => {
          await a.close();
          await b.close();
          await schema.cleanup();
        },
      };
    },
  ],
];

for (const [name, open] of backends) {
  describe(`key repository: ${name}`, () => {
    let pair: Pair;
    beforeEach(async () => {
      pair = await open();
    });
    afterEach(() => pair.close());

    it('loses no change when two writers rotate and revoke one key at the same moment', async () => {
      let rotations = 0;
      for (let round = 0; round < 12; round++) {
        const { record, value } = await pair.a.create({ account: 'acme', tier: 'free' });
        const [rotation, revocation] = await Promise.allSettled([pair.a.rotate(record.id, 600), pair.b.revoke(record.id)]);
        if (revocation.status === 'rejected') throw revocation.reason;
        const final = (await pair.a.get(record.id)) as KeyRecord;
        expect(final.revokedAt, `round ${round}: revocation lost`).to.be.a('string');
        if (rotation.status === 'fulfilled') {
          // The rotation went first: it is in the record, under the revocation.
          rotations++;
          expect(final.hash, `round ${round}: rotation lost`).to.equal(hashKey(rotation.value.value));
          expect(final.retired.map((r) => r.hash)).to.deep.equal([hashKey(value)]);
          expect((await pair.a.findByHash(hashKey(rotation.value.value)))?.record.revokedAt).to.be.a('string');
        } else {
          // The revocation went first: the rotation saw it and was refused, never written over it.
          expect((rotation.reason as Error).message).to.match(/is revoked and cannot be rotated/);
          expect(final.hash).to.equal(hashKey(value));
        }
      }
      expect(rotations, 'some rounds should see the rotation first').to.be.greaterThan(0);
    });

    it('keeps every concurrent rotation: each value handed out is the current one or a retired one', async () => {
      const { record, value } = await pair.a.create({ account: 'acme', tier: 'free' });
      const writers = [pair.a, pair.b, pair.a, pair.b];
      const results = await Promise.all(writers.map((s) => s.rotate(record.id, 600)));
      const final = (await pair.a.get(record.id)) as KeyRecord;
      const known = [final.hash, ...final.retired.map((r) => r.hash)];
      expect(known).to.have.length(results.length + 1);
      expect(known).to.include.members([hashKey(value), ...results.map((r) => hashKey(r.value))]);
      for (const r of results) expect((await pair.b.findByHash(hashKey(r.value)))?.record.id).to.equal(record.id);
    });

    it('refuses a prefix two keys share, changing nothing, and finds each by id', async () => {
      const one = (await pair.a.create({ account: 'acme', tier: 'free' })).record;
      const other = (await pair.a.create({ account: 'globex', tier: 'free' })).record;
      // Another customer's key with the same first characters (4 base62 characters collide often enough).
      await pair.b.put({ ...other, prefix: one.prefix });
      for (const s of [pair.a, pair.b]) {
        for (const op of [() => s.revoke(one.prefix), () => s.rotate(one.prefix, 0), () => s.get(one.prefix)]) {
          let err: unknown;
          await op().catch((e: unknown) => (err = e));
          expect(err).to.be.instanceOf(KeyAmbiguousError);
          expect((err as Error).message).to.match(/matches more than one key: use the key's id/);
        }
      }
      const after = await pair.a.list();
      expect(after.every((k) => k.revokedAt === undefined && k.rotatedAt === undefined)).to.equal(true);
      expect((await pair.b.get(other.id))?.account).to.equal('globex');
      // Once the other key moves on (rotated: a new prefix), the prefix is one key's again.
      await pair.b.rotate(other.id, 0);
      expect((await pair.a.revoke(one.prefix)).id).to.equal(one.id);
    });

    it(`keeps at most ${MAX_RETIRED} retired values, the newest; older ones stop working and are announced invalid`, async () => {
      const changes: StoreChange[] = [];
      pair.a.onChange((c) => changes.push(c));
      const first = await pair.a.create({ account: 'acme', tier: 'free' });
      const values = [first.value];
      for (let i = 0; i < MAX_RETIRED + 3; i++) values.push((await pair.a.rotate(first.record.id, 3600)).value);
      const final = (await pair.b.get(first.record.id)) as KeyRecord;
      expect(final.retired).to.have.length(MAX_RETIRED);
      const working = values.slice(-(MAX_RETIRED + 1));
      const dropped = values.slice(0, values.length - working.length);
      expect(final.retired.map((r) => r.hash)).to.deep.equal(working.slice(0, -1).map(hashKey));
      for (const v of working) expect(await pair.b.findByHash(hashKey(v)), 'a working value').to.not.equal(undefined);
      for (const v of dropped) expect(await pair.b.findByHash(hashKey(v)), 'a dropped value').to.equal(undefined);
      const invalid = changes.flatMap((c) => ('invalid' in c ? (c.invalid ?? []) : []));
      expect(invalid).to.deep.equal(dropped.map(hashKey));
    });

    it('revokes once: revoking a revoked key writes and announces nothing', async () => {
      const { record, value } = await pair.a.create({ account: 'acme', tier: 'free' });
      const changes: StoreChange[] = [];
      pair.a.onChange((c) => changes.push(c));
      const revoked = await pair.a.revoke(record.id);
      const again = await pair.b.revoke(record.prefix);
      await pair.a.revoke(record.id);
      expect(again.revokedAt).to.equal(revoked.revokedAt);
      expect(changes).to.deep.equal([{ hashes: [hashKey(value)], invalid: [hashKey(value)] }]);
    });
  });
}
