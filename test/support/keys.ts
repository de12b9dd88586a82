// Keys for unit tests of the transports: a real file key store in a temp dir, and the
// key cache and identifier the gateway puts in front of it, on a bench's access and
// metrics (keys are on the bench's tier `t`). Lookups that reach the store are counted,
// and held while a test says so (a client that leaves meanwhile).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFileKeyStore } from '../../src/auth/file-key-store.js';
import { KeyCache } from '../../src/auth/key-cache.js';
import type { KeyRepository } from '../../src/auth/key-repository.js';
import type { KeyMatch, KeyStore } from '../../src/auth/key-store.js';
import { TrustedProxies } from '../../src/exec/client-address.js';
import { Identifier } from '../../src/exec/identify.js';
import type { Bench } from './chain.js';

export interface TestKeys {
  readonly store: KeyRepository;
  readonly cache: KeyCache;
  readonly identifier: Identifier;
  /** Lookups that reached the store. */
  readonly lookups: number;
  /** Hold the lookups that reach the store from now on, until the returned function is called. */
  hold(): () => void;
  /** Fail the lookups that reach the store from now on (the store away), until the returned function is called. */
  away(): () => void;
  /** A key of the bench's tier on `account`, permitted on the chains `chains` names. */
  create(account?: string, chains?: readonly string[]): Promise<{ id: string; value: string }>;
  close(): Promise<void>;
}

export async function testKeys(b: Bench, proxies: () => TrustedProxies = () => new TrustedProxies([])): Promise<TestKeys> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-keys-'));
  const store = await openFileKeyStore(join(dir, 'keys.json'));
  let lookups = 0;
  let gate: Promise<void> | undefined;
  let gone = false;
  const counted = Object.create(store) as KeyStore;
  counted.findByHash = async (hash): Promise<KeyMatch | undefined> => {
    lookups++;
    await gate;
    if (gone) throw new Error('the key store is away');
    return store.findByHash(hash);
  };
  counted.onChange = (l) => store.onChange(l);
  // Unknown keys are asked of the store every time: tests count what reaches it.
  const cache = new KeyCache(counted, { ttlMs: 60_000, maxEntries: 100, negativeTtlMs: 0 });
  const identifier = new Identifier({
    keys: cache,
    access: b.access,
    now: Date.now,
    trustedProxies: proxies,
    metrics: b.metrics,
    touch: () => undefined,
  });
  return {
    store,
    cache,
    identifier,
    get lookups() {
      return lookups;
    },
    hold() {
      let release: () => void = () => undefined;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
    away() {
      gone = true;
      return () => {
        gone = false;
      };
    },
    async create(account = 'acct-1', chains = ['*']) {
      const { record, value } = await store.create({ account, tier: 't', permissions: { chains } });
      return { id: record.id, value };
    },
    async close() {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
