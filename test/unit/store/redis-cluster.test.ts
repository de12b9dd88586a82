// Every Redis path of the hot state on a real three-master cluster (redis-server
// processes of the test's own): the limiter's scripts (admit, leases given and given
// back, charges after the call, charged refusals, throttles), usage and error counts,
// WebSocket slots, the response cache and pub/sub. A script whose keys spanned slots
// would fail with CROSSSLOT, which fail-closed turns into a refusal and the fallback
// hook sees: none happens, the limits hold exactly, and the keys are spread over the
// masters (so the calls really cross nodes).

import { expect } from 'chai';
import { RedisCacheStore } from '../../../src/cache/cache-store.js';
import type { Payer } from '../../../src/quota/admission.js';
import { RedisConnectionSlots } from '../../../src/quota/redis-connection-slots.js';
import { RedisLimiter } from '../../../src/quota/redis-limiter.js';
import { RedisChannels } from '../../../src/store/redis-channels.js';
import { RedisConnection, type RedisServers } from '../../../src/store/redis-connection.js';
import { OwnCluster } from '../../support/redis-ha.js';
import { tierConfig } from '../../support/tiers.js';
import { until } from '../../support/until.js';

const START = Date.UTC(2026, 2, 10, 12, 0, 0);
const DAY = '2026-03-10';
const PREFIX = 'nrc:';

describe('the Redis hot state on a three-master cluster', function () {
  this.timeout(30_000);
  let cluster: OwnCluster;
  let servers: RedisServers;
  let connection: RedisConnection;
  const clock = START;
  const fallbacks: unknown[] = [];

  before(async () => {
    cluster = await OwnCluster.start();
    servers = { kind: 'cluster', nodes: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })), password: undefined };
    connection = new RedisConnection({ servers, timeoutMs: 2_000 });
    expect(await connection.ready(5_000)).to.equal(true);
  });
  after(async () => {
    await connection?.close();
    await cluster?.close();
  });
  afterEach(() => expect(fallbacks.map(String)).to.deep.equal([]));

  const limiter = (): RedisLimiter =>
    new RedisLimiter(connection.client, {
      prefix: PREFIX,
      onFailure: 'fail-closed',
      instances: 1,
      now: () => clock,
      onFallback: (err) => fallbacks.push(err),
    });
  const calls = async (l: RedisLimiter, id: string): Promise<number> => (await l.usage(id)).reduce((n, r) => n + r.calls, 0);

  it("holds a key's and its account's limits exactly, with every script, over keys spread on every master", async () => {
    const l = limiter();
    const tier = tierConfig({ rate: 1_000, burst: 1_000, daily: 10 }, { daily: 15 });
    // Six accounts of two keys each: their tags fall on different masters.
    const payers: Payer[] = [];
    for (let a = 0; a < 6; a++) for (let k = 0; k < 2; k++) payers.push({ id: `key-${a}-${k}`, account: `acct-${a}` });
    for (const p of payers.filter((x) => x.id.endsWith('-0'))) {
      let admitted = 0;
      for (let i = 0; i < 12; i++) if ((await l.admit(p, tier, 1, 'l1')).allowed) admitted++;
      expect(admitted, p.id).to.equal(10);
    }
    // The second key of each account has what the account's daily 15 leaves: 5, through a lease.
    for (const p of payers.filter((x) => x.id.endsWith('-1'))) {
      const lease = await l.lease(p, tier, DAY, 'l1', 1, 20, undefined);
      expect(lease.kind === 'granted' && lease.tokens, p.id).to.be.within(1, 5);
      const granted = lease.kind === 'granted' ? lease.tokens : 0;
      // Give it all back, counting 1 call spent; then the rest is there to take.
      const back = { payer: p, tier, day: DAY, unused: granted - 1, usage: new Map([['l1', { calls: 1, limited: 0 }]]) };
      await l.lease(p, tier, DAY, 'l1', 0, 0, back);
      let admitted = 1;
      for (let i = 0; i < 8; i++) if ((await l.admit(p, tier, 1, 'l1')).allowed) admitted++;
      expect(admitted, p.id).to.equal(5);
    }
    for (const p of payers) expect(await calls(l, p.id), p.id).to.equal(p.id.endsWith('-0') ? 10 : 5);
    const perNode = await cluster.keysPerNode(PREFIX);
    expect(perNode.filter((n) => n > 0).length, `keys per master: ${perNode.join(', ')}`).to.be.greaterThan(1);
  });

  it('charges after the call, charges refused calls and counts errors on the same slot as the key', async () => {
    const l = limiter();
    const tier = tierConfig({ rate: 10, burst: 5 }, { rate: 20, burst: 10 });
    const p: Payer = { id: 'key-charged', account: 'acct-charged' };
    expect((await l.admit(p, tier, 1, 'l1')).allowed).to.equal(true);
    l.charge(p, tier, 3, 'l1');
    expect((await l.chargeRefused(p, tier, 1, 'l1', 'invalid')).allowed).to.equal(true);
    l.countErrors(p.id, 'l1', 2);
    await until(
      async () => {
        const [row] = await l.usage(p.id);
        return row !== undefined && row.calls === 4 && row.errors === 2;
      },
      { what: 'the charge and the error count are written' },
    );
    // 1 + 3 + 1 of a burst of 5: the next call waits.
    expect((await l.admit(p, tier, 1, 'l1')).allowed).to.equal(false);
    expect(await l.throttle('acct-charged', 3_600, 1)).to.equal(0);
    expect(await l.throttle('acct-charged', 3_600, 1)).to.be.greaterThan(0);
  });

  it('holds WebSocket slots per key and frees them on close', async () => {
    const a = new RedisConnectionSlots(connection.client, {
      prefix: PREFIX,
      onFailure: 'fail-closed',
      instances: 2,
      onFallback: (e) => fallbacks.push(e),
    });
    const b = new RedisConnectionSlots(connection.client, {
      prefix: PREFIX,
      onFailure: 'fail-closed',
      instances: 2,
      onFallback: (e) => fallbacks.push(e),
    });
    for (const key of ['ws-1', 'ws-2', 'ws-3']) {
      expect(await a.acquire(key, `${key}-a`, 1)).to.equal(true);
      expect(await b.acquire(key, `${key}-b`, 1)).to.equal(false);
    }
    await a.close();
    for (const key of ['ws-1', 'ws-2', 'ws-3']) {
      await until(() => b.acquire(key, `${key}-b`, 1), { what: `${key}'s slot is free` });
    }
    await b.close();
  });

  it('caches answers over slots and evicts them by height', async () => {
    const cache = new RedisCacheStore(connection.client, PREFIX, 10_000, 60_000);
    const answer = (body: string) => ({ status: 200, body });
    for (let i = 0; i < 6; i++) cache.set('l1', `k${i}`, answer(`v${i}`), 60_000, 100 + i);
    await until(async () => (await cache.get('k5'))?.body === 'v5', { what: 'the entries are written' });
    await until(async () => (await Promise.all([0, 1, 2, 3, 4].map((i) => cache.get(`k${i}`)))).every((v) => v !== undefined), {
      what: 'every entry is written',
    });
    await cache.evictFrom('l1', 103);
    expect((await Promise.all([0, 1, 2, 3, 4, 5].map((i) => cache.get(`k${i}`)))).map((v) => v?.body)).to.deep.equal([
      'v0',
      'v1',
      'v2',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("carries one instance's announcements to another", async () => {
    const one = await RedisChannels.open(connection.client, servers, 2_000);
    const other = new RedisConnection({ servers, timeoutMs: 2_000 });
    await other.ready(5_000);
    const two = await RedisChannels.open(other.client, servers, 2_000);
    const heard: string[] = [];
    await two.listen(`${PREFIX}changes`, { message: (t) => heard.push(t), resync: () => undefined });
    await one.publish(`${PREFIX}changes`, { hashes: ['h1'] });
    await until(() => heard.length === 1, { what: 'the other instance hears it' });
    expect(JSON.parse(heard[0] ?? '{}'))
      .to.include({ origin: one.origin })
      .and.deep.include({ hashes: ['h1'] });
    await one.close();
    await two.close();
    await other.close();
  });
});
