// The Redis key store's per-account index: one account's keys are listed without
// reading every record, kept right when a key changes account (import, adoption),
// and built once for a store written before the index existed.

import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { KeyStore } from '../../../src/auth/key-store.js';
import { openRedisKeyStore } from '../../../src/auth/redis-key-store.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../../support/redis.js';

describe('Redis key store: keys by account', () => {
  const prefix = testPrefix();
  let redis: Redis;
  let store: KeyStore;

  before(async () => {
    redis = new Redis(REDIS_URL);
    store = await openRedisKeyStore(redis, { prefix });
  });
  after(async () => {
    await store.close();
    redis.disconnect();
    await deleteUnderPrefix(prefix);
  });

  it('lists one account’s keys from its own set, and follows a key given to another account', async () => {
    const a1 = (await store.create({ account: 'acc_a', tier: 'free' })).record;
    const a2 = (await store.create({ account: 'acc_a', tier: 'free' })).record;
    const b1 = (await store.create({ account: 'acc_b', tier: 'free' })).record;
    // Oldest first, then by id (two keys made in one millisecond); sets themselves have no order.
    const oldestFirst = [a1, a2].sort((x, y) => x.createdAt.localeCompare(y.createdAt) || (x.id < y.id ? -1 : 1));
    expect((await store.list({ account: 'acc_a' })).map((k) => k.id)).to.deep.equal(oldestFirst.map((k) => k.id));
    expect(await redis.smembers(`${prefix}ka:acc_b`)).to.deep.equal([b1.id]);
    await store.revoke(a2.id);
    const revoked = new Map((await store.list({ account: 'acc_a' })).map((k) => [k.id, k.revokedAt !== undefined]));
    expect(revoked).to.deep.equal(
      new Map([
        [a1.id, false],
        [a2.id, true],
      ]),
    );
    await store.put({ ...a1, account: 'acc_b' });
    expect((await store.list({ account: 'acc_a' })).map((k) => k.id)).to.deep.equal([a2.id]);
    expect((await store.list({ account: 'acc_b' })).map((k) => k.id).sort()).to.deep.equal([a1.id, b1.id].sort());
    expect(await store.list()).to.have.length(3);
  });

  it('builds the index once for keys written before it existed', async () => {
    const c1 = (await store.create({ account: 'acc_c', tier: 'free' })).record;
    // As an older gateway left it: records, but no per-account sets and no marker.
    const sets = await redis.keys(`${prefix}ka:*`);
    await redis.del(...sets, `${prefix}ka-index`);
    const fresh = await openRedisKeyStore(redis, { prefix });
    expect((await fresh.list({ account: 'acc_c' })).map((k) => k.id)).to.deep.equal([c1.id]);
    expect(await redis.get(`${prefix}ka-index`)).to.equal('1');
    expect((await fresh.list({ account: 'acc_a' })).length).to.equal(1);
  });
});
