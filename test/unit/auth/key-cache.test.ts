// The key cache in front of real stores: unknown keys live in a small cache of their
// own (a flood of random keys neither reaches the store nor evicts a valid key), a
// revocation announced over pub/sub is refused even while Redis commands fail under
// fail-open, and a lookup that raced a change is answered but never cached.

import { expect } from 'chai';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFileKeyStore } from '../../../src/auth/file-key-store.js';
import { KeyCache } from '../../../src/auth/key-cache.js';
import { hashKey } from '../../../src/auth/key-format.js';
import type { KeyMatch, KeyStore, StoreChange } from '../../../src/auth/key-store.js';
import { openRedisKeyStore } from '../../../src/auth/redis-key-store.js';
import { GatewayError } from '../../../src/errors.js';
import { RedisConnection } from '../../../src/store/redis-connection.js';
import { deleteUnderPrefix, REDIS_URL, testPrefix } from '../../support/redis.js';

/** The error code a lookup ends with, or 'ok'. */
async function outcome(cache: KeyCache, key: string): Promise<string> {
  try {
    await cache.lookup(key);
    return 'ok';
  } catch (err) {
    return err instanceof GatewayError ? err.code : String(err);
  }
}

/** Counts what reaches the store (the real one underneath). */
function counted(store: KeyStore): { store: KeyStore; finds: () => number } {
  let n = 0;
  const wrapped = Object.create(store) as KeyStore;
  wrapped.findByHash = (hash) => {
    n++;
    return store.findByHash(hash);
  };
  wrapped.onChange = (l) => store.onChange(l);
  return { store: wrapped, finds: () => n };
}

describe('key cache', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'noderouter-keycache-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('keeps a valid key cached through a flood of random keys, which each reach the store once at most', async () => {
    const real = await openFileKeyStore(join(dir, 'keys.json'));
    const { store, finds } = counted(real);
    let hits = 0;
    const cache = new KeyCache(
      store,
      { ttlMs: 60_000, maxEntries: 100, negativeTtlMs: 60_000, negativeMaxEntries: 50 },
      { hit: () => hits++ },
    );
    const { value } = await real.create({ account: 'acme', tier: 'free' });
    expect(await outcome(cache, value)).to.equal('ok');
    expect(finds()).to.equal(1);
    const random = Array.from({ length: 1_000 }, () => `nrk_${randomBytes(24).toString('base64url')}`);
    for (const k of random) expect(await outcome(cache, k)).to.equal('INVALID_KEY');
    expect(finds()).to.equal(1 + random.length);
    // The last random keys are remembered as unknown, within their own bound.
    expect(cache.unknownSize).to.equal(50);
    expect(await outcome(cache, random[random.length - 1] as string)).to.equal('INVALID_KEY');
    expect(finds()).to.equal(1 + random.length);
    // The valid key is still a hit: no store call.
    const before = hits;
    expect(await outcome(cache, value)).to.equal('ok');
    expect(finds()).to.equal(1 + random.length);
    expect(hits).to.equal(before + 1);
    expect(cache.size).to.equal(1);
    await real.close();
  });

  it('answers a lookup that raced a change without caching it, and refuses one that raced a revocation', async () => {
    const real = await openFileKeyStore(join(dir, 'keys.json'));
    const { value, record } = await real.create({ account: 'acme', tier: 'free' });
    const listeners: Array<(c: StoreChange) => void> = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    // A store whose first read is slow: the change arrives while it is in flight.
    const slow = Object.create(real) as KeyStore;
    let finds = 0;
    slow.findByHash = async (hash): Promise<KeyMatch | undefined> => {
      const m = await real.findByHash(hash);
      if (finds++ === 0) await gate;
      return m;
    };
    slow.onChange = (l) => listeners.push(l);
    const cache = new KeyCache(slow, { ttlMs: 60_000, maxEntries: 10, negativeTtlMs: 60_000 });
    const first = outcome(cache, value);
    for (const l of listeners) l({ hashes: [record.hash], invalid: [record.hash] });
    release();
    expect(await first).to.equal('INVALID_KEY');
    // Nothing was cached from the raced read: the next lookup asks the store again.
    expect(await outcome(cache, value)).to.equal('ok');
    expect(finds).to.equal(2);
    await real.close();
  });

  describe('a store that fails', () => {
    /** The real store underneath, failing the next `failures` asks (a timed-out command). */
    function flaky(store: KeyStore): { store: KeyStore; fail: (n: number) => void; finds: () => number } {
      let failures = 0;
      let n = 0;
      const wrapped = Object.create(store) as KeyStore;
      wrapped.findByHash = (hash) => {
        n++;
        if (failures > 0) {
          failures--;
          return Promise.reject(new Error('Command timed out'));
        }
        return store.findByHash(hash);
      };
      wrapped.onChange = (l) => store.onChange(l);
      return { store: wrapped, fail: (k) => (failures = k), finds: () => n };
    }

    it('asks again at once when one ask fails, so a command timed out by a stalled loop costs no refusal', async () => {
      const real = await openFileKeyStore(join(dir, 'keys.json'));
      const { store, fail, finds } = flaky(real);
      const cache = new KeyCache(store, { ttlMs: 60_000, maxEntries: 100, negativeTtlMs: 60_000, onStoreError: 'fail-closed' });
      const { value } = await real.create({ account: 'acme', tier: 'free' });
      fail(1);
      expect(await outcome(cache, value)).to.equal('ok');
      fail(1);
      expect(await outcome(cache, `nrk_${randomBytes(16).toString('hex')}`)).to.equal('INVALID_KEY');
      expect(finds()).to.equal(4);
      await real.close();
    });

    it('under fail-open refuses a key it last found unknown as unknown (401), and a key it never saw as unavailable', async () => {
      const real = await openFileKeyStore(join(dir, 'keys.json'));
      const { store, fail } = flaky(real);
      let now = 1_000_000;
      const options = { ttlMs: 1_000, maxEntries: 100, negativeTtlMs: 1_000 };
      const open = new KeyCache(store, { ...options, onStoreError: 'fail-open' }, {}, () => now);
      const closed = new KeyCache(store, { ...options, onStoreError: 'fail-closed' }, {}, () => now);
      const unknown = `nrk_${'0'.repeat(32)}`;
      expect(await outcome(open, unknown)).to.equal('INVALID_KEY');
      expect(await outcome(closed, unknown)).to.equal('INVALID_KEY');
      // Past the negative TTL, both asks failing: the store is away.
      now += 5_000;
      fail(4);
      expect(await outcome(open, unknown)).to.equal('INVALID_KEY');
      expect(await outcome(closed, unknown)).to.equal('UNAVAILABLE');
      fail(2);
      expect(await outcome(open, `nrk_${'1'.repeat(32)}`)).to.equal('UNAVAILABLE');
      await real.close();
    });
  });

  describe('fail-open with Redis commands failing', () => {
    const prefix = testPrefix();
    let writer: Redis;
    let readerConnection: RedisConnection;
    let stores: KeyStore[] = [];

    before(() => {
      writer = new Redis(REDIS_URL);
      readerConnection = new RedisConnection({ servers: { kind: 'url', url: REDIS_URL }, timeoutMs: 500 });
    });
    after(async () => {
      for (const s of stores) await s.close().catch(() => undefined);
      stores = [];
      writer.disconnect();
      await readerConnection.close();
      await deleteUnderPrefix(prefix);
    });

    it('refuses a key whose revocation pub/sub delivered, and keeps serving the other cached keys', async () => {
      await readerConnection.ready(2_000);
      const a = await openRedisKeyStore(writer, { prefix });
      // The gateway's instance: its commands on one connection, the announcements on another.
      const b = await openRedisKeyStore(readerConnection.client, { prefix, live: { url: REDIS_URL, timeoutMs: 500 } });
      stores = [a, b];
      let now = Date.now();
      const cache = new KeyCache(b, { ttlMs: 1_000, maxEntries: 100, negativeTtlMs: 1_000, onStoreError: 'fail-open' }, {}, () => now);
      const revoked = await a.create({ account: 'acme', tier: 'free' });
      const kept = await a.create({ account: 'acme', tier: 'free' });
      expect(await outcome(cache, revoked.value)).to.equal('ok');
      expect(await outcome(cache, kept.value)).to.equal('ok');
      // Past the TTL, with the command connection gone: every lookup must ask, and asking fails.
      now += 5_000;
      readerConnection.client.disconnect(false);
      const delivered = new Promise<StoreChange>((resolve) => b.onChange(resolve));
      await a.revoke(revoked.record.id);
      expect(await delivered).to.deep.equal({ hashes: [hashKey(revoked.value)], invalid: [hashKey(revoked.value)] });
      expect(await outcome(cache, revoked.value)).to.equal('INVALID_KEY');
      expect(await outcome(cache, kept.value)).to.equal('ok');
      // A key it never saw cannot be vouched for: unavailable, not admitted.
      const unseen = await a.create({ account: 'acme', tier: 'free' });
      expect(await outcome(cache, unseen.value)).to.equal('UNAVAILABLE');
    });
  });
});
