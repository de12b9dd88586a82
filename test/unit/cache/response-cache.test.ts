// A chain endpoint's response cache (src/cache/response-cache.ts): keys of one chain
// never meet another's, lookups are reported (at once when the store is in memory), identical calls in flight share one
// run (failures too, then forgotten), and a head seen again with another hash evicts
// the heights a reorg may have reached.

import { expect } from 'chai';
import { MemoryCacheStore, type CachedAnswer } from '../../../src/cache/cache-store.js';
import { REORG_WINDOW, ResponseCache } from '../../../src/cache/response-cache.js';

const answer = (body: string): CachedAnswer => ({ status: 200, body });

describe('response cache (src/cache/response-cache.ts)', () => {
  let store: MemoryCacheStore;
  let lookups: string[];
  let coalesced: number;
  let cache: ResponseCache;

  beforeEach(() => {
    store = new MemoryCacheStore(1 << 20, 1 << 16);
    lookups = [];
    coalesced = 0;
    cache = new ResponseCache('l1', store, {
      lookup: (chain, hit) => lookups.push(`${chain} ${hit ? 'hit' : 'miss'}`),
      coalesced: () => coalesced++,
    });
  });

  it('keys answers by chain, so two endpoints sharing a store never answer each other’s calls', async () => {
    const other = new ResponseCache('l2', store);
    cache.set(cache.key('eth_chainId\u0000null'), answer('"0x1"'), 60_000, undefined);
    expect(await cache.get(cache.key('eth_chainId\u0000null'))).to.deep.equal(answer('"0x1"'));
    expect(await other.get(other.key('eth_chainId\u0000null'))).to.equal(undefined);
    expect(lookups).to.deep.equal(['l1 hit']);
    await cache.get(cache.key('eth_blockNumber\u0000null'));
    expect(lookups).to.deep.equal(['l1 hit', 'l1 miss']);
  });

  it('answers a lookup in memory at once, without a promise (a hit takes no turn of the event loop)', () => {
    cache.set(cache.key('eth_chainId\u0000null'), answer('"0x1"'), 60_000, undefined);
    expect(cache.get(cache.key('eth_chainId\u0000null'))).to.deep.equal(answer('"0x1"'));
    expect(cache.get(cache.key('eth_blockNumber\u0000null'))).to.equal(undefined);
    expect(lookups).to.deep.equal(['l1 hit', 'l1 miss']);
  });

  it('runs identical calls in flight once, telling the one that ran from those that waited', async () => {
    let runs = 0;
    let finish: (v: string) => void = () => undefined;
    const run = () =>
      new Promise<string>((resolve) => {
        runs++;
        finish = resolve;
      });
    const first = cache.coalesce('k', run);
    const second = cache.coalesce('k', run);
    const elsewhere = cache.coalesce('j', () => Promise.resolve('j'));
    finish('answer');
    expect(await Promise.all([first, second, elsewhere])).to.deep.equal([
      { value: 'answer', leader: true },
      { value: 'answer', leader: false },
      { value: 'j', leader: true },
    ]);
    expect([runs, coalesced]).to.deep.equal([1, 1]);
    // Once settled, the next identical call runs again.
    expect(await cache.coalesce('k', () => Promise.resolve('again'))).to.deep.equal({ value: 'again', leader: true });
  });

  it('shares a failure with the calls that waited, then forgets it', async () => {
    let fail: (e: Error) => void = () => undefined;
    const first = cache.coalesce('k', () => new Promise<string>((_r, reject) => (fail = reject)));
    const second = cache.coalesce('k', () => Promise.resolve('never run'));
    fail(new Error('node down'));
    const outcomes = await Promise.allSettled([first, second]);
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error).message : 'fulfilled'))).to.deep.equal([
      'node down',
      'node down',
    ]);
    expect(await cache.coalesce('k', () => Promise.resolve('ok'))).to.deep.equal({ value: 'ok', leader: true });
  });

  describe('reorgs', () => {
    const keep = (height: number): string => {
      const key = cache.key(`block\u0000${height}`);
      cache.set(key, answer(String(height)), 60_000, height);
      return key;
    };
    const kept = async (height: number): Promise<boolean> => (await store.get(cache.key(`block\u0000${height}`))) !== undefined;

    it('evicts from the reorg window below a height seen again with another hash', async () => {
      const h = 1_000;
      for (const height of [h - REORG_WINDOW - 1, h - REORG_WINDOW, h - 1, h, h + 5]) keep(height);
      cache.observeHead(h - 1, '0xa');
      cache.observeHead(h, '0xb');
      // New heights and the same hash again are no reorg.
      cache.observeHead(h, '0xb');
      expect(await kept(h)).to.equal(true);
      cache.observeHead(h, '0xc');
      expect(await Promise.all([h - REORG_WINDOW - 1, h - REORG_WINDOW, h - 1, h, h + 5].map(kept))).to.deep.equal([
        true,
        false,
        false,
        false,
        false,
      ]);
    });

    it('forgets the heads above a reorged height, so the new branch’s heads are no reorg', async () => {
      cache.observeHead(10, '0xa');
      cache.observeHead(11, '0xb');
      cache.observeHead(10, '0xa2');
      keep(11);
      cache.observeHead(11, '0xb2');
      expect(await kept(11)).to.equal(true);
    });

    it('ignores heads without a hash', async () => {
      keep(5);
      cache.observeHead(5, '0xa');
      cache.observeHead(5, undefined);
      cache.observeHead(undefined, '0xb');
      expect(await kept(5)).to.equal(true);
    });
  });
});
