// SqliteDatabase.asyncWriter (src/record/sqlite-database.ts), on real files: a write
// made off the request path that finds another connection holding the write lock waits
// for it on timers, so the process goes on meanwhile (SQLite's busy handler would hold
// its event loop), writes once the lock is let go, gives up with SQLITE_BUSY after the
// busy timeout, and leaves the connection's busy timeout as it was.

import { expect } from 'chai';
import type { SqliteDatabase } from '../../../src/record/sqlite-database.js';
import { tempRecord, type TempRecord } from '../../support/record.js';
import { pause } from '../../support/until.js';

describe('SQLite asynchronous writer', () => {
  let record: TempRecord;
  let holder: SqliteDatabase;

  beforeEach(async () => {
    record = await tempRecord();
    holder = record.open();
    holder.db.exec('CREATE TABLE t (x INTEGER)');
  });
  afterEach(() => record.cleanup());

  const rows = (): number => (holder.db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;

  it('waits for a held lock without holding the event loop, and writes once it is let go', async () => {
    const writer = record.open({ busyTimeoutMs: 5_000 });
    const insert = writer.asyncWriter((x: number) => writer.db.prepare('INSERT INTO t VALUES (?)').run(x).changes);
    holder.db.exec('BEGIN IMMEDIATE');
    let done = false;
    const written = insert(1).then((n) => {
      done = true;
      return n;
    });
    // Timers fire while the write waits (a busy handler would hold them until it gave up).
    await pause(50);
    expect([done, rows()]).to.deep.equal([false, 0]);
    holder.db.exec('COMMIT');
    expect(await written).to.equal(1);
    expect(rows()).to.equal(1);
  });

  it('gives up with SQLITE_BUSY after the busy timeout, writing nothing, and keeps the busy timeout for other writes', async () => {
    const writer = record.open({ busyTimeoutMs: 100 });
    const insert = writer.asyncWriter((x: number) => writer.db.prepare('INSERT INTO t VALUES (?)').run(x).changes);
    holder.db.exec('BEGIN IMMEDIATE');
    const failed = await insert(1).then(
      () => undefined,
      (err: unknown) => (err as { code?: unknown }).code,
    );
    expect(failed).to.equal('SQLITE_BUSY');
    expect(writer.db.pragma('busy_timeout', { simple: true })).to.equal(100);
    holder.db.exec('ROLLBACK');
    expect(rows()).to.equal(0);
    expect(await insert(2)).to.equal(1);
  });
});
