// The SQLite account store on real files, beyond the contract every backend passes
// (test/unit/accounts/account-store.test.ts): two processes updating one account at
// the same moment lose no change, what was written is there after a restart, and
// expired tokens and sessions are swept when new ones are added.

import { expect } from 'chai';
import type { AccountRecord } from '../../../src/accounts/account-store.js';
import { SqliteAccountStore } from '../../../src/record/sqlite-account-store.js';
import { runTogether, tempRecord, type TempRecord } from '../../support/record.js';

const START = Date.parse('2026-11-20T10:00:00.000Z');
const MINUTE = 60_000;

const acme: AccountRecord = {
  id: 'acc_acme00000001',
  name: 'Acme',
  email: 'ops@acme.example',
  tiers: ['free'],
  defaultTier: 'free',
  createdAt: new Date(START).toISOString(),
  disabledAt: undefined,
  deletedAt: undefined,
};

describe('record: SQLite account store', () => {
  let record: TempRecord;
  beforeEach(async () => {
    record = await tempRecord();
  });
  afterEach(() => record.cleanup());

  it('loses no change when two processes update one account at the same moment', async () => {
    await new SqliteAccountStore(record.open()).createAccount(acme);
    await runTogether([
      ['tiers', record.path, acme.id, 'a'],
      ['tiers', record.path, acme.id, 'b'],
    ]);
    const tiers = (await new SqliteAccountStore(record.open()).getAccount(acme.id))?.tiers ?? [];
    const expected = ['free', ...['a', 'b'].flatMap((t) => Array.from({ length: 20 }, (_, i) => `${t}${i}`))];
    expect([...tiers].sort()).to.deep.equal(expected.sort());
  });

  it('keeps accounts, tokens and sessions across a restart, as they were written', async () => {
    const db = record.open();
    const store = new SqliteAccountStore(db, () => START);
    await store.createAccount(acme);
    const token = {
      hash: 'a'.repeat(64),
      accountId: acme.id,
      createdAt: acme.createdAt,
      expiresAt: new Date(START + MINUTE).toISOString(),
    };
    const session = {
      hash: 'b'.repeat(64),
      kind: 'operator' as const,
      accountId: undefined,
      grant: 'digest',
      createdAt: acme.createdAt,
      expiresAt: new Date(START + MINUTE).toISOString(),
    };
    await store.addToken(token);
    await store.addSession(session);
    db.close();
    const again = new SqliteAccountStore(record.open(), () => START);
    expect(await again.getAccount('ACME')).to.deep.equal(acme);
    expect(await again.getSession(session.hash)).to.deep.equal(session);
    expect(await again.takeToken(token.hash)).to.deep.equal(token);
  });

  it('sweeps expired tokens and sessions when new ones are added', async () => {
    let clock = START;
    const db = record.open();
    const store = new SqliteAccountStore(db, () => clock);
    const expiresAt = new Date(START + MINUTE).toISOString();
    await store.addToken({ hash: 'a'.repeat(64), accountId: acme.id, createdAt: acme.createdAt, expiresAt });
    await store.addSession({
      hash: 'b'.repeat(64),
      kind: 'account',
      accountId: acme.id,
      grant: undefined,
      createdAt: acme.createdAt,
      expiresAt,
    });
    clock += MINUTE;
    const later = new Date(clock + MINUTE).toISOString();
    await store.addToken({ hash: 'c'.repeat(64), accountId: acme.id, createdAt: acme.createdAt, expiresAt: later });
    const count = (table: string): unknown => db.db.prepare(`SELECT count(*) AS n FROM ${table}`).get();
    expect(count('signin_tokens')).to.deep.equal({ n: 1 });
    expect(count('sessions')).to.deep.equal({ n: 0 });
  });
});
