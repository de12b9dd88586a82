// Where cached answers live (src/cache/cache-store.ts): in this process, bounded by
// bytes, with lifetimes and a height index for reorg eviction; and in a real Redis,
// under hashed keys with capped lifetimes, where every failure is a miss.

import { expect } from 'chai';
import { Redis } from 'ioredis';
import { MemoryCacheStore, RedisCacheStore, type CachedAnswer } from '../../../src/cache/cache-store.js';
import { REDIS_URL, deleteUnderPrefix, testPrefix } from '../../support/redis.js';
import { refusingUrl } from '../../support/rpc-node.js';
import { until } from '../../support/until.js';

const answer = (body: string): CachedAnswer => ({ status: 200, body });

describe('memory cache store (src/cache/cache-store.ts)', () => {
  it('gives back what it keeps, and keeps no entry over the entry cap', () => {
    const store = new MemoryCacheStore(1 << 20, 1_000);
    store.set('c', 'k', { status: 200, body: '"x"', contentType: 'application/json', headers: { 'x-h': '1' } }, 60_000, undefined);
    expect(store.get('k')).to.deep.equal({ status: 200, body: '"x"', contentType: 'application/json', headers: { 'x-h': '1' } });
    store.set('c', 'big', answer('x'.repeat(1_000)), 60_000, undefined);
    expect(store.get('big')).to.equal(undefined);
    expect(store.get('nothing')).to.equal(undefined);
  });

  it('stays within its byte bound by letting the least recently used entries go', () => {
    // Each entry of 100 characters counts 328 bytes: three fit in 1 000.
    const store = new MemoryCacheStore(1_000, 1_000);
    for (const k of ['a', 'b', 'c']) store.set('c', k, answer('x'.repeat(100)), 60_000, undefined);
    store.get('a');
    store.set('c', 'd', answer('x'.repeat(100)), 60_000, undefined);
    expect(['a', 'b', 'c', 'd'].map((k) => store.get(k) !== undefined)).to.deep.equal([true, false, true, true]);
    expect(store.bytes()).to.equal(984);
  });

  it('lets an entry go when its lifetime ends, and keeps an entry without end', async () => {
    const store = new MemoryCacheStore(1 << 20, 1_000);
    store.set('c', 'short', answer('1'), 1, undefined);
    store.set('c', 'forever', answer('2'), Infinity, undefined);
    await until(() => store.get('short') === undefined, { what: 'the 1 ms entry is gone' });
    expect(store.get('forever')).to.deep.equal(answer('2'));
  });

  it('evicts a chain’s entries at and above a height, leaving lower heights, other chains and height-free entries', () => {
    const store = new MemoryCacheStore(1 << 20, 1_000);
    store.set('c', 'c:99', answer('1'), 60_000, 99);
    store.set('c', 'c:100', answer('2'), 60_000, 100);
    store.set('c', 'c:150', answer('3'), 60_000, 150);
    store.set('c', 'c:any', answer('4'), 60_000, undefined);
    store.set('d', 'd:120', answer('5'), 60_000, 120);
    store.evictFrom('c', 100);
    expect(['c:99', 'c:100', 'c:150', 'c:any', 'd:120'].map((k) => store.get(k) !== undefined)).to.deep.equal([
      true,
      false,
      false,
      true,
      true,
    ]);
    store.evictFrom('nochain', 0);
  });

  it('indexes a key under the height it was last kept at', () => {
    const store = new MemoryCacheStore(1 << 20, 1_000);
    store.set('c', 'k', answer('old'), 60_000, 200);
    store.set('c', 'k', answer('new'), 60_000, 10);
    store.evictFrom('c', 100);
    expect(store.get('k')).to.deep.equal(answer('new'));
    store.set('c', 'j', answer('old'), 60_000, 10);
    store.set('c', 'j', answer('new'), 60_000, 200);
    store.evictFrom('c', 100);
    expect(store.get('j')).to.equal(undefined);
  });
});

describe('Redis cache store (src/cache/cache-store.ts)', () => {
  let redis: Redis;
  let prefix: string;
  let store: RedisCacheStore;

  beforeEach(() => {
    redis = new Redis(REDIS_URL);
    prefix = testPrefix();
    store = new RedisCacheStore(redis, prefix, 1_000, 60_000);
  });

  afterEach(async () => {
    await deleteUnderPrefix(prefix);
    redis.disconnect();
  });

  const stored = async (key: string): Promise<CachedAnswer | undefined> => {
    let v: CachedAnswer | undefined;
    await until(async () => (v = await store.get(key)) !== undefined, { what: `${key} is written` });
    return v;
  };

  it('keeps answers under hashed keys only, with lifetimes capped', async () => {
    store.set('c', 'c\u0000eth_getBalance\u0000["0xabc"]', answer('"0x1"'), Infinity, undefined);
    expect(await stored('c\u0000eth_getBalance\u0000["0xabc"]')).to.deep.equal(answer('"0x1"'));
    const keys = await redis.keys(`${prefix}*`);
    expect(keys).to.have.length(1);
    expect(keys[0]).to.match(new RegExp(`^${prefix}cache:[0-9a-f]{40}$`));
    const ttl = await redis.pttl(keys[0] as string);
    expect(ttl).to.be.within(1, 60_000);
  });

  it('keeps no entry over the entry cap', async () => {
    store.set('c', 'big', answer('x'.repeat(1_000)), 60_000, undefined);
    store.set('c', 'small', answer('1'), 60_000, undefined);
    await stored('small');
    expect(await store.get('big')).to.equal(undefined);
  });

  it('evicts a chain’s entries at and above a height', async () => {
    store.set('c', 'low', answer('1'), 60_000, 10);
    store.set('c', 'high', answer('2'), 60_000, 20);
    store.set('d', 'other', answer('3'), 60_000, 20);
    await stored('low');
    await stored('high');
    await stored('other');
    await store.evictFrom('c', 15);
    expect(await store.get('low')).to.deep.equal(answer('1'));
    expect(await store.get('high')).to.equal(undefined);
    expect(await store.get('other')).to.deep.equal(answer('3'));
  });

  it('takes every Redis failure for a miss, never an error', async () => {
    const url = (await refusingUrl()).replace('http', 'redis');
    const down = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    down.on('error', () => undefined);
    const broken = new RedisCacheStore(down, prefix, 1_000, 60_000);
    expect(await broken.get('k')).to.equal(undefined);
    broken.set('c', 'k', answer('1'), 60_000, 1);
    await broken.evictFrom('c', 0);
    expect(broken.bytes()).to.equal(0);
    down.disconnect();
  });
});
