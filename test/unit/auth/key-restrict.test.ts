// Restrictions kept with the key record over every backend (a file, a real Redis, SQLite, PostgreSQL),
// written through the key service: set on create, changed field by field, lifted,
// seen by a second store object (another instance) and announced so caches drop the
// key; refused for revoked keys and for bad input, before anything is written.

import { expect } from 'chai';
import { Redis } from 'ioredis';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFileKeyStore } from '../../../src/auth/file-key-store.js';
import { KeyService } from '../../../src/auth/key-service.js';
import { KeyInputError, type KeyStore, type StoreChange } from '../../../src/auth/key-store.js';
import { openRedisKeyStore } from '../../../src/auth/redis-key-store.js';
import { RESTRICTION_FIELDS } from '../../../src/auth/restrictions.js';
import type { TierConfig } from '../../../src/config/types.js';
import { openPgKeyStore } from '../../../src/record/pg-key-store.js';
import { openSqliteKeyStore } from '../../../src/record/sqlite-key-store.js';
import { tempSchema } from '../../support/pg.js';
import { tempRecord } from '../../support/record.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../../support/redis.js';

const TIERS = { free: { name: 'free' } as TierConfig };
const RULES = { rotationGraceSeconds: 60, maxActivePerAccount: 100 };

interface Opened {
  readonly a: KeyStore;
  readonly b: KeyStore;
  /** What the backend holds for a key, as text. */
  stored(id: string): Promise<string>;
  close(): Promise<void>;
}

const backends: Array<[string, () => Promise<Opened>]> = [
  [
    'file',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'noderouter-restrict-'));
      const path = join(dir, 'keys.json');
      const a = await openFileKeyStore(path);
      const b = await openFileKeyStore(path);
      return {
        a,
        b,
        stored: async (id) =>
          JSON.stringify((JSON.parse(await readFile(path, 'utf8')) as { keys: Array<{ id: string }> }).keys.find((k) => k.id === id)),
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
      const ra = new Redis(REDIS_URL);
      const rb = new Redis(REDIS_URL);
      const a = await openRedisKeyStore(ra, { prefix });
      const b = await openRedisKeyStore(rb, { prefix });
      return {
        a,
        b,
        stored: async (id) => (await ra.get(`${prefix}k:${id}`)) ?? '',
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
      const record = await tempRecord();
      const db = record.open();
      const a = openSqliteKeyStore(db);
      const b = openSqliteKeyStore(record.open());
      return {
        a,
        b,
        // The row as JSON, empty columns left out and JSON columns as they are.
        stored: async (id) => {
          const row = db.db.prepare('SELECT * FROM keys WHERE id = ?').get(id) as Record<string, unknown>;
          const present = Object.entries(row).filter(([, v]) => v !== null);
          return `{${present.map(([k, v]) => `${JSON.stringify(k)}:${k === 'restrictions' || k === 'permissions' ? String(v) : JSON.stringify(v)}`).join(',')}}`;
        },
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
      const schema = await tempSchema();
      const a = await openPgKeyStore(await schema.open());
      const b = await openPgKeyStore(await schema.open());
      return {
        a,
        b,
        // The row as JSON, empty columns left out; restrictions' lists in the order the checks write them (jsonb keeps its own).
        stored: async (id) => {
          const [row] = await schema.query<{ row: Record<string, unknown> }>(
            `SELECT to_jsonb(k) AS row FROM ${schema.table('keys')} k WHERE id = $1`,
            [id],
          );
          const present = Object.entries(row?.row ?? {}).filter(([, v]) => v !== null);
          const ordered = (v: unknown): unknown => {
            const lists = v as Record<string, unknown>;
            return Object.fromEntries(RESTRICTION_FIELDS.filter((f) => f in lists).map((f) => [f, lists[f]]));
          };
          return JSON.stringify(Object.fromEntries(present.map(([k, v]) => [k, k === 'restrictions' ? ordered(v) : v])));
        },
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
  describe(`key restrictions in the ${name} store`, () => {
    let o: Opened;
    let service: KeyService;
    beforeEach(async () => {
      o = await open();
      service = new KeyService(o.a, TIERS, RULES);
    });
    afterEach(() => o.close());

    it('keeps them with the record, as checked, for every instance', async () => {
      const { record } = await service.create({
        account: 'acme',
        tier: 'free',
        origins: ['https://App.example.com/'],
        ips: '10.0.0.0/8, 2001:db8::/32',
      });
      expect(record.restrictions).to.deep.equal({ origins: ['https://app.example.com'], ips: ['10.0.0.0/8', '2001:db8::/32'] });
      expect((await o.b.get(record.id))?.restrictions).to.deep.equal(record.restrictions);
      expect(await o.stored(record.id)).to.contain('"restrictions":{"origins":["https://app.example.com"]');
      // A key made without restrictions has none in its record at all.
      const { record: plain } = await service.create({ account: 'acme', tier: 'free' });
      expect(plain).to.not.have.property('restrictions');
      expect(await o.stored(plain.id)).to.not.contain('restrictions');
    });

    it('changes the fields given, lifts one with "*", and drops the member once none is left; caches hear of it', async () => {
      const { record } = await service.create({ account: 'acme', tier: 'free', origins: 'https://a.example.com' });
      const heard: StoreChange[] = [];
      o.a.onChange((c) => heard.push(c));
      const changed = await service.restrict(record.id, { contracts: ['0x5FbDB2315678afecb367f032d93F642f64180aa3'] });
      expect(changed.restrictions).to.deep.equal({
        origins: ['https://a.example.com'],
        contracts: ['0x5fbdb2315678afecb367f032d93f642f64180aa3'],
      });
      expect(heard.some((c) => 'hashes' in c && c.hashes.includes(record.hash))).to.equal(true);
      expect((await o.b.get(record.id))?.restrictions?.contracts).to.deep.equal(['0x5fbdb2315678afecb367f032d93f642f64180aa3']);
      const lifted = await service.restrict(record.id, { origins: '*', contracts: [] });
      expect(lifted).to.not.have.property('restrictions');
      expect(await o.stored(record.id)).to.not.contain('restrictions');
      // The same lists again write nothing.
      heard.length = 0;
      await service.restrict(record.id, { ips: null });
      expect(heard).to.deep.equal([]);
    });

    it('refuses bad input naming the field, and revoked keys, writing nothing', async () => {
      const { record } = await service.create({ account: 'acme', tier: 'free' });
      const before = await o.stored(record.id);
      const refused = async (p: Promise<unknown>): Promise<KeyInputError> => {
        try {
          await p;
        } catch (err) {
          if (err instanceof KeyInputError) return err;
          throw err;
        }
        throw new Error('not refused');
      };
      const bad = await refused(service.restrict(record.id, { ips: '10.0.0.0/33' }));
      expect(bad.field).to.equal('ips');
      expect(bad.message).to.match(/^ips: "10.0.0.0\/33" has a prefix length outside 0 to 32/);
      expect((await refused(service.restrict(record.id, {}))).message).to.match(/name at least one restriction/);
      expect((await refused(service.create({ account: 'acme', tier: 'free', origins: 'null' }))).field).to.equal('origins');
      expect(await o.stored(record.id)).to.equal(before);
      await service.revoke(record.id);
      expect((await refused(service.restrict(record.id, { origins: 'https://a.example.com' }))).message).to.match(/revoked/);
    });
  });
}
