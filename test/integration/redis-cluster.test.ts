// The hot state on a Redis Cluster (issue #32): three masters of the test's own, two
// gateway instances on one SQLite record. Limits, leases, revocation, WebSocket slots
// and usage are exact across the two as on a single Redis (test/integration/redis.test.ts
// holds the same scenarios there): each key's state lives in one slot, its account's
// hash tag, so every script runs whole on one master.

import { expect } from 'chai';
import type { Gateway } from '../../src/app/gateway.js';
import { get, L1_FULL_AND_ARCHIVE, rpc, startStack, type Stack } from '../support/harness.js';
import { OwnCluster } from '../support/redis-ha.js';
import { until, untilDefined } from '../support/until.js';
import { RpcSocket, refusal, wsUrl } from '../support/ws-client.js';

const TIERS = `
  shared: { rate: 20, burst: 1 }
  enterprise: { rate: unlimited, archive: true }
  onesocket: { rate: unlimited, wsConnections: 1 }
  quota: { rate: unlimited, daily: 40 }
`;
const CALL = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };
const PREFIX = 'nrcl:';
const TOKEN = 'cluster-admin-token';

describe('the hot state on a three-master Redis Cluster, two instances', function () {
  this.timeout(60_000);
  let cluster: OwnCluster;
  let clock = Date.now();
  let stack: Stack;
  let other: Gateway;

  before(async () => {
    cluster = await OwnCluster.start();
    stack = await startStack({
      chains: [L1_FULL_AND_ARCHIVE],
      tiers: TIERS,
      now: () => clock,
      adminToken: TOKEN,
      hotYaml: `{ kind: redis, cluster: ${cluster.yaml}, prefix: "${PREFIX}", timeoutMs: 3000, onFailure: fail-closed, instances: 2 }`,
    });
    other = await stack.startAnother();
  });
  after(async () => {
    await stack?.close();
    await cluster?.close();
  });

  const callOn = (gw: Gateway, key: string) => rpc(`${gw.url}/l1`, CALL, { apikey: key });
  const settledCalls = async (id: string, calls: number): Promise<number> => {
    clock += 1_000;
    let total = 0;
    await until(async () => (total = (await other.services.bundle.limiter.usage(id)).reduce((n, r) => n + r.calls, 0)) === calls, {
      what: `${calls} calls are written`,
      timeoutMs: 2_000,
    }).catch(() => undefined);
    return total;
  };
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

  it('keeps a daily quota exact across two instances spending leases, for keys whose state lies on different masters', async () => {
    const keys = await Promise.all([0, 1, 2, 3].map(() => stack.createKey('quota')));
    for (const { value, id } of keys) {
      let admitted = 0;
      for (let i = 0; i < 30; i++) {
        clock += 5;
        if ((await callOn(i % 2 === 0 ? stack.gateway : other, value)).status === 200) admitted++;
      }
      expect(admitted).to.equal(30);
      expect(await settledCalls(id, 30)).to.equal(30);
      admitted += await untilRefused(stack.gateway, value);
      expect(admitted).to.equal(40);
      expect(await settledCalls(id, 40)).to.equal(40);
    }
    const perNode = await cluster.keysPerNode(PREFIX);
    expect(perNode.filter((n) => n > 0).length, `keys per master: ${perNode.join(', ')}`).to.be.greaterThan(1);
  });

  it('refuses a revoked key on the next request, and on the other instance within a second', async () => {
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
    expect((await refusal(`${wsUrl(other.url)}/l1`, { apikey: value })).status).to.equal(429);
    await s.close();
    const t = await untilDefined(() => RpcSocket.open(`${wsUrl(other.url)}/l1`, { headers: { apikey: value } }).catch(() => undefined), {
      what: 'the other instance takes the freed slot',
    });
    await stack.gateway.keys.revoke(id);
    expect((await t.closed).code).to.equal(1008);
  });

  it("carries a node's cordon to the other instance at once (its own re-read is 30 s away)", async () => {
    const state = async (gw: Gateway): Promise<string | undefined> => {
      const { chains } = (await get(`${gw.adminUrl}/health/chains`)).json as {
        chains: Array<{ chain: string; nodes: Array<{ name: string; state: string }> }>;
      };
      return chains.find((c) => c.chain === 'l1')?.nodes.find((n) => n.name === 'l1-full-1')?.state;
    };
    const res = await fetch(`${stack.gateway.adminUrl}/admin/nodes/l1/l1-full-1/cordon`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ reason: 'cluster test' }),
    });
    expect(res.status).to.equal(200);
    await until(async () => (await state(other)) === 'cordoned', { what: 'the other instance holds the node', timeoutMs: 1_000 });
  });

  it('adds up usage from both instances', async () => {
    clock += 60_000;
    const { value, id } = await stack.createKey('enterprise');
    for (let i = 0; i < 3; i++) await callOn(stack.gateway, value);
    for (let i = 0; i < 4; i++) await callOn(other, value);
    expect(await settledCalls(id, 7)).to.equal(7);
    expect((await stack.gateway.services.bundle.limiter.usage(id)).map((r) => [r.chain, r.calls])).to.deep.equal([['l1', 7]]);
  });
});
