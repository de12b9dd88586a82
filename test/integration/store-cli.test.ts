// `noderouter store …` against real stores: migrations applied and reported, the file
// store and the Redis store of earlier versions (made by today's code for them)
// adopted into a SQLite or PostgreSQL record so that every key made there keeps
// working on a gateway (its value never moved), differing rows refused without
// --force, and an export imported into a new record row for row, SQLite to
// PostgreSQL and back; and the shipped config's embedded default opening its SQLite
// file in a temp copy.

import { expect } from 'chai';
import BetterSqlite3 from 'better-sqlite3';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountsPathFor, FileAccountStore } from '../../src/accounts/file-account-store.js';
import { RedisAccountStore } from '../../src/accounts/redis-account-store.js';
import type { AccountRecord } from '../../src/accounts/account-store.js';
import { openFileKeyStore } from '../../src/auth/file-key-store.js';
import { openRedisKeyStore } from '../../src/auth/redis-key-store.js';
import type { KeyStore } from '../../src/auth/key-store.js';
import { hashKey } from '../../src/auth/key-format.js';
import { loadConfig } from '../../src/config/load.js';
import { openServices } from '../../src/app/services.js';
import type { Gateway } from '../../src/app/gateway.js';
import { FileHoldStore, holdsPathFor, RedisHoldStore } from '../../src/ops/holds/hold-store.js';
import { MemoryLimiter, type Limiter } from '../../src/quota/limiter.js';
import { RedisLimiter } from '../../src/quota/redis-limiter.js';
import { usagePathFor } from '../../src/quota/usage-file.js';
import { RedisConnection } from '../../src/store/redis-connection.js';
import { runCli } from '../support/cli.js';
import { rpc, startStack, storeYaml, type ChainSpec, type Stack } from '../support/harness.js';
import { PG_URL, tempSchema, type TempSchema } from '../support/pg.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../support/redis.js';
import { tierConfig } from '../support/tiers.js';
import { until } from '../support/until.js';

const L1: ChainSpec = {
  name: 'l1',
  plugin: 'evm',
  path: '/l1',
  nodes: [
    { name: 'l1-full-1', role: 'full' },
    { name: 'l1-full-2', role: 'full' },
  ],
};
const CALL = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };
const ORIGIN = 'https://app.example.com';
const HOUR = 3_600_000;

/** What an old store was made with: the values of its keys (returned once, by today's code for that store). */
interface OldStore {
  readonly plain: { id: string; value: string };
  readonly restricted: string;
  /** A rotated key: its old value (in its grace) and its new one. */
  readonly rotated: { old: string; fresh: string };
  readonly revoked: string;
  readonly account: AccountRecord;
  readonly token: string;
  readonly session: string;
}

/** Keys, an account with a token and a session, usage and a hold, as a store of earlier versions writes them. */
async function fill(keys: KeyStore, accounts: FileAccountStore | RedisAccountStore, limiter: Limiter): Promise<OldStore> {
  const now = Date.now();
  const plain = await keys.create({ account: 'acme', tier: 'enterprise', label: 'plain' });
  const restricted = await keys.create({ account: 'acme', tier: 'enterprise', restrictions: { origins: [ORIGIN] } });
  const toRotate = await keys.create({ account: 'globex', tier: 'enterprise' });
  const rotated = await keys.rotate(toRotate.record.id, 3600);
  const revoked = await keys.create({ account: 'globex', tier: 'enterprise' });
  await keys.revoke(revoked.record.id);
  keys.touch(plain.record.id, now - 1000);
  const account: AccountRecord = {
    id: 'acc_OldStore0001',
    name: 'Acme',
    email: 'ops@acme.example',
    tiers: ['enterprise'],
    defaultTier: 'enterprise',
    createdAt: new Date(now - HOUR).toISOString(),
    disabledAt: undefined,
    deletedAt: undefined,
  };
  await accounts.createAccount(account);
  const token = 'a1'.repeat(16);
  const session = 'b2'.repeat(16);
  const until = new Date(now + HOUR).toISOString();
  await accounts.addToken({ hash: hashKey(token), accountId: account.id, createdAt: new Date(now).toISOString(), expiresAt: until });
  await accounts.addSession({
    hash: hashKey(session),
    kind: 'account',
    accountId: account.id,
    grant: undefined,
    createdAt: new Date(now).toISOString(),
    expiresAt: until,
  });
  for (let i = 0; i < 3; i++) await limiter.admit({ id: plain.record.id, account: 'acme' }, tierConfig(), 1, 'l1');
  await limiter.chargeRefused({ id: plain.record.id, account: 'acme' }, tierConfig(), 1, 'l1', 'invalid');
  return {
    plain: { id: plain.record.id, value: plain.value },
    restricted: restricted.value,
    rotated: { old: toRotate.value, fresh: rotated.value },
    revoked: revoked.value,
    account,
    token,
    session,
  };
}

/** The file store of earlier versions in `dir`, made by today's code for it: its key file. */
async function oldFileStore(dir: string): Promise<{ keyFile: string; made: OldStore }> {
  const keyFile = join(dir, 'keys.json');
  const keys = await openFileKeyStore(keyFile);
  const accounts = await FileAccountStore.open(accountsPathFor(keyFile));
  const limiter = await MemoryLimiter.open(usagePathFor(keyFile));
  const made = await fill(keys, accounts, limiter);
  await limiter.close();
  await keys.close();
  await accounts.close();
  const holds = await FileHoldStore.open(holdsPathFor(keyFile));
  await holds.set('l1/l1-full-2', { state: 'cordoned', since: new Date().toISOString(), reason: 'disk swap' });
  return { keyFile, made };
}

/** What a gateway started on the adopted record does with the old store's keys, account, usage and hold. */
async function expectAdopted(gw: Gateway, made: OldStore): Promise<void> {
  const call = (value: string, headers: Record<string, string> = {}) => rpc(`${gw.url}/l1`, CALL, { apikey: value, ...headers });
  expect((await call(made.plain.value)).status).to.equal(200);
  expect((await call(made.rotated.old)).status, 'a rotated value in its grace').to.equal(200);
  expect((await call(made.rotated.fresh)).status).to.equal(200);
  expect((await call(made.revoked)).status).to.equal(401);
  expect((await call(made.restricted, { origin: ORIGIN })).status).to.equal(200);
  expect((await call(made.restricted, { origin: 'https://elsewhere.example.com' })).status).to.equal(403);
  const record = await gw.store.get(made.plain.id);
  expect(record?.lastUsedAt).to.be.a('string');
  const usage = await gw.services.bundle.limiter.usage(made.plain.id);
  // The three calls counted by the old store, and the one just made.
  expect(usage[0]).to.include({ chain: 'l1', calls: 4, invalid: 1 });
  expect(await gw.services.bundle.accounts.getAccount('acme')).to.deep.equal(made.account);
  expect((await gw.services.bundle.accounts.getSession(hashKey(made.session)))?.accountId).to.equal(made.account.id);
  expect((await gw.services.bundle.accounts.takeToken(hashKey(made.token)))?.accountId).to.equal(made.account.id);
  expect(gw.holds.all.get('l1/l1-full-2')).to.include({ state: 'cordoned', reason: 'disk swap' });
}

/** A config in `dir` whose `store:` is the given flow mapping (no gateway runs on it). */
async function configWith(dir: string, name: string, store: string): Promise<string> {
  const base = await readFile('config/gateway.yaml', 'utf8');
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, base.replace(/^store:\n(?: .*\n|\n)*?(?=\S)/m, `store: ${store}\n\n`));
  return file;
}

/** A config on the SQLite record `name` in the folder (no gateway runs on it). */
const sqliteConfig = (dir: string, name: string): Promise<string> => configWith(dir, name, storeYaml(join(dir, `${name}.db`)));

/** Every row of every table a record keeps (not its change log or migration list), in a fixed order. */
function tables(path: string): Record<string, unknown[]> {
  const db = new BetterSqlite3(path, { readonly: true });
  try {
    const out: Record<string, unknown[]> = {};
    for (const t of ['accounts', 'keys', 'retired_key_values', 'signin_tokens', 'sessions', 'usage_days', 'node_holds']) {
      out[t] = db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2, 3`).all();
    }
    return out;
  } finally {
    db.close();
  }
}

describe('noderouter store', function () {
  this.timeout(60_000);

  describe('migrate --from a file store', () => {
    let stack: Stack;
    let keyFile: string;
    let made: OldStore;

    before(async () => {
      stack = await startStack({ chains: [L1] });
      await mkdir(join(stack.dir, 'old'));
      ({ keyFile, made } = await oldFileStore(join(stack.dir, 'old')));
    });
    after(() => stack.close());

    it('applies the migrations, and says so once', async () => {
      const res = await runCli(['store', 'migrate', '--config', stack.configFile]);
      expect(res.stderr).to.equal('');
      expect(res.stdout).to.match(/^record \S+noderouter\.db \(sqlite\): schema version \d+ \(up to date\)$/m);
      const fresh = join(stack.dir, 'fresh.yaml');
      await writeFile(
        fresh,
        (await readFile(stack.configFile, 'utf8')).replace(/^store: .*$/m, `store: ${storeYaml(join(stack.dir, 'fresh.db'))}`),
      );
      expect((await runCli(['store', 'migrate', '--config', fresh])).stdout).to.match(/schema version (\d+) \(applied now: 1, 2, .*\1\)/);
    });

    it('adopts every kind of row, says what, and every key made there works on the gateway', async () => {
      const res = await runCli(['store', 'migrate', '--from', keyFile, '--config', stack.configFile]);
      expect(res.stderr).to.equal('');
      expect(res.code).to.equal(0);
      expect(res.stdout).to.contain(`adopted from ${keyFile}:`);
      expect(res.stdout).to.contain('new:           1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold');
      expect(res.stdout).to.contain('every key keeps working: 4 keys moved as their hashes (and 1 retired values still in their grace)');
      // A gateway started on the record now (holds and usage are read at start).
      await expectAdopted(await stack.startAnother(), made);
    });

    it('adopts again without change, and refuses rows that differ unless --force, naming them', async () => {
      const again = await runCli(['store', 'migrate', '--from', keyFile, '--config', stack.configFile]);
      expect(again.code).to.equal(0);
      expect(again.stdout).to.contain('new:           0 accounts, 0 keys');
      // The old store revokes a key after it was adopted.
      const keys = await openFileKeyStore(keyFile);
      await keys.revoke(made.plain.id);
      await keys.close();
      const refused = await runCli(['store', 'migrate', '--from', keyFile, '--config', stack.configFile]);
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.contain(
        `1 row of ${keyFile} differ from what the record holds (key ${made.plain.id}); nothing was written`,
      );
      expect(refused.stderr).to.contain('--force');
      expect((await rpc(stack.url('/l1'), CALL, { apikey: made.plain.value })).status).to.equal(200);
      const forced = await runCli(['store', 'migrate', '--from', keyFile, '--force', '--config', stack.configFile]);
      expect(forced.code).to.equal(0);
      expect(forced.stdout).to.contain('replaced:      0 accounts, 1 key,');
      await until(async () => (await rpc(stack.url('/l1'), CALL, { apikey: made.plain.value })).status === 401, {
        what: 'the running gateway refuses the key revoked by the adoption',
      });
    });

    it('refuses a --from that is not a file store, and options of other commands', async () => {
      const missing = await runCli(['store', 'migrate', '--from', join(stack.dir, 'none.json'), '--config', stack.configFile]);
      expect(missing.code).to.equal(2);
      expect(missing.stderr).to.contain('none.json does not exist: --from names the key file of the file store');
      const prefix = await runCli(['store', 'migrate', '--from', keyFile, '--prefix', 'x:', '--config', stack.configFile]);
      expect(prefix.code).to.equal(2);
      expect(prefix.stderr).to.contain('--prefix is only taken by store migrate --from redis://…');
      const unknown = await runCli(['store', 'vacuum', '--config', stack.configFile]);
      expect(unknown.code).to.equal(2);
      expect(unknown.stderr).to.contain('unknown store command "vacuum" (migrate, export, import)');
    });
  });

  describe('export and import', () => {
    let dir: string;

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'noderouter-store-'));
    });
    after(() => rm(dir, { recursive: true, force: true }));

    const configOn = (name: string): Promise<string> => sqliteConfig(dir, name);

    it('moves every row from one SQLite record to a new one exactly', async () => {
      await mkdir(join(dir, 'old'));
      const { keyFile } = await oldFileStore(join(dir, 'old'));
      const from = await configOn('from');
      expect((await runCli(['store', 'migrate', '--from', keyFile, '--config', from])).code).to.equal(0);
      const file = join(dir, 'export.jsonl');
      const exported = await runCli(['store', 'export', '--out', file, '--config', from]);
      expect(exported.stderr).to.equal('');
      expect(exported.stdout).to.contain('exported 1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold from');
      const text = await readFile(file, 'utf8');
      expect(JSON.parse(text.split('\n')[0] as string)).to.include({ format: 'noderouter-record', version: 1 });
      const to = await configOn('to');
      const imported = await runCli(['store', 'import', file, '--config', to]);
      expect(imported.stderr).to.equal('');
      expect(imported.stdout).to.contain('new:           1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold');
      const a = tables(join(dir, 'from.db'));
      const b = tables(join(dir, 'to.db'));
      for (const [t, rows] of Object.entries(a)) expect(rows.length, t).to.be.greaterThan(0);
      expect(b).to.deep.equal(a);
      // The same export again: every row already there.
      const again = await runCli(['store', 'import', file, '--config', to]);
      expect(again.stdout).to.contain('already there: 1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold');
      // Export on stdout: the same rows.
      const stdout = await runCli(['store', 'export', '--config', to]);
      expect(stdout.stdout.split('\n').slice(1)).to.deep.equal(text.split('\n').slice(1));
    });

    it('refuses what is not an export, naming the line', async () => {
      const file = join(dir, 'bad.jsonl');
      const to = await configOn('bad');
      await writeFile(file, '{"format":"noderouter-record","version":1}\n{"kind":"key","key":{"id":"key_x","value":"nrk_secret"}}\n');
      const res = await runCli(['store', 'import', file, '--config', to]);
      expect(res.code).to.equal(2);
      expect(res.stderr).to.contain('line 2: not a key record');
      await writeFile(file, '{"kind":"hold","id":"l1/a","hold":{"state":"cordoned","since":"x","reason":""}}\n');
      expect((await runCli(['store', 'import', file, '--config', to])).stderr).to.contain(
        'line 1: is not the header of `noderouter store export`',
      );
    });
  });

  describe('migrate --from a Redis store', () => {
    const prefix = testPrefix();
    let stack: Stack;
    let made: OldStore;

    before(async () => {
      stack = await startStack({ chains: [L1] });
      const connection = new RedisConnection({ servers: { kind: 'url', url: REDIS_URL }, timeoutMs: 2_000 });
      await connection.ready(2_000);
      const keys = await openRedisKeyStore(connection.client, { prefix });
      const limiter = new RedisLimiter(connection.client, { prefix, onFailure: 'fail-closed', instances: 1 });
      made = await fill(keys, new RedisAccountStore(connection.client, prefix), limiter);
      await keys.close();
      const holds = await RedisHoldStore.open(connection.client, { prefix });
      await holds.set('l1/l1-full-2', { state: 'cordoned', since: new Date().toISOString(), reason: 'disk swap' });
      await connection.close();
    });
    after(async () => {
      await stack.close();
      await deleteUnderPrefix(prefix);
    });

    it('adopts what the Redis store holds under its prefix, and every key made there works on the gateway', async () => {
      const res = await runCli(['store', 'migrate', '--from', REDIS_URL, '--prefix', prefix, '--config', stack.configFile]);
      expect(res.stderr).to.equal('');
      expect(res.stdout).to.contain(`adopted from the Redis store under "${prefix}":`);
      expect(res.stdout).to.contain('new:           1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold');
      await expectAdopted(await stack.startAnother(), made);
    });

    it('says so when the prefix holds nothing', async () => {
      const res = await runCli(['store', 'migrate', '--from', REDIS_URL, '--prefix', `${prefix}none:`, '--config', stack.configFile]);
      expect(res.code).to.equal(2);
      expect(res.stderr).to.contain(`found nothing under the prefix "${prefix}none:" in that Redis`);
    });
  });

  describe('on a PostgreSQL record', () => {
    let dir: string;
    let pg: TempSchema;

    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'noderouter-store-pg-'));
      pg = await tempSchema();
    });
    afterEach(async () => {
      await pg.cleanup();
      await rm(dir, { recursive: true, force: true });
    });

    const pgStore = (schema: string) =>
      `{ record: { kind: postgres, url: "${PG_URL}", schema: ${schema}, poolSize: 2 }, hot: { kind: memory } }`;
    /** The export's rows (its header names the record and the time). */
    const rowsOf = (text: string) => text.split('\n').slice(1);
    const parsedRows = (text: string): unknown[] =>
      rowsOf(text)
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as unknown);

    it('moves every row from SQLite into PostgreSQL and back exactly', async () => {
      await mkdir(join(dir, 'old'));
      const { keyFile } = await oldFileStore(join(dir, 'old'));
      const from = await sqliteConfig(dir, 'from');
      expect((await runCli(['store', 'migrate', '--from', keyFile, '--config', from])).code).to.equal(0);
      const fromFile = join(dir, 'from.jsonl');
      expect((await runCli(['store', 'export', '--out', fromFile, '--config', from])).code).to.equal(0);

      const onPg = await configWith(dir, 'pg', pgStore(pg.schema));
      const imported = await runCli(['store', 'import', fromFile, '--config', onPg]);
      expect(imported.stderr).to.equal('');
      expect(imported.stdout).to.contain(`imported from ${fromFile} into 127.0.0.1:5432/test, schema ${pg.schema} (postgres):`);
      expect(imported.stdout).to.contain('new:           1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold');
      const again = await runCli(['store', 'import', fromFile, '--config', onPg]);
      expect(again.stdout).to.contain('already there: 1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold');

      // Out of PostgreSQL: the same rows, line for line.
      const pgFile = join(dir, 'pg.jsonl');
      const exported = await runCli(['store', 'export', '--out', pgFile, '--config', onPg]);
      expect(exported.stderr).to.equal('');
      expect(exported.stdout).to.contain('exported 1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold from');
      const fromRows = rowsOf(await readFile(fromFile, 'utf8'));
      expect(fromRows.length).to.equal(10);
      expect(rowsOf(await readFile(pgFile, 'utf8'))).to.deep.equal(fromRows);

      // And back into a new SQLite record: every table as the first one holds it.
      const back = await sqliteConfig(dir, 'back');
      expect((await runCli(['store', 'import', pgFile, '--config', back])).stdout).to.contain(
        'new:           1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold',
      );
      expect(tables(join(dir, 'back.db'))).to.deep.equal(tables(join(dir, 'from.db')));
    });

    it('refuses an import whose rows differ from what it holds, writing nothing, and replaces them with --force', async () => {
      await mkdir(join(dir, 'old'));
      const { keyFile, made } = await oldFileStore(join(dir, 'old'));
      const onPg = await configWith(dir, 'pg', pgStore(pg.schema));
      expect((await runCli(['store', 'migrate', '--from', keyFile, '--config', onPg])).code).to.equal(0);
      const before = await runCli(['store', 'export', '--config', onPg]);
      // The same export, with the key revoked and the hold's reason changed.
      const revokedAt = new Date().toISOString();
      const changed = before.stdout
        .split('\n')
        .map((line) => {
          if (line === '' || !line.startsWith('{"kind"')) return line;
          const row = JSON.parse(line) as Record<string, Record<string, unknown>>;
          if (row.key?.id === made.plain.id) row.key.revokedAt = revokedAt;
          if (row.hold !== undefined) row.hold.reason = 'new disks';
          return JSON.stringify(row);
        })
        .join('\n');
      const file = join(dir, 'changed.jsonl');
      await writeFile(file, changed);
      const refused = await runCli(['store', 'import', file, '--config', onPg]);
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.contain(
        `2 rows of ${file} differ from what the record holds (key ${made.plain.id}, hold l1/l1-full-2); nothing was written`,
      );
      expect(refused.stderr).to.contain('--force');
      expect((await runCli(['store', 'export', '--config', onPg])).stdout.split('\n').slice(1)).to.deep.equal(
        before.stdout.split('\n').slice(1),
      );
      const forced = await runCli(['store', 'import', file, '--force', '--config', onPg]);
      expect(forced.stderr).to.equal('');
      expect(forced.stdout).to.contain('replaced:      0 accounts, 1 key, 0 sign-in tokens, 0 sessions, 0 usage rows, 1 hold');
      // Member order aside (the edit appended revokedAt), what the changed input holds.
      expect(parsedRows((await runCli(['store', 'export', '--config', onPg])).stdout)).to.deep.equal(parsedRows(changed));
      const [logged] = await pg.query<{ origin: string; hashes: string[] }>(
        `SELECT origin, hashes FROM ${pg.table('key_changes')} ORDER BY seq DESC LIMIT 1`,
      );
      expect(logged).to.deep.equal({ origin: 'import', hashes: [hashKey(made.plain.value)] });
    });

    it('adopts a file store, and a gateway on the record serves every key made there; a later change refused, then forced', async () => {
      const stack = await startStack({ chains: [L1], storeYaml: pgStore(pg.schema), extraYaml: 'usage: { flushInterval: 5m }' });
      try {
        await mkdir(join(stack.dir, 'old'));
        const { keyFile, made } = await oldFileStore(join(stack.dir, 'old'));
        const res = await runCli(['store', 'migrate', '--from', keyFile, '--config', stack.configFile]);
        expect(res.stderr).to.equal('');
        expect(res.stdout).to.match(
          new RegExp(`^record 127\\.0\\.0\\.1:5432/\\S+, schema ${pg.schema} \\(postgres\\): schema version \\d+ \\(up to date\\)$`, 'm'),
        );
        expect(res.stdout).to.contain('new:           1 account, 4 keys, 1 sign-in token, 1 session, 1 usage row, 1 hold');
        await expectAdopted(await stack.startAnother(), made);

        const keys = await openFileKeyStore(keyFile);
        await keys.revoke(made.plain.id);
        await keys.close();
        const refused = await runCli(['store', 'migrate', '--from', keyFile, '--config', stack.configFile]);
        expect(refused.code).to.equal(2);
        expect(refused.stderr).to.contain(
          `1 row of ${keyFile} differ from what the record holds (key ${made.plain.id}); nothing was written`,
        );
        expect((await rpc(stack.url('/l1'), CALL, { apikey: made.plain.value })).status).to.equal(200);
        const forced = await runCli(['store', 'migrate', '--from', keyFile, '--force', '--config', stack.configFile]);
        expect(forced.code).to.equal(0);
        expect(forced.stdout).to.contain('replaced:      0 accounts, 1 key,');
        await until(async () => (await rpc(stack.url('/l1'), CALL, { apikey: made.plain.value })).status === 401, {
          what: 'the running gateway refuses the key revoked by the adoption (it reads the change log)',
        });
      } finally {
        await stack.close();
      }
    });
  });

  describe('the embedded default (npm start)', () => {
    let dir: string;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'noderouter-default-'));
    });
    after(() => rm(dir, { recursive: true, force: true }));

    it('loads the shipped config and opens its SQLite record beside it, with the memory hot state', async () => {
      await mkdir(join(dir, 'config'));
      const file = join(dir, 'config', 'gateway.yaml');
      await copyFile('config/gateway.yaml', file);
      const config = await loadConfig(file);
      expect(config.store).to.deep.equal({ record: { kind: 'sqlite', path: join(dir, 'data', 'noderouter.db') }, hot: { kind: 'memory' } });
      const services = await openServices(config, { live: false });
      try {
        const { record } = await services.keys.create({ account: 'demo', tier: 'free' });
        expect((await services.keys.list({})).map((r) => r.id)).to.deep.equal([record.id]);
        expect([services.bundle.record, services.bundle.hot]).to.deep.equal(['sqlite', 'memory']);
      } finally {
        await services.bundle.close();
      }
      expect(existsSync(join(dir, 'data', 'noderouter.db'))).to.equal(true);
    });
  });
});
