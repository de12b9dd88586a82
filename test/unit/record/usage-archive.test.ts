// Where the usage book is kept between runs, the same for the file beside the keys
// and the SQLite and PostgreSQL records: what the book counted (calls, errors, limits, invalid
// requests, by key, UTC day and chain) is there after a restart, summed as the book
// sums it, and so are the day's and month's totals that quotas read. The records write
// only the rows that changed since they last wrote; PostgreSQL's, where many instances
// write, sums what each counted.

import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryLimiter } from '../../../src/quota/limiter.js';
import { UsageBook, type UsageArchive } from '../../../src/quota/usage.js';
import { UsageFile } from '../../../src/quota/usage-file.js';
import { PgUsageStore } from '../../../src/record/pg-usage-store.js';
import { SqliteUsageStore } from '../../../src/record/sqlite-usage-store.js';
import { tempSchema, type TempSchema } from '../../support/pg.js';
import { tempRecord, type TempRecord } from '../../support/record.js';
import { tierConfig } from '../../support/tiers.js';

const DAY = 86_400_000;
const START = Date.UTC(2026, 2, 30, 12, 0, 0);

interface Backend {
  /** An archive of a new book on the same backing store (another run of the gateway). */
  archive(book: UsageBook): UsageArchive;
  cleanup(): Promise<void>;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'file',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'noderouter-usage-'));
      return {
        archive: (book) => new UsageFile(book, join(dir, 'keys.usage.json')),
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
  [
    'sqlite',
    async () => {
      const record = await tempRecord();
      return { archive: (book) => new SqliteUsageStore(book, record.open()), cleanup: () => record.cleanup() };
    },
  ],
  [
    'postgres',
    async () => {
      // One pool for every run: what a run leaves is in the schema, not the pool.
      const schema = await tempSchema();
      const db = await schema.open();
      return { archive: (book) => new PgUsageStore(book, db), cleanup: () => schema.cleanup() };
    },
  ],
];

/** A few days of traffic across a month's end, two keys and two chains. */
function count(book: UsageBook): void {
  book.add('key_a', 'eth', START, 5, 1, 0);
  book.add('key_a', 'eth', START + 1_000, 2, 0, 1);
  book.add('key_a', 'sol', START, 1, 0, 0, 3);
  book.add('key_a', 'eth', START + DAY, 4, 0, 0);
  book.add('key_a', 'eth', START + 2 * DAY, 7, 2, 0);
  book.add('key_b', 'eth', START, 0, 0, 9);
}

for (const [name, open] of backends) {
  describe(`usage archive: ${name}`, () => {
    let backend: Backend;
    beforeEach(async () => {
      backend = await open();
    });
    afterEach(() => backend.cleanup());

    it('has every row and total after a restart, as the book counted them', async () => {
      const book = new UsageBook();
      const archive = backend.archive(book);
      await archive.load();
      count(book);
      await archive.close();
      const again = new UsageBook();
      await backend.archive(again).load();
      for (const key of ['key_a', 'key_b']) expect(again.rows(key), key).to.deep.equal(book.rows(key));
      expect(again.rows('key_a', '2026-03-31')).to.deep.equal([
        { day: '2026-03-31', chain: 'eth', calls: 4, errors: 0, limited: 0 },
        { day: '2026-04-01', chain: 'eth', calls: 7, errors: 2, limited: 0 },
      ]);
      expect(again.rows('key_a', '2026-03-30')).to.deep.include({
        day: '2026-03-30',
        chain: 'sol',
        calls: 1,
        errors: 0,
        limited: 0,
        invalid: 3,
      });
      expect(again.dayCalls('key_a', START)).to.equal(8);
      expect(again.monthCalls('key_a', START)).to.equal(12);
      expect(again.monthCalls('key_a', START + 2 * DAY)).to.equal(7);
      expect(again.dirty).to.equal(false);
    });

    it('adds a later run’s counts to what an earlier run kept', async () => {
      const first = new UsageBook();
      const a = backend.archive(first);
      await a.load();
      count(first);
      await a.close();
      const second = new UsageBook();
      const b = backend.archive(second);
      await b.load();
      second.add('key_a', 'eth', START + 5_000, 10, 0, 0);
      await b.close();
      const third = new UsageBook();
      await backend.archive(third).load();
      expect(third.rows('key_a', '2026-03-30')[0]).to.deep.equal({ day: '2026-03-30', chain: 'eth', calls: 17, errors: 1, limited: 1 });
      expect(third.dayCalls('key_a', START)).to.equal(18);
    });

    it('keeps what a memory limiter counted, read back through the limiter', async () => {
      let clock = START;
      const limiter = await MemoryLimiter.openWith(
        (book) => backend.archive(book),
        () => clock,
      );
      const tier = tierConfig();
      for (let i = 0; i < 3; i++) expect((await limiter.admit({ id: 'key_a', account: 'acme' }, tier, 1, 'eth')).allowed).to.equal(true);
      limiter.countErrors('key_a', 'eth', 1);
      await limiter.close();
      clock += 1_000;
      const again = await MemoryLimiter.openWith(
        (book) => backend.archive(book),
        () => clock,
      );
      expect(await again.usage('key_a')).to.deep.equal([{ day: '2026-03-30', chain: 'eth', calls: 3, errors: 1, limited: 0 }]);
      await again.close();
    });
  });
}

describe('usage archive: sqlite specifics', () => {
  let record: TempRecord;
  beforeEach(async () => {
    record = await tempRecord();
  });
  afterEach(() => record.cleanup());

  it('writes only the rows that changed since the last write, one row per key, day and chain', async () => {
    const db = record.open();
    const book = new UsageBook();
    const store = new SqliteUsageStore(book, db);
    await store.load();
    count(book);
    const written = (): number => (db.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
    await store.flush();
    expect(db.db.prepare('SELECT count(*) AS n FROM usage_days').get()).to.deep.equal({ n: 5 });
    const before = written();
    book.add('key_b', 'eth', START, 1, 0, 0);
    await store.flush();
    expect(written() - before).to.equal(1);
    // Nothing counted: nothing written.
    await store.flush();
    expect(written() - before).to.equal(1);
    expect(db.db.prepare("SELECT calls, errors, limited, invalid FROM usage_days WHERE key_id = 'key_b'").all()).to.deep.equal([
      { calls: 1, errors: 0, limited: 9, invalid: 0 },
    ]);
    await store.close();
  });
});

describe('usage archive: postgres specifics', () => {
  let schema: TempSchema;
  beforeEach(async () => {
    schema = await tempSchema();
  });
  afterEach(() => schema.cleanup());

  /** Each row's counts and the transaction that last wrote it (a row written again gets a new one). */
  const stored = (): Promise<Array<{ key_id: string; chain: string; calls: number; xmin: string }>> =>
    schema.query(`SELECT key_id, chain, calls::int, xmin::text FROM ${schema.table('usage_days')} ORDER BY key_id, day, chain`);

  it('writes only the rows that changed since the last write, in one statement per flush', async () => {
    const db = await schema.open();
    const book = new UsageBook();
    const store = new PgUsageStore(book, db);
    await store.load();
    count(book);
    let statements = 0;
    const query = db.query.bind(db);
    db.query = <R>(text: string, values?: readonly unknown[]): Promise<R[]> => {
      statements++;
      return query<R>(text, values);
    };
    await store.flush();
    expect(statements).to.equal(1);
    const first = await stored();
    expect(first).to.have.length(5);
    book.add('key_b', 'eth', START, 1, 0, 0);
    await store.flush();
    // Nothing counted: nothing written.
    await store.flush();
    expect(statements).to.equal(2);
    const second = await stored();
    for (const [i, row] of second.entries()) {
      const before = first[i] as (typeof first)[number];
      if (row.key_id === 'key_b') expect(row.xmin).to.not.equal(before.xmin);
      else expect(row).to.deep.equal(before);
    }
    expect(
      await schema.query(
        `SELECT calls::int, errors::int, limited::int, invalid::int FROM ${schema.table('usage_days')} WHERE key_id = 'key_b'`,
      ),
    ).to.deep.equal([{ calls: 1, errors: 0, limited: 9, invalid: 0 }]);
    await store.close();
  });

  it('sums what two instances count for one key, day and chain', async () => {
    const books = [new UsageBook(), new UsageBook()];
    const stores = await Promise.all(books.map(async (book) => new PgUsageStore(book, await schema.open())));
    for (const s of stores) await s.load();
    const [one, two] = books as [UsageBook, UsageBook];
    count(one);
    two.add('key_a', 'eth', START, 10, 1, 0);
    two.add('key_c', 'sol', START, 2, 0, 0, 1);
    await Promise.all(stores.map((s) => s.flush()));
    one.add('key_a', 'eth', START + 2_000, 1, 0, 0);
    two.add('key_a', 'eth', START + 3_000, 1, 0, 0);
    await Promise.all(stores.map((s) => s.close()));
    const after = new UsageBook();
    await new PgUsageStore(after, await schema.open()).load();
    expect(after.rows('key_a', '2026-03-30')[0]).to.deep.equal({ day: '2026-03-30', chain: 'eth', calls: 19, errors: 2, limited: 1 });
    expect(after.rows('key_c')).to.deep.equal([{ day: '2026-03-30', chain: 'sol', calls: 2, errors: 0, limited: 0, invalid: 1 }]);
    expect(after.dayCalls('key_a', START)).to.equal(20);
  });
});
