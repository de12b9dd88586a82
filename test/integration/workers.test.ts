// `server.workers: 2` as an operator runs it: the real `noderouter serve` (a primary and
// two worker processes sharing the listener) in front of devnet nodes. Every call goes
// on a connection of its own, so node:cluster hands calls to both workers (each worker's
// request log lines say which it was). What must be one across workers is checked
// from outside: a key's quota and its account's, usage, revocation, WebSocket caps,
// one prober per chain, one /metrics, reloads, last uses written by the primary alone,
// a worker killed under load, SIGTERM.

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { Metrics } from '../../src/ops/metrics/metrics.js';
import { callAlone as call, count, hammer, servedByBoth, type Answer } from '../support/cluster-calls.js';
import { checkAll } from '../support/dashboards.js';
import { configYaml, get, redisHot, storeYaml } from '../support/harness.js';
import { recordKeys, recordUsage } from '../support/record.js';
import { parseExposition } from '../support/promql.js';
import { deleteUnderPrefix } from '../support/redis.js';
import { serve, type Served } from '../support/serve.js';
import { RpcSocket, refusal, wsUrl } from '../support/ws-client.js';
import { until, untilDefined } from '../support/until.js';
import { onFreePorts } from '../support/ports.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = 'workers-admin-token-0123456789';
const TIERS = `
  enterprise: { rate: unlimited, burst: unlimited, maxBatch: 100, archive: true }
  quota: { rate: unlimited, burst: unlimited, daily: 20 }
  shared: { rate: unlimited, burst: unlimited, account: { daily: 15 } }
  socket: { rate: unlimited, burst: unlimited, wsConnections: 2 }
`;
const CALL = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };
/** What the evm plugin's head probe sends. */
const PROBE = '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}';

async function admin(served: Served, method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${served.admin}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** Key id → the worker whose log line `msg` names it, for the lines written since `since`. */
function workerByKey(served: Served, msg: string, since: number): Map<string, number> {
  const found = new Map<string, number>();
  for (const l of served.out().slice(since).split('\n')) {
    if (!l.includes(`"msg":"${msg}"`)) continue;
    const line = JSON.parse(l) as { keyId?: string; worker?: number };
    if (line.keyId !== undefined && line.worker !== undefined) found.set(line.keyId, line.worker);
  }
  return found;
}

function sampleSum(scrape: string, metric: string, match: (labels: string) => boolean = () => true): number {
  let sum = 0;
  for (const line of scrape.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== metric || !match(m[2] ?? '')) continue;
    sum += Number(m[3]);
  }
  return sum;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A cluster of 2 workers, probes left to the test, the admin API on, request lines logged. */
function clusterOptions(storeYaml: string, shutdownDelayMs: number) {
  return {
    tiers: TIERS,
    storeYaml,
    probeIntervalMs: 600_000,
    adminToken: TOKEN,
    serverYaml: `workers: 2, shutdownDelayMs: ${shutdownDelayMs}`,
    logYaml: '{ level: info }',
  };
}

/** Stop the gateway at once (SIGINT) if it still runs, then its devnet, and remove its files. */
async function stopAll(served: Served | undefined, devnet: Devnet, dir: string): Promise<void> {
  if (served !== undefined && served.child.exitCode === null) {
    served.child.kill('SIGINT');
    await served.exited;
  }
  await devnet.close();
  await rm(dir, { recursive: true, force: true });
}

describe('server.workers: 2', function () {
  this.timeout(120_000);
  let devnet: Devnet;
  let dir: string;
  let file: string;
  let served: Served;
  let yaml: string;
  /** The config with one more chain endpoint (/l1-again). */
  let reloaded: string;
  let enterprise: string;
  let quotaKey: { id: string; value: string };
  let sharedKeys: string[];
  let socketKey: string;
  /** Calls answered 200 on /l1 so far: /metrics must count exactly these. */
  let answeredOk = 0;
  /** The SQLite record the primary and its workers share. */
  let recordPath: string;
  /** Key id → when its last use was made (ms), for the keys of the last-use test. */
  const usedAt = new Map<string, number>();

  before(async () => {
    devnet = await startDevnet([{ network: 'l1', family: 'evm', name: 'w-full-1', role: 'full' }], { blockTimeMs: 0, noControl: true });
    dir = await mkdtemp(join(tmpdir(), 'noderouter-workers-'));
    recordPath = join(dir, 'keys.db');
    const storePath = recordPath;
    file = join(dir, 'gateway.yaml');
    const config = (extra = ''): string =>
      configYaml(
        [
          { name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'w-full-1', role: 'full' }] },
          ...(extra === '' ? [] : [{ name: extra, plugin: 'evm', path: `/${extra}`, nodes: [{ name: 'w-again-1', sameAs: 'w-full-1' }] }]),
        ],
        new Map([['w-full-1', devnet.node('w-full-1').url]]),
        clusterOptions(storeYaml(storePath), 300),
      );
    yaml = config();
    await writeFile(file, yaml);
    reloaded = config('l1-again');
    const store = recordKeys(storePath);
    enterprise = (await store.create({ account: 'big', tier: 'enterprise' })).value;
    const q = await store.create({ account: 'counted', tier: 'quota' });
    quotaKey = { id: q.record.id, value: q.value };
    sharedKeys = [
      (await store.create({ account: 'acme', tier: 'shared' })).value,
      (await store.create({ account: 'acme', tier: 'shared' })).value,
    ];
    socketKey = (await store.create({ account: 'sockets', tier: 'socket' })).value;
    await store.close();
    served = await serve(['--config', file], { workers: true, timeoutMs: 90_000 });
  });
  after(async () => {
    await stopAll(served, devnet, dir);
  });

  it('starts two workers that share the listener and both answer', async () => {
    expect(served.pids).to.have.length(2);
    expect((await get(`${served.admin}/health/ready`)).status).to.equal(200);
    const since = served.out().length;
    const answers = await hammer(40, 8, () => call(`${served.url}/l1`, CALL, { apikey: enterprise }));
    expect(count(answers, 200)).to.equal(40);
    answeredOk += 40;
    for (const a of answers) expect((a.json as { result: string }).result).to.match(/^0x/);
    const counted = async (): Promise<Answer> => {
      const a = await call(`${served.url}/l1`, CALL, { apikey: enterprise });
      if (a.status === 200) answeredOk++;
      return a;
    };
    expect(await servedByBoth(served, 40, since, counted)).to.deep.equal([0, 1]);
  });

  it("holds a key to its tier's daily quota exactly, whichever worker answers, and counts its usage once", async () => {
    const answers = await hammer(60, 12, () => call(`${served.url}/l1`, CALL, { apikey: quotaKey.value }));
    expect(count(answers, 200)).to.equal(20);
    expect(count(answers, 429)).to.equal(40);
    answeredOk += 20;
    const usage = (await admin(served, 'GET', `/admin/keys/${quotaKey.id}/usage`)).json as {
      usage: Array<{ chain: string; calls: number; limited: number }>;
    };
    expect(usage.usage.map((r) => [r.chain, r.calls, r.limited])).to.deep.equal([['l1', 20, 40]]);
  });

  it('holds an account to its quota across its keys and the workers', async () => {
    const answers = await hammer(40, 10, (i) => call(`${served.url}/l1`, CALL, { apikey: sharedKeys[i % 2] as string }));
    expect(count(answers, 200)).to.equal(15);
    expect(count(answers, 429)).to.equal(25);
    answeredOk += 15;
  });

  it('serves a key made through the admin API on every worker at once, and refuses it on the next request of each once revoked', async () => {
    const made = (await admin(served, 'POST', '/admin/keys', { account: 'fresh', tier: 'enterprise' })).json as {
      key: string;
      record: { id: string };
    };
    const since = served.out().length;
    const before = await hammer(20, 4, () => call(`${served.url}/l1`, CALL, { apikey: made.key }));
    expect(count(before, 200)).to.equal(20);
    answeredOk += 20;
    const counted = async (): Promise<Answer> => {
      const a = await call(`${served.url}/l1`, CALL, { apikey: made.key });
      if (a.status === 200) answeredOk++;
      return a;
    };
    expect(await servedByBoth(served, 20, since, counted)).to.deep.equal([0, 1]);
    expect((await admin(served, 'POST', `/admin/keys/${made.record.id}/revoke`)).status).to.equal(200);
    const after = await hammer(20, 4, () => call(`${served.url}/l1`, CALL, { apikey: made.key }));
    expect(count(after, 401)).to.equal(20);
  });

  it("holds a key to its tier's WebSocket connection cap across workers, and frees a slot on close", async () => {
    const headers = { apikey: socketKey };
    const a = await RpcSocket.open(`${wsUrl(served.url)}/l1`, { headers });
    const b = await RpcSocket.open(`${wsUrl(served.url)}/l1`, { headers });
    for (let i = 0; i < 4; i++) expect((await refusal(`${wsUrl(served.url)}/l1`, headers)).status).to.equal(429);
    await a.close();
    let c: RpcSocket | undefined;
    await until(async () => (c = await RpcSocket.open(`${wsUrl(served.url)}/l1`, { headers }).catch(() => undefined)) !== undefined, {
      what: 'the freed slot takes a new connection',
    });
    expect((await refusal(`${wsUrl(served.url)}/l1`, headers)).status).to.equal(429);
    await b.close();
    await c?.close();
  });

  it('probes each node from one prober, whatever the number of workers', async () => {
    const probes = devnet.node('w-full-1').received.filter((r) => r.body === PROBE).length;
    const scrape = (await get(`${served.admin}/metrics`)).text;
    const counted = sampleSum(scrape, 'noderouter_health_probes_total', (l) => l.includes('node="w-full-1"'));
    // The primary's prober alone: one round at start (the interval is 10 minutes), none from the workers.
    expect(counted).to.equal(1);
    expect(probes).to.equal(counted);
  });

  it("exports one /metrics with every worker's series added up, which the dashboards and alert rules can read", async () => {
    const scrape = (await get(`${served.admin}/metrics`)).text;
    expect(await checkAll(parseExposition(scrape), new Metrics().registry)).to.be.greaterThan(20);
    expect(sampleSum(scrape, 'noderouter_requests_total', (l) => l.includes('chain="l1"') && l.includes('outcome="ok"'))).to.equal(
      answeredOk,
    );
    expect(sampleSum(scrape, 'noderouter_workers')).to.equal(2);
    expect(scrape).to.match(/noderouter_worker_eventloop_lag_p99_seconds\{worker="0"\}/);
    expect(scrape).to.match(/noderouter_worker_eventloop_lag_p99_seconds\{worker="1"\}/);
    // Node state is the primary's prober's, not one copy per worker.
    expect(sampleSum(scrape, 'noderouter_node_up', (l) => l.includes('node="w-full-1"'))).to.equal(1);
  });

  it('reloads once: the primary validates the file, every worker swaps; an invalid file is refused once', async () => {
    await writeFile(file, reloaded);
    served.child.kill('SIGHUP');
    await until(async () => (await call(`${served.url}/l1-again`, CALL, { apikey: enterprise })).status === 200, {
      what: 'the new chain is served',
      everyMs: 50,
    });
    const answers = await hammer(20, 4, () => call(`${served.url}/l1-again`, CALL, { apikey: enterprise }));
    expect(count(answers, 200)).to.equal(20);
    await writeFile(file, `${yaml}\nnot: [valid`);
    served.child.kill('SIGHUP');
    let failed = 0;
    await until(
      async () =>
        (failed = sampleSum((await get(`${served.admin}/metrics`)).text, 'noderouter_config_reloads_total', (l) => l.includes('failed'))) >
        0,
      { what: 'the invalid file is refused', everyMs: 50 },
    );
    // The watcher and SIGHUP may both have read it: never once per worker.
    expect(failed).to.be.within(1, 2);
    expect(count(await hammer(10, 2, () => call(`${served.url}/l1-again`, CALL, { apikey: enterprise })), 200)).to.equal(10);
    await writeFile(file, yaml);
  });

  it('replaces a worker killed under load; every call is answered, retried only when its connection died before any answer', async () => {
    const made = (await admin(served, 'POST', '/admin/keys', { account: 'load', tier: 'enterprise' })).json as {
      key: string;
      record: { id: string };
    };
    const { key } = made;
    const { id } = made.record;
    const [victim] = served.pids as [number];
    const errors: string[] = [];
    let answered = 0;
    const one = async (): Promise<Answer> => {
      for (;;) {
        try {
          const a = await call(`${served.url}/l1`, CALL, { apikey: key });
          if (++answered === 60) process.kill(victim, 'SIGKILL');
          return a;
        } catch (err) {
          // A connection the killed worker held: reset (or hung up) before any answer came.
          // Anything else (a refused connection above all: the other worker keeps the
          // shared socket) fails the test.
          const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
          errors.push(code);
          if (code !== 'ECONNRESET' && code !== 'socket hang up' && code !== 'EPIPE') throw err;
        }
      }
    };
    const answers = await hammer(400, 8, one);
    expect(answers.map((a) => a.status)).to.deep.equal(new Array(400).fill(200));
    for (const a of answers) expect((a.json as { result: string }).result).to.match(/^0x/);
    expect(errors.filter((e) => e === 'ECONNREFUSED')).to.deep.equal([]);
    expect(served.child.exitCode, 'the primary lives on').to.equal(null);
    expect(alive(victim)).to.equal(false);
    const restartedPid = (): number | undefined => {
      for (const line of served.out().split('\n')) {
        if (!line.includes('"worker_start"')) continue;
        const l = JSON.parse(line) as { worker?: number; pid?: number };
        if (l.worker === 0) return l.pid;
      }
      return undefined;
    };
    const restarted = await untilDefined(restartedPid, { what: 'worker 0 forks again', timeoutMs: 60_000, everyMs: 50 });
    expect(restarted, 'worker 0 forked again').to.be.a('number');
    const since = served.out().length;
    expect(count(await hammer(30, 6, () => call(`${served.url}/l1`, CALL, { apikey: key })), 200)).to.equal(30);
    // More calls, if needed, on another key: this one's usage is checked below.
    expect(await servedByBoth(served, 30, since, () => call(`${served.url}/l1`, CALL, { apikey: enterprise }))).to.deep.equal([0, 1]);
    // Usage is the primary's: every answered call once, plus at most the calls the killed worker had admitted.
    const usage = (await admin(served, 'GET', `/admin/keys/${id}/usage`)).json as { usage: Array<{ calls: number }> };
    expect(usage.usage[0]?.calls).to.be.within(430, 430 + errors.length);
    const scrape = (await get(`${served.admin}/metrics`)).text;
    expect(sampleSum(scrape, 'noderouter_worker_restarts_total', (l) => l.includes('reason="signal"'))).to.equal(1);
    served.pids[0] = restarted;
  });

  it('sends every last use, of WebSocket messages and HTTP calls alike on either worker, to the primary', async () => {
    type Made = { key: string; record: { id: string } };
    // An account of its own per key: the pace of key changes per account (keys.changesBurst) is not what is tested.
    let accounts = 0;
    const fresh = async (): Promise<Made> => {
      const answer = await admin(served, 'POST', '/admin/keys', { account: `last-use-${accounts++}`, tier: 'enterprise' });
      expect(answer.status).to.equal(201);
      return answer.json as Made;
    };
    const since = served.out().length;
    const sockets: RpcSocket[] = [];
    const wsKeys = new Set<string>();
    const httpKeys = new Set<string>();
    const workersOf = (msg: string, keys: Set<string>): Set<number> =>
      new Set([...workerByKey(served, msg, since)].filter(([id]) => keys.has(id)).map(([, w]) => w));
    // The kernel picks the worker of each connection: rounds of fresh keys until both served each kind.
    const covered = (): boolean => workersOf('websocket opened', wsKeys).size === 2 && workersOf('request', httpKeys).size === 2;
    for (let round = 0; round < 10 && !covered(); round++) {
      const opened: Array<{ socket: RpcSocket; id: string }> = [];
      for (let i = 0; i < 4; i++) {
        const made = await fresh();
        opened.push({ socket: await RpcSocket.open(`${wsUrl(served.url)}/l1`, { headers: { apikey: made.key } }), id: made.record.id });
      }
      const calls = await Promise.all(Array.from({ length: 4 }, fresh));
      // After every upgrade's own last use (the identifier's, at the upgrade): the messages' are later.
      const upgraded = Date.now();
      await until(() => Date.now() > upgraded + 2);
      const sentAt = Date.now();
      for (const { socket, id } of opened) {
        expect((await socket.call('eth_blockNumber')).result).to.match(/^0x/);
        wsKeys.add(id);
        usedAt.set(id, sentAt);
        sockets.push(socket);
      }
      for (const made of calls) {
        expect((await call(`${served.url}/l1`, CALL, { apikey: made.key })).status).to.equal(200);
        answeredOk++;
        httpKeys.add(made.record.id);
        usedAt.set(made.record.id, sentAt);
      }
      await until(() => workerByKey(served, 'request', since).size >= wsKeys.size + httpKeys.size);
    }
    expect([...workersOf('websocket opened', wsKeys)].sort()).to.deep.equal([0, 1]);
    expect([...workersOf('request', httpKeys)].sort()).to.deep.equal([0, 1]);
    // The primary knows each key's last use: a WebSocket message's too, not only its upgrade.
    await until(async () => {
      for (const [id, at] of usedAt) {
        const { record } = (await admin(served, 'GET', `/admin/keys/${id}`)).json as { record: { lastUsedAt: string | null } };
        if (record.lastUsedAt === null || Date.parse(record.lastUsedAt) < at) return false;
      }
      return true;
    });
    for (const s of sockets) await s.close();
  });

  it('drains every worker on SIGTERM: readiness 503, in-flight calls answered, usage flushed, exit 0', async () => {
    await devnet.node('w-full-1').setFaults({ hold: true });
    const held = call(`${served.url}/l1`, { jsonrpc: '2.0', id: 78, method: 'eth_blockNumber' }, { apikey: enterprise });
    await until(() => devnet.node('w-full-1').received.some((r) => r.body.includes('"id":78')), { what: 'the node has the call' });
    served.child.kill('SIGTERM');
    await until(async () => (await get(`${served.admin}/health/ready`)).status === 503, { what: 'readiness says 503' });
    await devnet.node('w-full-1').clearFaults();
    expect((await held).status).to.equal(200);
    expect(await served.exited).to.equal(0);
    for (const pid of served.pids) expect(alive(pid)).to.equal(false);
    expect(recordUsage(recordPath)[quotaKey.id]?.[0]).to.include({ calls: 20, limited: 40 });
  });
  it('leaves every worker’s last uses in the record, written by the primary', async () => {
    expect(usedAt.size).to.be.greaterThan(7);
    const keys = recordKeys(recordPath);
    try {
      const lastUsed = new Map((await keys.list()).map((r) => [r.id, r.lastUsedAt === undefined ? 0 : Date.parse(r.lastUsedAt)]));
      for (const [id, at] of usedAt) expect(lastUsed.get(id), id).to.be.at.least(at);
    } finally {
      await keys.close();
    }
  });
});

describe('server.workers: 2 on the Redis hot state', function () {
  this.timeout(120_000);
  const prefix = `nrtest:${randomBytes(4).toString('hex')}:`;
  let devnet: Devnet;
  let dir: string;
  let served: Served;

  before(async () => {
    devnet = await startDevnet([{ network: 'l1', family: 'evm', name: 'r-full-1', role: 'full' }], { blockTimeMs: 0, noControl: true });
    dir = await mkdtemp(join(tmpdir(), 'noderouter-workers-redis-'));
    const file = join(dir, 'gateway.yaml');
    await writeFile(
      file,
      configYaml(
        [{ name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'r-full-1', role: 'full' }] }],
        new Map([['r-full-1', devnet.node('r-full-1').url]]),
        clusterOptions(storeYaml(join(dir, 'noderouter.db'), redisHot(prefix, 'timeoutMs: 500')), 0),
      ),
    );
    served = await serve(['--config', file], { workers: true, timeoutMs: 90_000 });
  });
  after(async () => {
    await stopAll(served, devnet, dir);
    await deleteUnderPrefix(prefix);
  });

  it('holds a key to its quota exactly through Redis, and refuses it on every worker once revoked', async () => {
    const made = (await admin(served, 'POST', '/admin/keys', { account: 'redis-quota', tier: 'quota' })).json as {
      key: string;
      record: { id: string };
    };
    const since = served.out().length;
    const answers = await hammer(60, 12, () => call(`${served.url}/l1`, CALL, { apikey: made.key }));
    expect([count(answers, 200), count(answers, 429)]).to.deep.equal([20, 40]);
    // More calls, if needed, on another key: this one's usage is checked below.
    const spare = (await admin(served, 'POST', '/admin/keys', { account: 'redis-spare', tier: 'enterprise' })).json as { key: string };
    expect(await servedByBoth(served, 60, since, () => call(`${served.url}/l1`, CALL, { apikey: spare.key }))).to.deep.equal([0, 1]);
    // Each worker spends a lease locally and writes what it counted when the lease ends
    // (store.leaseMs, 200 ms by default): the shared usage is exact once they have.
    let rows: number[][] = [];
    await until(
      async () => {
        const usage = (await admin(served, 'GET', `/admin/keys/${made.record.id}/usage`)).json as {
          usage: Array<{ calls: number; limited: number }>;
        };
        rows = usage.usage.map((r) => [r.calls, r.limited]);
        return rows[0]?.[0] === 20 && rows[0][1] === 40;
      },
      { what: 'the leases are written', everyMs: 50 },
    ).catch(() => undefined);
    expect(rows).to.deep.equal([[20, 40]]);
    const other = (await admin(served, 'POST', '/admin/keys', { account: 'redis-revoked', tier: 'enterprise' })).json as {
      key: string;
      record: { id: string };
    };
    expect(count(await hammer(20, 4, () => call(`${served.url}/l1`, CALL, { apikey: other.key })), 200)).to.equal(20);
    await admin(served, 'POST', `/admin/keys/${other.record.id}/revoke`);
    expect(count(await hammer(20, 4, () => call(`${served.url}/l1`, CALL, { apikey: other.key })), 401)).to.equal(20);
  });

  it('holds a key to its WebSocket connection cap through Redis', async () => {
    const made = (await admin(served, 'POST', '/admin/keys', { account: 'redis-sockets', tier: 'socket' })).json as { key: string };
    const headers = { apikey: made.key };
    const a = await RpcSocket.open(`${wsUrl(served.url)}/l1`, { headers });
    const b = await RpcSocket.open(`${wsUrl(served.url)}/l1`, { headers });
    for (let i = 0; i < 4; i++) expect((await refusal(`${wsUrl(served.url)}/l1`, headers)).status).to.equal(429);
    await a.close();
    await b.close();
  });
});

describe('server.workers: auto', function () {
  this.timeout(120_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'noderouter-auto-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('serves the default devnet with one worker per core', async () => {
    const file = join(dir, 'gateway.yaml');
    await copyFile(join(ROOT, 'config', 'gateway.yaml'), file);
    const shipped = await readFile(file, 'utf8');
    // Its devnet's nodes on ports found free, its control API on port 0: the shipped
    // ports may be taken by a gateway already running on this machine.
    const onOwnPorts = (await onFreePorts(shipped)).replace(/^( {2}controlPort:) \d+/m, '$1 0');
    await writeFile(
      file,
      onOwnPorts
        .replace(/^server:\n/m, 'server:\n  workers: auto\n')
        .replace(/path: \.\.\/data\/noderouter\.db/, 'path: ./data/noderouter.db'),
    );
    const s = await serve(['--devnet', '--config', file], {
      env: { PORT: '0', ADMIN_PORT: '0', GRPC_PORT: '0' },
      workers: true,
      timeoutMs: 90_000,
    });
    try {
      expect(s.pids).to.have.length(availableParallelism());
      const key = /demo key \(shown once; earlier demo keys are revoked\): (\S+)/.exec(s.out())?.[1] as string;
      const answers = await hammer(10, 2, () => call(`${s.url}/l1`, CALL, { apikey: key }));
      expect(count(answers, 200)).to.equal(10);
      // Ready once every chain's first probes are in (a load balancer waits the same way).
      await until(async () => (await get(`${s.admin}/health/ready`)).status === 200, { what: 'ready', timeoutMs: 60_000 });
    } finally {
      s.child.kill('SIGINT');
      // A stop that does not end in exit code 0 shows how the primary ended and what it printed last.
      const code = await s.exited;
      expect(code, `exit ${code} (signal ${s.child.signalCode}):\n${s.out().slice(-4000)}`).to.equal(0);
    }
  });
});

describe('server.workers: 2 with agreement', function () {
  this.timeout(120_000);
  const NODES = ['ag-full-1', 'ag-full-2', 'ag-full-3'];
  const ADDRESS = '0x00000000000000000000000000000000000000aa';
  let devnet: Devnet;
  let dir: string;
  let served: Served;
  let key: string;

  before(async () => {
    devnet = await startDevnet(
      NODES.map((name) => ({ network: 'ag', family: 'evm' as const, name, role: 'full' as const })),
      { blockTimeMs: 0, noControl: true },
    );
    await devnet.node('ag-full-2').setFaults({ lie: true });
    dir = await mkdtemp(join(tmpdir(), 'noderouter-workers-agree-'));
    const storePath = join(dir, 'keys.db');
    const file = join(dir, 'gateway.yaml');
    await writeFile(
      file,
      configYaml(
        [
          {
            name: 'ag',
            plugin: 'evm',
            path: '/ag',
            nodes: NODES.map((name) => ({ name, role: 'full' as const })),
            extra: '    consensus: { ask: 3, agree: 2, minCompared: 3, maxDisputeRate: 0.5, coolDownMs: 600000 }',
          },
        ],
        new Map(NODES.map((n) => [n, devnet.node(n).url])),
        clusterOptions(storeYaml(storePath), 300),
      ),
    );
    const store = recordKeys(storePath);
    key = (await store.create({ account: 'agree', tier: 'enterprise' })).value;
    await store.close();
    served = await serve(['--config', file], { workers: true, timeoutMs: 90_000 });
  });
  after(async () => {
    await stopAll(served, devnet, dir);
  });

  it('shows every worker’s disputes at the primary’s /health/disputes, and the liar leaves rotation on every worker', async () => {
    const height = `0x${(devnet.node('ag-full-1').height() - 5).toString(16)}`;
    const body = { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [ADDRESS, height] };
    const honest = (await call(devnet.node('ag-full-1').url, body)).json as { result: string };
    const since = served.out().length;
    const answers = await hammer(12, 4, () => call(`${served.url}/ag`, body, { apikey: key }));
    expect(answers.map((a) => (a.json as { result?: string }).result)).to.deep.equal(Array(12).fill(honest.result));
    expect(await servedByBoth(served, 12, since, () => call(`${served.url}/ag`, body, { apikey: key }))).to.deep.equal([0, 1]);
    type Dispute = { chain: string; nodes: Array<{ node: string; agrees: boolean }> };
    let disputes: Dispute[] = [];
    let liar: { inRotation: boolean; reason: string | null } | undefined;
    await until(
      async () => {
        disputes = ((await admin(served, 'GET', '/health/disputes')).json as { disputes: Dispute[] }).disputes;
        const { chains } = (await admin(served, 'GET', '/health/chains')).json as {
          chains: Array<{ chain: string; nodes: Array<{ name: string; inRotation: boolean; reason: string | null }> }>;
        };
        liar = chains.find((c) => c.chain === 'ag')?.nodes.find((n) => n.name === 'ag-full-2');
        return disputes.length >= 3 && liar?.inRotation === false;
      },
      { what: 'the liar is disputed and out of rotation', everyMs: 50 },
    ).catch(() => undefined);
    expect(disputes.length).to.be.at.least(3);
    for (const d of disputes) expect(d.nodes.find((n) => n.node === 'ag-full-2')?.agrees).to.equal(false);
    expect(liar).to.include({ inRotation: false, reason: 'disputed by the majority' });
    // No worker sends it anything now, checked or not.
    const before = devnet.node('ag-full-2').received.length;
    const more = await hammer(20, 4, () => call(`${served.url}/ag`, CALL, { apikey: key }));
    expect(count(more, 200)).to.equal(20);
    expect(devnet.node('ag-full-2').received.length).to.equal(before);
  });
});
