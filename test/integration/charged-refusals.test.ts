// Requests that become no call still cost something: with a valid key, a malformed
// request (bad JSON, a wrong envelope, invalid items, JSON nested too deep, a body
// over the size limit) is charged against the key's and the account's rate and
// counted in usage as invalid, so a key flooding them meets 429 like any other;
// without a key they stay cheap 401s. WebSocket messages, REST (passthrough) and gRPC
// requests the same. And WebSocket
// caps per account as well as per key: connections and subscriptions over all of an
// account's keys, freed when a connection closes, held across instances through
// Redis and across the workers of one instance. Time is a frozen clock (in-process
// stacks): no limit refills while a test runs.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type WebSocket from 'ws';
import { SqliteDatabase } from '../../src/record/sqlite-database.js';
import { openSqliteKeyStore } from '../../src/record/sqlite-key-store.js';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import type { Gateway } from '../../src/app/gateway.js';
import { PARAMS, unary as grpcUnary, type Reply } from '../support/grpc-client.js';
import {
  configYaml,
  get,
  HUB_GRPC,
  L1_FULL_AND_ARCHIVE,
  redisHot,
  rpc,
  startStack,
  storeYaml,
  type ChainSpec,
  type Stack,
} from '../support/harness.js';
import { deleteUnderPrefix } from '../support/redis.js';
import { serve, type Served } from '../support/serve.js';
import { RpcSocket, refusal, wsUrl } from '../support/ws-client.js';
import { until } from '../support/until.js';

const TOKEN = 'test-admin-token-charged-0123456789';
const CHAINS: readonly ChainSpec[] = [L1_FULL_AND_ARCHIVE];
const TIERS = `
  five: { rate: 5, burst: 5, maxBatch: 3 }
  slow: { rate: 0.01, burst: 5 }
  capped: { rate: unlimited, wsConnections: 2, wsSubscriptions: 4, account: { wsConnections: 3, wsSubscriptions: 5 } }
  enterprise: { rate: unlimited, maxBatch: 1000, archive: true }
`;
const MAX_BODY = 4096;

/** The kinds of request the gateway cannot turn into a call, one of each in turn. */
const INVALID: ReadonlyArray<{ readonly what: string; readonly body: string; readonly status: number; readonly code: number }> = [
  { what: 'batch of invalid items', body: '[1,2,{"id":3}]', status: 400, code: -32600 },
  {
    what: 'jsonrpc 1.0',
    body: JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'eth_blockNumber', params: ['x'.repeat(3000)] }),
    status: 400,
    code: -32600,
  },
  { what: 'not JSON', body: '{"jsonrpc":"2.0","id":1,"method":', status: 400, code: -32700 },
  {
    what: 'nested too deep',
    body: `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${'['.repeat(40)}${']'.repeat(40)}}`,
    status: 400,
    code: -32600,
  },
  {
    what: 'body over the limit',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: ['y'.repeat(MAX_BODY)] }),
    status: 413,
    code: -32600,
  },
];

function errorCode(json: unknown): number | undefined {
  const one = Array.isArray(json) ? (json[0] as unknown) : json;
  return (one as { error?: { code?: number } } | undefined)?.error?.code;
}

/** The next message a socket receives, as text. */
function nextMessage(ws: WebSocket): Promise<string> {
  return new Promise((resolve) => ws.once('message', (data) => resolve((data as Buffer).toString())));
}

for (const store of ['memory', 'redis'] as const) {
  describe(`requests that become no call are charged (${store} store)`, function () {
    this.timeout(60_000);
    const prefix = `nrtest:${randomBytes(4).toString('hex')}:`;
    const clock = Date.now();
    let stack: Stack;
    /** Where the n-th request goes: with Redis, the two instances in turn, so the limits shown are shared. */
    let gateways: Gateway[];
    const day = new Date(clock).toISOString().slice(0, 10);

    before(async () => {
      stack = await startStack({
        chains: CHAINS,
        tiers: TIERS,
        now: () => clock,
        adminToken: TOKEN,
        serverYaml: `maxBodyBytes: ${MAX_BODY}`,
        hotYaml: store === 'redis' ? redisHot(prefix, 'timeoutMs: 3000, instances: 2') : undefined,
      });
      gateways = store === 'redis' ? [stack.gateway, await stack.startAnother()] : [stack.gateway];
    });
    after(async () => {
      await stack.close();
      if (store === 'redis') await deleteUnderPrefix(prefix);
    });

    const on = (n: number): Gateway => gateways[n % gateways.length] as Gateway;
    const key = async (account: string, tier: string): Promise<{ id: string; value: string }> => {
      const { record, value } = await stack.gateway.keys.create({ account, tier });
      return { id: record.id, value };
    };
    const usage = async (id: string): Promise<unknown> => {
      const res = await get(stack.admin(`/admin/keys/${id}/usage`), { authorization: `Bearer ${TOKEN}` });
      expect(res.status).to.equal(200);
      return (res.json as { usage: unknown }).usage;
    };
    const metric = async (re: RegExp): Promise<number> => Number(re.exec((await get(stack.admin('/metrics'))).text)?.[1] ?? 0);

    it('gives 429 after the rate to a key sending 40 invalid requests, and counts them as invalid and limited', async () => {
      const a = await key('acme', 'five');
      const b = await key('acme', 'five');
      const statuses: number[] = [];
      for (let n = 0; n < 40; n++) {
        const kind = INVALID[n % INVALID.length] as (typeof INVALID)[number];
        const res = await rpc(`${on(n).url}/l1`, kind.body, { apikey: a.value });
        statuses.push(res.status);
        if (n < 5) {
          // Within the rate: each is answered with its own error, and the rate headers show what it cost.
          expect(res.status, kind.what).to.equal(kind.status);
          expect(errorCode(res.json), kind.what).to.equal(kind.code);
        } else {
          expect(res.status, kind.what).to.equal(429);
          expect(res.json).to.deep.include({ jsonrpc: '2.0', id: null });
          expect((res.json as { error: { code: number } }).error.code).to.equal(-32005);
          expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
          expect(res.headers.get('ratelimit-remaining')).to.equal('0');
        }
      }
      expect(statuses.filter((s) => s === 429)).to.have.length(35);
      // The key's rate is spent: a good call meets it too, and so does another key of the same account.
      const call = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_blockNumber', params: [] });
      expect((await rpc(`${on(0).url}/l1`, call, { apikey: a.value })).status).to.equal(429);
      expect((await rpc(`${on(1).url}/l1`, call, { apikey: b.value })).status).to.equal(429);
      const other = await key('other-account', 'five');
      expect((await rpc(`${on(0).url}/l1`, call, { apikey: other.value })).status).to.equal(200);
      // Usage as an operator reads it: five charged as invalid, the rest refused by the rate.
      expect(await usage(a.id)).to.deep.equal([{ day, chain: 'l1', calls: 0, errors: 0, limited: 36, invalid: 5 }]);
      expect(await usage(b.id)).to.deep.equal([{ day, chain: 'l1', calls: 0, errors: 0, limited: 1 }]);
      if (store === 'memory') {
        expect(await metric(/noderouter_rejections_total\{chain="l1",tier="five",reason="invalid"\} (\d+)/)).to.equal(5);
        expect(await metric(/noderouter_rejections_total\{chain="l1",tier="five",reason="rate"\} (\d+)/)).to.equal(37);
      }
    });

    it('charges a request whose every call its key may not make, like an invalid one', async () => {
      const { record, value } = await stack.gateway.keys.create({ account: 'denied', tier: 'five', allow: ['net_*'] });
      const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] });
      for (let n = 0; n < 5; n++) expect((await rpc(`${on(n).url}/l1`, call, { apikey: value })).status).to.equal(403);
      const res = await rpc(`${on(5).url}/l1`, call, { apikey: value });
      expect(res.status).to.equal(429);
      expect(await usage(record.id)).to.deep.equal([{ day, chain: 'l1', calls: 0, errors: 0, limited: 1, invalid: 5 }]);
    });

    it('leaves requests without a valid key cheap 401s, charged to nobody', async () => {
      const before = await metric(/noderouter_rejections_total\{chain="l1",tier="five",reason="invalid"\} (\d+)/);
      for (let n = 0; n < 40; n++) {
        const kind = INVALID[n % INVALID.length] as (typeof INVALID)[number];
        const headers: Record<string, string> = n % 2 === 0 ? {} : { apikey: `nrk_${'0'.repeat(40)}` };
        const res = await rpc(`${on(n).url}/l1`, kind.body, headers);
        expect(res.status, kind.what).to.equal(401);
        expect(res.headers.get('connection')).to.equal('close');
      }
      expect(await metric(/noderouter_rejections_total\{chain="l1",tier="five",reason="invalid"\} (\d+)/)).to.equal(before);
    });

    it('charges invalid WebSocket messages the same, then answers them with -32005', async () => {
      const { id, value } = await key('ws-flood', 'five');
      const sockets = await Promise.all(gateways.map((g) => RpcSocket.open(`${wsUrl(g.url)}/l1`, { headers: { apikey: value } })));
      const codes: number[] = [];
      const messages: Array<string | Buffer> = [
        '{"jsonrpc":"2.0","id":1,"method":',
        '{"jsonrpc":"1.0","id":1,"method":"eth_blockNumber"}',
        '[1,2]',
        `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${'['.repeat(40)}${']'.repeat(40)}}`,
        Buffer.from('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}'),
      ];
      for (let n = 0; n < 10; n++) {
        const ws = (sockets[n % sockets.length] as RpcSocket).ws;
        const answer = nextMessage(ws);
        const m = messages[n % messages.length] as string | Buffer;
        ws.send(m, { binary: typeof m !== 'string' });
        codes.push(errorCode(JSON.parse(await answer)) ?? 0);
      }
      expect(codes).to.deep.equal([-32700, -32600, -32600, -32600, -32600, -32005, -32005, -32005, -32005, -32005]);
      expect(await usage(id)).to.deep.equal([{ day, chain: 'l1', calls: 0, errors: 0, limited: 5, invalid: 5 }]);
      // The connection stays open: a refusal is an answer, not a reason to close.
      expect((await (sockets[0] as RpcSocket).call('eth_chainId')).error?.code).to.equal(-32005);
      for (const s of sockets) await s.close();
    });
  });

  describe(`WebSocket caps per account (${store} store)`, function () {
    this.timeout(60_000);
    const prefix = `nrtest:${randomBytes(4).toString('hex')}:`;
    let stack: Stack;
    let gateways: Gateway[];
    const open: RpcSocket[] = [];

    before(async () => {
      stack = await startStack({
        chains: CHAINS,
        tiers: TIERS,
        hotYaml: store === 'redis' ? redisHot(prefix, 'timeoutMs: 3000, instances: 2') : undefined,
      });
      gateways = store === 'redis' ? [stack.gateway, await stack.startAnother()] : [stack.gateway];
    });
    after(async () => {
      for (const s of open) s.ws.terminate();
      await stack.close();
      if (store === 'redis') await deleteUnderPrefix(prefix);
    });

    const url = (n: number): string => `${wsUrl((gateways[n % gateways.length] as Gateway).url)}/l1`;
    const connect = async (n: number, key: string): Promise<RpcSocket> => {
      const s = await RpcSocket.open(url(n), { headers: { apikey: key } });
      open.push(s);
      return s;
    };
    const keys = async (account: string): Promise<string[]> => {
      const out: string[] = [];
      for (let i = 0; i < 3; i++) out.push((await stack.gateway.keys.create({ account, tier: 'capped' })).value);
      return out;
    };
    /** Open a connection once the account has a free slot again (a close is seen by the gateway a moment after the client's). */
    const connectWhenFree = async (n: number, key: string): Promise<RpcSocket> => {
      let s: RpcSocket | undefined;
      await until(async () => {
        s = await connect(n, key).catch(() => undefined);
        return s !== undefined;
      });
      return s as RpcSocket;
    };

    it('holds three keys of one account to the account’s connections, and frees a slot when one closes', async () => {
      const [k1, k2, k3] = (await keys('ws-conns')) as [string, string, string];
      const a = await connect(0, k1);
      await connect(1, k1);
      await connect(0, k2);
      // Each key is under its own cap of 2; the account is at its 3.
      for (const [n, k] of [
        [1, k2],
        [0, k3],
      ] as const) {
        const r = await refusal(url(n), { apikey: k });
        expect(r.status).to.equal(429);
        const error = (JSON.parse(r.body) as { error: { code: number; message: string } }).error;
        expect(error.code).to.equal(-32005);
        expect(error.message).to.equal("WebSocket connections of this account are at its tier's limit of 3");
      }
      // Another account's key is not held by it.
      const [other] = (await keys('ws-conns-other')) as [string];
      await connect(1, other);
      await a.close();
      const c = await connectWhenFree(1, k3);
      expect((await c.call('eth_chainId')).result).to.equal('0x1');
      expect((await refusal(url(0), { apikey: k2 })).status).to.equal(429);
    });

    it('holds them to the account’s subscriptions over all its connections, freed by unsubscribing or closing', async () => {
      const [k1, k2, k3] = (await keys('ws-subs')) as [string, string, string];
      const c1 = await connect(0, k1);
      const c2 = await connect(1, k2);
      const c3 = await connect(0, k3);
      const subscribe = (s: RpcSocket) => s.call('eth_subscribe', ['newHeads']);
      const ids: unknown[] = [];
      for (let i = 0; i < 4; i++) ids.push((await subscribe(c1)).result);
      expect(ids.every((id) => typeof id === 'string')).to.equal(true);
      expect(typeof (await subscribe(c2)).result).to.equal('string');
      // The account holds 5: the next, on any of its connections, is refused.
      for (const s of [c2, c3]) {
        const refused = await subscribe(s);
        expect(refused.error).to.deep.equal({ code: -32005, message: "Subscriptions of this account are at its tier's limit of 5" });
      }
      // The connection's own cap still applies first.
      expect((await subscribe(c1)).error?.message).to.match(/on this connection/);
      expect((await c1.call('eth_unsubscribe', [ids[0]])).result).to.equal(true);
      expect(typeof (await subscribe(c3)).result).to.equal('string');
      expect((await subscribe(c3)).error?.code).to.equal(-32005);
      // Closing a connection gives its subscriptions' slots back.
      await c2.close();
      await until(async () => typeof (await subscribe(c3)).result === 'string');
      expect((await subscribe(c3)).error?.code).to.equal(-32005);
    });
  });
}

/** One POST on a connection of its own, so node:cluster hands the requests to both workers. */
function postAlone(url: string, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close', ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('charged refusals and account caps across workers (server.workers: 2)', function () {
  this.timeout(120_000);
  let devnet: Devnet;
  let dir: string;
  let served: Served;
  let flooder: { id: string; value: string };
  let socketKeys: string[];
  let file: string;

  before(async () => {
    devnet = await startDevnet([{ network: 'l1', family: 'evm', name: 'cw-full-1', role: 'full' }], { blockTimeMs: 0, noControl: true });
    dir = await mkdtemp(join(tmpdir(), 'noderouter-charged-'));
    const recordPath = join(dir, 'noderouter.db');
    file = join(dir, 'gateway.yaml');
    await writeFile(
      file,
      configYaml(
        [{ name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'cw-full-1', role: 'full' }] }],
        new Map([['cw-full-1', devnet.node('cw-full-1').url]]),
        {
          tiers: TIERS,
          storeYaml: storeYaml(recordPath),
          adminToken: TOKEN,
          serverYaml: 'workers: 2',
          probeIntervalMs: 600_000,
          // The reload test reads the log: what each process says, on stdout.
          logYaml: '{ level: info }',
        },
      ),
    );
    const db = SqliteDatabase.open(recordPath);
    const store = openSqliteKeyStore(db);
    // Real time here (another process): a rate whose next token is 100 s away holds the count still.
    const f = await store.create({ account: 'flood', tier: 'slow' });
    flooder = { id: f.record.id, value: f.value };
    socketKeys = [];
    for (let i = 0; i < 3; i++) socketKeys.push((await store.create({ account: 'sockets', tier: 'capped' })).value);
    await store.close();
    db.close();
    served = await serve(['--config', file], { workers: true });
  });
  after(async () => {
    if (served !== undefined && served.child.exitCode === null) {
      served.child.kill('SIGINT');
      await served.exited;
    }
    await devnet.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('holds one rate for invalid requests whichever worker takes them, and counts them once', async () => {
    const statuses: number[] = [];
    for (let n = 0; n < 20; n++) {
      const kind = INVALID[n % 4] as (typeof INVALID)[number];
      statuses.push(await postAlone(`${served.url}/l1`, kind.body, { apikey: flooder.value }));
    }
    expect(statuses.slice(0, 5)).to.deep.equal([400, 400, 400, 400, 400]);
    expect(statuses.slice(5)).to.deep.equal(new Array<number>(15).fill(429));
    const res = await get(`${served.admin}/admin/keys/${flooder.id}/usage`, { authorization: `Bearer ${TOKEN}` });
    const [row] = (res.json as { usage: Array<Record<string, unknown>> }).usage;
    expect(row).to.include({ chain: 'l1', calls: 0, limited: 15, invalid: 5 });
  });

  it('holds an account to its connections whichever worker takes them, and frees a slot on close', async () => {
    const [k1, k2, k3] = socketKeys as [string, string, string];
    const url = `${wsUrl(served.url)}/l1`;
    const opened = [
      await RpcSocket.open(url, { headers: { apikey: k1 } }),
      await RpcSocket.open(url, { headers: { apikey: k1 } }),
      await RpcSocket.open(url, { headers: { apikey: k2 } }),
    ];
    for (const k of [k2, k3]) expect((await refusal(url, { apikey: k })).status).to.equal(429);
    await (opened[0] as RpcSocket).close();
    let again: RpcSocket | undefined;
    await until(async () => (again = await RpcSocket.open(url, { headers: { apikey: k3 } }).catch(() => undefined)) !== undefined);
    expect((await (again as RpcSocket).call('eth_chainId')).result).to.equal('0x1');
    for (const s of [...opened.slice(1), again as RpcSocket]) await s.close();
  });
  // Last: it changes the admin token the tests above use.
  it('applies a new admin token to /admin/* on reload, said once in the log (not by every worker) and never the token', async () => {
    const NEW = 'test-admin-token-rotated-9876543210';
    const before = served.out();
    await writeFile(file, (await readFile(file, 'utf8')).replace(TOKEN, NEW));
    served.child.kill('SIGHUP');
    await until(() => /config reloaded/.test(served.out().slice(before.length)), { what: 'the workers reloaded', timeoutMs: 15_000 });
    const admin = (token: string) => get(`${served.admin}/admin/keys/${flooder.id}/usage`, { authorization: `Bearer ${token}` });
    await until(async () => (await admin(NEW)).status === 200);
    expect((await admin(TOKEN)).status).to.equal(401);
    const lines = served.out().slice(before.length);
    expect(lines.match(/admin token changed/g)).to.have.length(1);
    expect(lines).to.not.include(NEW);
    expect(lines).to.not.include(TOKEN);
  });
});

describe('gRPC requests that become no call are charged too', function () {
  this.timeout(30_000);
  const clock = Date.now();
  let stack: Stack;
  let client: grpc.Client;

  before(async () => {
    stack = await startStack({ chains: [HUB_GRPC], tiers: TIERS, now: () => clock, serverYaml: 'maxBodyBytes: 1024' });
    client = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await stack.close();
  });

  const unary = (md: Record<string, string>, request: Buffer): Promise<Reply> => grpcUnary(client, PARAMS, md, request);

  it('gives RESOURCE_EXHAUSTED after the rate to a key sending unreadable or oversized requests', async () => {
    const { record, value } = await stack.gateway.keys.create({ account: 'grpc-flood', tier: 'five' });
    const codes: number[] = [];
    for (let n = 0; n < 8; n++) {
      // A height that is not a number (the plugin cannot read the call), or a message over server.maxBodyBytes.
      const bad =
        n % 2 === 0
          ? unary({ apikey: value, 'x-cosmos-block-height': 'ten' }, Buffer.alloc(0))
          : unary({ apikey: value }, Buffer.alloc(2_000, 1));
      codes.push((await bad).code);
    }
    const { INVALID_ARGUMENT: invalid, RESOURCE_EXHAUSTED: exhausted } = grpc.status;
    expect(codes).to.deep.equal([invalid, exhausted, invalid, exhausted, invalid, exhausted, exhausted, exhausted]);
    const refused = await unary({ apikey: value, 'x-cosmos-block-height': 'ten' }, Buffer.alloc(0));
    expect(refused.code).to.equal(exhausted);
    expect(refused.metadata['retry-after']).to.not.equal(undefined);
    const rows = await stack.gateway.services.bundle.limiter.usage(record.id);
    expect(rows).to.deep.equal([
      { day: new Date(clock).toISOString().slice(0, 10), chain: 'hub-grpc', calls: 0, errors: 0, limited: 4, invalid: 5 },
    ]);
  });
});

describe('REST (passthrough) requests that become no call are charged too', function () {
  this.timeout(30_000);
  const clock = Date.now();
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      chains: [{ name: 'hub-rest', plugin: 'sdk-rest', path: '/hub/rest', nodes: [{ name: 'hub-rest-full-1', role: 'full' }] }],
      tiers: TIERS,
      now: () => clock,
    });
  });
  after(() => stack.close());

  it('gives 429 after the rate to a key sending requests the endpoint cannot take', async () => {
    const { record, value } = await stack.gateway.keys.create({ account: 'rest-flood', tier: 'five' });
    const url = stack.url('/hub/rest/cosmos/auth/v1beta1/params');
    const statuses: number[] = [];
    for (let n = 0; n < 8; n++) {
      // A method REST endpoints do not take, or a height that is not a number.
      const res =
        n % 2 === 0
          ? await fetch(url, { method: 'DELETE', headers: { apikey: value } })
          : await fetch(url, { headers: { apikey: value, 'x-cosmos-block-height': 'ten' } });
      await res.text();
      statuses.push(res.status);
    }
    expect(statuses).to.deep.equal([405, 400, 405, 400, 405, 429, 429, 429]);
    expect(stack.devnet.node('hub-rest-full-1').received.filter((r) => r.path.includes('/auth/'))).to.have.length(0);
    const rows = await stack.gateway.services.bundle.limiter.usage(record.id);
    expect(rows).to.deep.equal([
      { day: new Date(clock).toISOString().slice(0, 10), chain: 'hub-rest', calls: 0, errors: 0, limited: 3, invalid: 5 },
    ]);
  });
});
