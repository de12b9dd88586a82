// The account store contract, run against every backend: the JSON file beside the
// key file, Redis (127.0.0.1:6379, a random prefix removed afterwards), a SQLite
// file and a PostgreSQL schema of its own (each store object on a connection, or a
// pool, of its own). Expiry is judged by a clock the tests move.

import { expect } from 'chai';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountExistsError, AccountNotFoundError, type AccountRecord, type AccountStore } from '../../../src/accounts/account-store.js';
import { accountsPathFor, FileAccountStore } from '../../../src/accounts/file-account-store.js';
import { RedisAccountStore } from '../../../src/accounts/redis-account-store.js';
import { PgAccountStore } from '../../../src/record/pg-account-store.js';
import { SqliteAccountStore } from '../../../src/record/sqlite-account-store.js';
import { tempSchema, type TempSchema } from '../../support/pg.js';
import { tempRecord, type TempRecord } from '../../support/record.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../../support/redis.js';

const MINUTE = 60_000;

function account(name: string, id = `acc_${randomBytes(6).toString('hex')}`): AccountRecord {
  return {
    id,
    name,
    email: undefined,
    tiers: ['free'],
    defaultTier: 'free',
    createdAt: new Date().toISOString(),
    disabledAt: undefined,
    deletedAt: undefined,
  };
}

interface Backend {
  open(now: () => number): Promise<AccountStore>;
  cleanup(): Promise<void>;
}

function contract(name: string, backend: () => Backend): void {
  describe(`account store: ${name}`, () => {
    let b: Backend;
    let clock = Date.now();
    let store: AccountStore;

    beforeEach(async () => {
      b = backend();
      clock = Date.now();
      store = await b.open(() => clock);
    });
    afterEach(async () => {
      await store.close();
      await b.cleanup();
    });

    it('finds accounts by id and by name ignoring case, and lists them oldest first', async () => {
      const a = account('Acme');
      const g = { ...account('globex'), createdAt: new Date(Date.now() + 1000).toISOString() };
      await store.createAccount(g);
      await store.createAccount(a);
      expect(await store.getAccount(a.id)).to.deep.include({
        id: a.id,
        name: 'Acme',
        tiers: ['free'],
        defaultTier: 'free',
        createdAt: a.createdAt,
      });
      expect((await store.getAccount('acme'))?.id).to.equal(a.id);
      expect((await store.getAccount('ACME'))?.id).to.equal(a.id);
      expect(await store.getAccount('nobody')).to.equal(undefined);
      expect(await store.getAccount('acc_000000000000')).to.equal(undefined);
      expect((await store.listAccounts()).map((x) => x.name)).to.deep.equal(['Acme', 'globex']);
    });

    it('refuses a second account of the same name, whatever its case', async () => {
      await store.createAccount(account('acme'));
      let err: unknown;
      try {
        await store.createAccount(account('ACME'));
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(AccountExistsError);
      expect(await store.listAccounts()).to.have.length(1);
    });

    it('updates an account, never its id or name', async () => {
      const a = account('acme');
      await store.createAccount(a);
      const at = new Date().toISOString();
      const updated = await store.updateAccount(a.id, (old) => ({ ...old, name: 'renamed', disabledAt: at }));
      expect(updated).to.include({ id: a.id, name: 'acme', disabledAt: at });
      expect((await store.getAccount('acme'))?.disabledAt).to.equal(at);
      let err: unknown;
      try {
        await store.updateAccount('acc_nosuchaccount', (x) => x);
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(AccountNotFoundError);
    });

    it('gives a sign-in token once, and never after it expires', async () => {
      const expiresAt = new Date(clock + 15 * MINUTE).toISOString();
      await store.addToken({ hash: 'a'.repeat(64), accountId: 'acc_x', createdAt: new Date(clock).toISOString(), expiresAt });
      await store.addToken({ hash: 'b'.repeat(64), accountId: 'acc_x', createdAt: new Date(clock).toISOString(), expiresAt });
      expect((await store.takeToken('a'.repeat(64)))?.accountId).to.equal('acc_x');
      expect(await store.takeToken('a'.repeat(64))).to.equal(undefined);
      expect(await store.takeToken('c'.repeat(64))).to.equal(undefined);
      clock += 15 * MINUTE;
      expect(await store.takeToken('b'.repeat(64))).to.equal(undefined);
    });

    it('gives one token to only one of two concurrent takers', async () => {
      await store.addToken({
        hash: 'd'.repeat(64),
        accountId: 'acc_x',
        createdAt: new Date(clock).toISOString(),
        expiresAt: new Date(clock + MINUTE).toISOString(),
      });
      const other = await b.open(() => clock);
      const results = await Promise.all([store.takeToken('d'.repeat(64)), other.takeToken('d'.repeat(64))]);
      await other.close();
      expect(results.filter((r) => r !== undefined)).to.have.length(1);
    });

    it('keeps sessions until they expire or are deleted', async () => {
      const session = (hash: string) => ({
        hash,
        kind: 'account' as const,
        accountId: 'acc_x',
        grant: undefined,
        createdAt: new Date(clock).toISOString(),
        expiresAt: new Date(clock + 60 * MINUTE).toISOString(),
      });
      await store.addSession(session('e'.repeat(64)));
      await store.addSession(session('f'.repeat(64)));
      expect((await store.getSession('e'.repeat(64)))?.accountId).to.equal('acc_x');
      await store.deleteSession('e'.repeat(64));
      expect(await store.getSession('e'.repeat(64))).to.equal(undefined);
      clock += 60 * MINUTE - 1;
      expect(await store.getSession('f'.repeat(64))).to.not.equal(undefined);
      clock += 1;
      expect(await store.getSession('f'.repeat(64))).to.equal(undefined);
    });

    it('shares everything with another store object on the same backing store', async () => {
      const a = account('acme');
      await store.createAccount(a);
      const other = await b.open(() => clock);
      expect((await other.getAccount('acme'))?.id).to.equal(a.id);
      await other.addSession({
        hash: '1'.repeat(64),
        kind: 'operator',
        accountId: undefined,
        grant: 'g',
        createdAt: new Date(clock).toISOString(),
        expiresAt: new Date(clock + MINUTE).toISOString(),
      });
      await other.close();
      expect((await store.getSession('1'.repeat(64)))?.kind).to.equal('operator');
    });

    it('loses no change when two store objects update one account at the same moment', async () => {
      const a = account('acme');
      await store.createAccount(a);
      const other = await b.open(() => clock);
      const writers = [store, other];
      // Each update adds its own tier to what it reads: a read-then-write would drop some.
      const added = Array.from({ length: 12 }, (_, i) => `t${i}`);
      await Promise.all(
        added.map((t, i) => (writers[i % 2] as AccountStore).updateAccount(a.id, (old) => ({ ...old, tiers: [...old.tiers, t] }))),
      );
      await Promise.all([
        store.updateAccount(a.id, (old) => ({ ...old, disabledAt: new Date(clock).toISOString() })),
        other.updateAccount(a.id, (old) => ({ ...old, email: 'ops@acme.example' })),
      ]);
      await other.close();
      const final = (await store.getAccount(a.id)) as AccountRecord;
      expect([...final.tiers].sort()).to.deep.equal(['free', ...added].sort());
      expect(final.disabledAt).to.be.a('string');
      expect(final.email).to.equal('ops@acme.example');
    });
  });
}

contract('file', () => {
  let dir = '';
  return {
    async open(now) {
      if (dir === '') dir = await mkdtemp(join(tmpdir(), 'nr-accounts-'));
      return FileAccountStore.open(accountsPathFor(join(dir, 'keys.json')), now);
    },
    async cleanup() {
      if (dir !== '') await rm(dir, { recursive: true, force: true });
    },
  };
});

contract('redis', () => {
  const prefix = testPrefix();
  const clients: Redis[] = [];
  return {
    async open(now) {
      const r = new Redis(REDIS_URL);
      clients.push(r);
      return new RedisAccountStore(r, prefix, now);
    },
    async cleanup() {
      for (const c of clients) c.disconnect();
      clients.length = 0;
      await deleteUnderPrefix(prefix);
    },
  };
});

contract('sqlite', () => {
  let record: TempRecord | undefined;
  return {
    async open(now) {
      record ??= await tempRecord();
      return new SqliteAccountStore(record.open(), now);
    },
    async cleanup() {
      await record?.cleanup();
    },
  };
});

contract('postgres', () => {
  let schema: TempSchema | undefined;
  return {
    async open(now) {
      schema ??= await tempSchema();
      return new PgAccountStore(await schema.open(), now);
    },
    async cleanup() {
      await schema?.cleanup();
    },
  };
});

describe('account store: file specifics', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nr-accounts-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('lives beside the key file, private, written whole (no temp file left), expired entries dropped on write', async () => {
    let clock = Date.now();
    const path = accountsPathFor(join(dir, 'keys.json'));
    expect(path).to.equal(join(dir, 'keys.accounts.json'));
    const store = await FileAccountStore.open(path, () => clock);
    await store.addToken({
      hash: 'a'.repeat(64),
      accountId: 'acc_x',
      createdAt: new Date(clock).toISOString(),
      expiresAt: new Date(clock + MINUTE).toISOString(),
    });
    expect((await stat(path)).mode & 0o777).to.equal(0o600);
    expect(await readdir(dir)).to.deep.equal(['keys.accounts.json']);
    clock += 2 * MINUTE;
    await store.createAccount(account('acme'));
    const shape = JSON.parse(await readFile(path, 'utf8')) as { tokens: unknown[]; accounts: unknown[] };
    expect(shape.tokens).to.deep.equal([]);
    expect(shape.accounts).to.have.length(1);
    await store.close();
    // Reopened, it reads what was written.
    const again = await FileAccountStore.open(path, () => clock);
    expect((await again.getAccount('acme'))?.name).to.equal('acme');
  });

  it('refuses a file that is not an accounts file', async () => {
    const path = join(dir, 'keys.accounts.json');
    await (await import('node:fs/promises')).writeFile(path, '{"version":2}');
    let err: unknown;
    try {
      await FileAccountStore.open(path);
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).to.contain('is not a noderouter accounts file');
  });
});

describe('account store: redis specifics', () => {
  it('gives tokens and sessions a Redis TTL, so nothing is left to sweep', async () => {
    const prefix = testPrefix();
    const r = new Redis(REDIS_URL);
    try {
      const now = Date.now();
      const store = new RedisAccountStore(r, prefix, () => now);
      await store.addToken({
        hash: 'a'.repeat(64),
        accountId: 'acc_x',
        createdAt: new Date(now).toISOString(),
        expiresAt: new Date(now + 15 * MINUTE).toISOString(),
      });
      const ttl = await r.pttl(`${prefix}st:${'a'.repeat(64)}`);
      expect(ttl).to.be.within(15 * MINUTE - 5_000, 15 * MINUTE);
    } finally {
      r.disconnect();
      await deleteUnderPrefix(prefix);
    }
  });
});
