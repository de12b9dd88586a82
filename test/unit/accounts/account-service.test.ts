// Account operations over the real file stores (keys and accounts in a temp dir):
// input checks, key adoption, one-time sign-in tokens and their expiry, sessions and
// theirs, operator sessions tied to the admin token, and what reaches the disk.

import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountInputError, AccountService } from '../../../src/accounts/account-service.js';
import { accountsPathFor, FileAccountStore } from '../../../src/accounts/file-account-store.js';
import { openFileKeyStore } from '../../../src/auth/file-key-store.js';
import { hashKey } from '../../../src/auth/key-format.js';
import { KeyService } from '../../../src/auth/key-service.js';
import { KeyInputError, type KeyStore } from '../../../src/auth/key-store.js';
import { csrfTokenFor } from '../../../src/auth/secrets.js';
import type { TierConfig } from '../../../src/config/types.js';
import { rejection } from '../../support/rejection.js';
import { tierConfig } from '../../support/tiers.js';

const MINUTE = 60_000;
const tier = (name: string, archive = false): TierConfig =>
  tierConfig({ name, rate: 10, burst: 20, maxBatch: 10, archive }, { rate: 10, burst: 20 });
const TIERS = { free: tier('free'), growth: tier('growth', true), enterprise: tier('enterprise', true) };
const RULES = { tiers: TIERS, sessionTtlMs: 12 * 60 * MINUTE, signinTokenTtlMs: 15 * MINUTE };
const KEY_RULES = { rotationGraceSeconds: 60, maxActivePerAccount: 100 };

describe('account service', () => {
  let dir: string;
  let keys: KeyStore;
  let store: FileAccountStore;
  let service: AccountService;
  let clock: number;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nr-account-service-'));
    clock = Date.now();
    keys = await openFileKeyStore(join(dir, 'keys.json'));
    store = await FileAccountStore.open(accountsPathFor(join(dir, 'keys.json')), () => clock);
    service = new AccountService(store, keys, RULES, () => clock);
  });
  afterEach(async () => {
    await store.close();
    await keys.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('create', () => {
    it('fills safe defaults: only the first configured tier, which is the default', async () => {
      const { account } = await service.create({ name: 'acme' });
      expect(account).to.include({ name: 'acme', defaultTier: 'free', email: undefined });
      expect(account.tiers).to.deep.equal(['free']);
      expect(account.id).to.match(/^acc_[A-Za-z0-9]{12}$/);
      const { account: g } = await service.create({ name: 'globex', defaultTier: 'growth' });
      expect(g.tiers).to.deep.equal(['growth']);
      const { account: i } = await service.create({ name: 'initech', email: 'a@b.example', tiers: 'free, growth', defaultTier: 'growth' });
      expect(i).to.deep.include({ tiers: ['free', 'growth'], defaultTier: 'growth', email: 'a@b.example' });
    });

    it('refuses bad input with messages that name the fix', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{}, 'name is required'],
        [{ name: 'has space' }, 'name is required'],
        [{ name: 'acc_lookslikeanid' }, 'not starting with "acc_"'],
        [{ name: 'acme', email: 'nope' }, 'email must look like name@example.com'],
        [
          { name: 'acme', tiers: 'free,platinum' },
          'tiers must be among the configured tiers: free, growth, enterprise (unknown: platinum)',
        ],
        [{ name: 'acme', tiers: 'free', defaultTier: 'growth' }, 'default tier "growth" must be one of the account\'s tiers: free'],
      ];
      for (const [input, message] of cases) {
        const err = await rejection(service.create(input));
        expect(err, JSON.stringify(input)).to.be.instanceOf(AccountInputError);
        expect(err.message).to.contain(message);
      }
      await service.create({ name: 'acme' });
      expect((await rejection(service.create({ name: 'ACME' }))).message).to.contain('already exists');
    });

    it('adopts keys that carry the new name only when asked', async () => {
      const ks = new KeyService(keys, TIERS, KEY_RULES);
      const { record } = await ks.create({ account: 'acme', tier: 'free' });
      const err = await rejection(service.create({ name: 'acme' }));
      expect(err.message).to.equal(
        '1 existing key(s) carry the account "acme": add --adopt-keys to make them this account\'s, or choose another name',
      );
      const { account, adopted } = await service.create({ name: 'acme' }, { adoptKeys: true });
      expect(adopted).to.equal(1);
      expect((await keys.get(record.id))?.account).to.equal(account.id);
      expect((await service.keysOf(account)).map((k) => k.id)).to.deep.equal([record.id]);
    });
  });

  describe('keys given an account', () => {
    it('carry the account’s id for its id or name, free-form strings as they are, and never a deleted account', async () => {
      const { account } = await service.create({ name: 'acme' });
      const ks = new KeyService(keys, TIERS, KEY_RULES, service.resolveForKeys);
      expect((await ks.create({ account: 'acme', tier: 'free' })).record.account).to.equal(account.id);
      expect((await ks.create({ account: account.id, tier: 'free' })).record.account).to.equal(account.id);
      expect((await ks.create({ account: 'legacy-customer', tier: 'free' })).record.account).to.equal('legacy-customer');
      expect((await ks.list({ account: 'acme' })).map((k) => k.account)).to.deep.equal([account.id, account.id]);
      await service.setState('acme', 'delete');
      expect(await rejection(ks.create({ account: 'acme', tier: 'free' }))).to.be.instanceOf(KeyInputError);
      const after = await ks.list({ account: 'acme' });
      expect(after).to.have.length(2);
      expect(after.every((k) => k.revokedAt !== undefined)).to.equal(true);
    });
  });

  describe('sign-in tokens', () => {
    it('work once, and only their digest is stored', async () => {
      await service.create({ name: 'acme' });
      const { token, expiresAt } = await service.issueToken('acme');
      expect(token).to.match(/^nrs_[A-Za-z0-9]{32}$/);
      expect(Date.parse(expiresAt) - clock).to.equal(15 * MINUTE);
      const file = await readFile(store.path, 'utf8');
      expect(file).to.not.contain(token);
      expect(file).to.contain(hashKey(token));
      const opened = await service.signIn(token);
      expect(opened?.account?.name).to.equal('acme');
      expect(await service.signIn(token)).to.equal(undefined);
    });

    it('expire after their lifetime (default, or --ttl within 1 minute to 7 days)', async () => {
      await service.create({ name: 'acme' });
      const a = await service.issueToken('acme');
      const b = await service.issueToken('acme', 2 * 60 * MINUTE);
      clock += 15 * MINUTE;
      expect(await service.signIn(a.token)).to.equal(undefined);
      expect(await service.signIn(b.token)).to.not.equal(undefined);
      expect((await rejection(service.issueToken('acme', 30_000))).message).to.contain('--ttl must be from 1m to 7d');
      expect(await rejection(service.issueToken('acme', 8 * 24 * 60 * MINUTE))).to.be.instanceOf(AccountInputError);
    });

    it('answer one way for malformed, unknown, used, and disabled accounts’ tokens', async () => {
      await service.create({ name: 'acme' });
      for (const bad of [undefined, 42, '', 'nrs_short', `nrs_${'A'.repeat(32)}`]) expect(await service.signIn(bad)).to.equal(undefined);
      const { token } = await service.issueToken('acme');
      await service.setState('acme', 'disable');
      expect(await service.signIn(token)).to.equal(undefined);
      expect((await rejection(service.issueToken('acme'))).message).to.contain('is disabled: enable it first');
      await service.setState('acme', 'enable');
      expect(await service.signIn((await service.issueToken('acme')).token)).to.not.equal(undefined);
      expect((await rejection(service.issueToken('nobody'))).message).to.contain('no account with id or name "nobody"');
    });
  });

  describe('sessions', () => {
    it('last their absolute lifetime, end on sign-out, and carry a CSRF token that is not the stored digest', async () => {
      await service.create({ name: 'acme' });
      const opened = await service.signIn((await service.issueToken('acme')).token);
      const id = opened?.sessionId as string;
      expect(id).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(opened?.csrfToken).to.equal(csrfTokenFor(id));
      expect(opened?.csrfToken).to.not.equal(hashKey(id));
      expect(await readFile(store.path, 'utf8')).to.not.contain(id);
      expect((await service.session(id, 'account'))?.account?.name).to.equal('acme');
      expect(await service.session(id, 'operator', 'admin-token-0123456789')).to.equal(undefined);
      clock += 12 * 60 * MINUTE - 1;
      expect(await service.session(id, 'account')).to.not.equal(undefined);
      clock += 1;
      expect(await service.session(id, 'account')).to.equal(undefined);

      const other = await service.signIn((await service.issueToken('acme')).token);
      expect(other?.csrfToken).to.not.equal(opened?.csrfToken);
      await service.signOut(other?.sessionId);
      expect(await service.session(other?.sessionId, 'account')).to.equal(undefined);
    });

    it('end when the account is disabled or deleted', async () => {
      await service.create({ name: 'acme' });
      const opened = await service.signIn((await service.issueToken('acme')).token);
      await service.setState('acme', 'disable');
      expect(await service.session(opened?.sessionId, 'account')).to.equal(undefined);
      await service.setState('acme', 'enable');
      expect(await service.session(opened?.sessionId, 'account')).to.not.equal(undefined);
      await service.setState('acme', 'delete');
      expect(await service.session(opened?.sessionId, 'account')).to.equal(undefined);
      expect((await rejection(service.setState('acme', 'enable'))).message).to.contain('is deleted');
    });

    it('open for the operator only with the admin token, and end when the token changes', async () => {
      const admin = 'admin-token-0123456789';
      expect(await service.signInOperator(undefined, admin)).to.equal(undefined);
      expect(await service.signInOperator(admin, 'wrong')).to.equal(undefined);
      expect(await service.signInOperator(admin, 42)).to.equal(undefined);
      const opened = await service.signInOperator(admin, admin);
      expect(opened?.session.kind).to.equal('operator');
      expect(await readFile(store.path, 'utf8')).to.not.contain(admin);
      expect(await service.session(opened?.sessionId, 'operator', admin)).to.not.equal(undefined);
      expect(await service.session(opened?.sessionId, 'account')).to.equal(undefined);
      expect(await service.session(opened?.sessionId, 'operator', 'a-new-admin-token-9876')).to.equal(undefined);
      expect(await service.session(opened?.sessionId, 'operator', undefined)).to.equal(undefined);
    });
  });
});
