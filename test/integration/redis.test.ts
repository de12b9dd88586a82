// Scale-out through a real Redis (127.0.0.1:6379) as the hot state, beside one SQLite
// record: two gateway instances hold one limit, spending leases of tokens taken from Redis (the default), see each other's
// revocations and add up usage; a quota is exact in total, what a lease did not spend
// goes back when it ends or its instance closes; with Redis cut away each failure
// policy behaves as promised, and both recover when it returns.

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { Gateway } from '../../src/app/gateway.js';
import { get, L1_FULL_AND_ARCHIVE, redisHot, rpc, startStack, storeYaml, type ChainSpec, type Stack } from '../support/harness.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { lastLine, runCli } from '../support/cli.js';
import { RpcSocket, refusal, wsUrl } from '../support/ws-client.js';
import { deleteUnderPrefix } from '../support/redis.js';
import { until, untilDefined } from '../support/until.js';

const CHAINS: readonly ChainSpec[] = [L1_FULL_AND_ARCHIVE];
const TIERS = `
  shared: { rate: 20, burst: 1 }
  enterprise: { rate: unlimited, archive: true }
  onesocket: { rate: unlimited, wsConnections: 1 }
  leased: { rate: 100, burst: 20 }
  quota: { rate: unlimited, daily: 40 }
`;
const CALL = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };

describe('scale-out through Redis', function () {
  this.timeout(30_000);
  const prefix = `nrtest:${randomBytes(4).toString('hex')}:`;
  let clock = Date.now();
  let stack: Stack;
  let other: Gateway;

  before(async () => {
    stack = await startStack({
      chains: CHAINS,
      tiers: TIERS,
      now: () => clock,
      // A generous timeout: a Redis call timing out on a loaded machine would fall back to local limits (fail-open), by design looser.
      hotYaml: redisHot(prefix, 'timeoutMs: 3000, instances: 2'),
    });
    other = await stack.startAnother();
  });
  after(async () => {
    await stack.close();
    await deleteUnderPrefix(prefix);
  });

  const callOn = (gw: Gateway, key: string) => rpc(`${gw.url}/l1`, CALL, { apikey: key });
  /** Calls admitted per chain as the shared store has them, once leases have ended and been written. */
  const settledCalls = async (id: string, calls: number): Promise<number> => {
    // Leases end by the (injected) clock; the sweep that writes them back runs every leaseMs.
    clock += 1_000;
    let total = 0;
    // Not there in time: the caller's expectation shows the count.
    await until(async () => (total = (await other.services.bundle.limiter.usage(id)).reduce((n, r) => n + r.calls, 0)) === calls, {
      what: `${calls} calls are written`,
      timeoutMs: 2_000,
    }).catch(() => undefined);
    return total;
  };
  /** Calls through `gw` until one is refused: how many were admitted. */
  const untilRefused = async (gw: Gateway, key: string): Promise<number> => {
    let admitted = 0;
    for (;;) {
      const res = await callOn(gw, key);
      if (res.status !== 200) {
        expect(res.status).to.equal(429);
        return admitted;
      }
      admitted++;
    }
  };

  it('holds one rate limit across two instances', async () => {
    const { value } = await stack.createKey('shared');
    const start = clock;
    let allowed = 0;
    // 40 calls per second for 5 simulated seconds, alternating instances, against 20/s.
    for (let i = 0; i < 200; i++) {
      clock = start + i * 25;
      const res = await callOn(i % 2 === 0 ? stack.gateway : other, value);
      if (res.status === 200) allowed++;
      else expect(res.status).to.equal(429);
    }
    expect(allowed).to.be.within(100 * 0.95, 100 * 1.05 + 1);
  });

  it('holds a key to its limit within 5% across two instances spending leases', async function () {
    // 600 calls: slow on a loaded machine.
    this.timeout(90_000);
    const { value } = await stack.createKey('leased');
    const start = clock;
    let allowed = 0;
    // 300 calls per second for 2 simulated seconds, alternating instances, against 100/s with a burst of 20.
    for (let i = 0; i < 600; i++) {
      clock = start + Math.floor((i * 10) / 3);
      const res = await callOn(i % 2 === 0 ? stack.gateway : other, value);
      if (res.status === 200) {
        allowed++;
        expect(res.headers.get('ratelimit-limit')).to.equal('20');
        expect(Number(res.headers.get('ratelimit-remaining'))).to.be.within(0, 20);
      } else expect(res.status).to.equal(429);
    }
    const ideal = 100 * 2 + 20;
    expect(allowed).to.be.within(ideal * 0.95, ideal * 1.05);
  });

  it('keeps a daily quota exact across two instances: what leases held goes back when they end', async () => {
    const { value, id } = await stack.createKey('quota');
    let admitted = 0;
    let refusedInARow = 0;
    for (let i = 0; i < 200 && refusedInARow < 10; i++) {
      clock += 5;
      const res = await callOn(i % 2 === 0 ? stack.gateway : other, value);
      if (res.status === 200) {
        admitted++;
        refusedInARow = 0;
      } else {
        expect(res.status).to.equal(429);
        refusedInARow++;
      }
    }
    expect(admitted).to.be.within(36, 40);
    expect(await settledCalls(id, admitted)).to.equal(admitted);
    // Whatever a lease still held is back: the quota's last calls are there to take, and no more.
    admitted += await untilRefused(stack.gateway, value);
    expect(admitted).to.equal(40);
    expect(await settledCalls(id, 40)).to.equal(40);
  });

  it('gives back what an instance held when it closes', async () => {
    const third = await stack.startAnother();
    const { value, id } = await stack.createKey('quota');
    for (let i = 0; i < 3; i++) expect((await callOn(third, value)).status).to.equal(200);
    await third.close();
    // Its usage is written and its unspent tokens are free for the other instances.
    expect((await other.services.bundle.limiter.usage(id)).map((r) => r.calls)).to.deep.equal([3]);
    expect(3 + (await untilRefused(other, value))).to.equal(40);
  });

  it('refuses a revoked key on the next request while it holds a lease, and on the other instance within a second', async () => {
    const { value, id } = await stack.createKey('enterprise');
    expect((await callOn(stack.gateway, value)).status).to.equal(200);
    expect((await callOn(other, value)).status).to.equal(200);
    await stack.gateway.keys.revoke(id);
    expect((await callOn(stack.gateway, value)).status).to.equal(401);
    await until(async () => (await callOn(other, value)).status === 401, { what: 'the other instance refuses it', timeoutMs: 1_000 });
  });

  it('holds a key to its WebSocket connection cap across instances, and frees the slot on close', async () => {
    const { value, id } = await stack.createKey('onesocket');
    const s = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, { headers: { apikey: value } });
    const refused = await refusal(`${wsUrl(other.url)}/l1`, { apikey: value });
    expect(refused.status).to.equal(429);
    await s.close();
    const t = await untilDefined(() => RpcSocket.open(`${wsUrl(other.url)}/l1`, { headers: { apikey: value } }).catch(() => undefined), {
      what: 'the other instance takes the freed slot',
    });
    // A revocation through one instance closes the socket held on the other.
    await stack.gateway.keys.revoke(id);
    expect((await t.closed).code).to.equal(1008);
  });

  it('adds up usage from both instances', async () => {
    clock += 60_000;
    const { value, id } = await stack.createKey('enterprise');
    for (let i = 0; i < 3; i++) await callOn(stack.gateway, value);
    for (let i = 0; i < 4; i++) await callOn(other, value);
    // Calls spent from a lease are written when it ends.
    expect(await settledCalls(id, 7)).to.equal(7);
    const rows = await other.services.bundle.limiter.usage(id);
    expect(rows.map((r) => [r.chain, r.calls])).to.deep.equal([['l1', 7]]);
  });

  it('moves keys between records without values', async () => {
    const file = `${stack.dir}/other.yaml`;
    const { writeFile, readFile } = await import('node:fs/promises');
    const redisText = await readFile(stack.configFile, 'utf8');
    await writeFile(file, redisText.replace(/^store: .*$/m, `store: ${storeYaml(`${stack.dir}/exported.db`)}`));
    const created = await runCli(['keys', 'create', '--config', file, '--account', 'moved', '--tier', 'enterprise']);
    const value = lastLine(created.stdout);
    const exported = await runCli(['keys', 'export', '--config', file]);
    expect(exported.code).to.equal(0);
    expect(exported.stdout).to.not.contain(value);
    await writeFile(`${stack.dir}/keys.jsonl`, exported.stdout);
    const imported = await runCli(['keys', 'import', `${stack.dir}/keys.jsonl`, '--config', stack.configFile]);
    expect(imported.stderr).to.equal('');
    expect(imported.stdout).to.contain('imported 1 keys into the sqlite record');
    expect((await callOn(other, value)).status).to.equal(200);
  });

  describe('when Redis goes away', () => {
    const proxy = new TcpProxy('127.0.0.1', 6379);
    let open: Stack;
    let closed: Stack;
    let keyOpen: string;
    let keyClosed: string;

    before(async () => {
      await proxy.start();
      const hot = (policy: string) =>
        `{ kind: redis, url: "redis://127.0.0.1:${proxy.port}", prefix: "${prefix}", timeoutMs: 1000, onFailure: ${policy}, instances: 2, leaseMs: 50 }`;
      open = await startStack({ chains: CHAINS, tiers: TIERS, hotYaml: hot('fail-open') });
      closed = await startStack({ chains: CHAINS, tiers: TIERS, hotYaml: hot('fail-closed') });
      keyOpen = open.key;
      keyClosed = closed.key;
      // Both keys are cached now.
      expect((await callOn(open.gateway, keyOpen)).status).to.equal(200);
      expect((await callOn(closed.gateway, keyClosed)).status).to.equal(200);
    });
    after(async () => {
      await proxy.close();
      await open.close();
      await closed.close();
    });

    it('fail-open keeps serving with local limits; fail-closed answers 503; neither crashes', async () => {
      await proxy.cut();
      // Tokens already leased are spent whatever happens to Redis: the policy applies once the lease ends.
      await until(async () => (await callOn(closed.gateway, keyClosed)).status === 503, { what: 'fail-closed refuses' });
      for (let i = 0; i < 5; i++) {
        expect((await callOn(open.gateway, keyOpen)).status).to.equal(200);
        const refused = await callOn(closed.gateway, keyClosed);
        expect(refused.status).to.equal(503);
        expect((refused.json as { error: { code: number } }).error.code).to.equal(-32603);
      }
      expect((await get(open.admin('/metrics'))).text).to.match(/noderouter_store_up 0/);
      expect((await get(closed.admin('/health/ready'))).status).to.equal(503);
      expect((await get(open.admin('/health/ready'))).status).to.equal(200);
    });

    it('reads keys from the record while Redis is away: a key made now works, one revoked now is refused', async () => {
      const made = await open.createKey('enterprise');
      expect((await callOn(open.gateway, made.value)).status).to.equal(200);
      await open.gateway.keys.revoke(made.id);
      expect((await callOn(open.gateway, made.value)).status).to.equal(401);
    });

    it('recovers by itself when Redis returns', async () => {
      await proxy.restore();
      await until(async () => (await callOn(closed.gateway, keyClosed)).status === 200, { what: 'fail-closed serves again', everyMs: 50 });
      expect((await get(closed.admin('/health/ready'))).status).to.equal(200);
      expect((await get(open.admin('/metrics'))).text).to.match(/noderouter_store_up 1/);
    });
  });
});
