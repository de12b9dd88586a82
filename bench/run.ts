// npm run bench — noderouter's own cost, measured against the floor in one run.
// On loopback it starts a fast upstream node, then loads in turn: the upstream
// directly; a bare pass-through proxy (node:http + undici Pool); nginx as a reverse
// proxy (installed from Debian's packages when absent, skipped with a line when it
// cannot be); and noderouter with auth, rate limits, metrics and logging on, in
// several scenarios. Targets run pinned to one core and the load to the other where
// taskset exists; rounds alternate the targets. Prints one table and writes
// bench/results/<date>.json. BENCH_SECONDS (default 5), BENCH_ROUNDS (default 2),
// BENCH_CONNECTIONS (default 64), BENCH_SKIP_1M=1 to leave out the 1 000 000-key store (the 1-key Redis
// rows, with leases and exact per call, stay),
// BENCH_BEFORE=<git revision> to build that revision too and measure it beside this one
// (single calls, at full load and at the fixed rate, and batches, 1 key): a before and
// after in one run. BENCH_ONLY=<scenario,…> measures only the named scenarios.
// BENCH_RATE (default 1000) is the request rate of the fixed-rate scenario, where
// latency is compared below saturation.

import autocannon from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { newKeyRecord } from '../src/auth/key-store.js';
import { rateLoad } from './rate-load.js';
import { wsLoad } from './ws-load.js';
import { freePort } from './measure.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
/**
 * At full load every target is saturated and its latency is mostly queueing (connections ÷
 * throughput), so a slower target shows a longer p99 for that reason alone. The added
 * latency of a hop is read at a fixed rate well below every target's capacity instead.
 */
const RATE = Number(process.env.BENCH_RATE ?? 1000);
/** An unrecorded pass per target first, so JIT and connections are warm when measured. */
const WARMUP_SECONDS = 2;
const TASKSET = existsSync('/usr/bin/taskset');
const children: ChildProcess[] = [];
/** Run at the end, whatever happened (worktrees of built revisions). */
const cleanups: Array<() => void> = [];

let started = 0;

/**
 * Start a child pinned to a core; resolve once it prints `ready` (or `serving`). Its
 * output goes to a file, as a log shipper would take it: a pipe read by this process,
 * busy generating load, would hold the child's synchronous stdout writes back.
 */
async function start(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  core: number,
  marker = /ready|serving/,
): Promise<ChildProcess> {
  const argv = TASKSET ? ['-c', String(core), cmd, ...args] : args;
  const log = join(tmpdir(), `noderouter-bench-${process.pid}-${++started}.log`);
  const fd = openSync(log, 'w');
  const child = spawn(TASKSET ? 'taskset' : cmd, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', fd, 'inherit'] });
  closeSync(fd);
  children.push(child);
  cleanups.push(() => rmSync(log, { force: true }));
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));
  for (let waited = 0; waited < 60_000; waited += 50) {
    const out = await readFile(log, 'utf8').catch(() => '');
    if (marker.test(out.slice(0, 100_000))) return child;
    if (exited !== undefined) throw new Error(`${cmd} exited ${exited}:\n${out.slice(0, 10_000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${cmd} ${args.join(' ')} did not start`);
}

interface Load {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: string;
  readonly headers?: Record<string, string>;
  /** Messages over WebSocket connections (closed loop) instead of HTTP requests. */
  readonly ws?: boolean;
  /** Requests per second across all connections (open loop, bench/rate-load.ts); none: as fast as answered. */
  readonly rate?: number;
}

interface Result {
  scenario: string;
  target: string;
  /** CPU microseconds the target process spent per request. */
  cpuUs: number[];
  rps: number[];
  p50: number[];
  p99: number[];
  errors: number;
}

interface LoadResult {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  /** Requests the target answered during the whole load, where that is more than rps × seconds. */
  readonly served?: number;
}

async function load(url: string, l: Load, seconds = SECONDS): Promise<LoadResult> {
  if (l.ws === true) return wsLoad(url.replace(/^http/, 'ws') + l.path, l.headers ?? {}, l.body ?? '', CONNECTIONS, seconds);
  if (l.rate !== undefined) {
    const headers = { 'content-type': 'application/json', ...l.headers };
    return rateLoad(url, { method: l.method, path: l.path === '' ? '/' : l.path, body: l.body, headers }, l.rate, CONNECTIONS, seconds);
  }
  const r = await autocannon({
    url: url + l.path,
    method: l.method,
    body: l.body,
    headers: { 'content-type': 'application/json', ...l.headers },
    connections: CONNECTIONS,
    duration: seconds,
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx };
}

const call = (method: string, params: unknown[] = []): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const batch = (n: number): string =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_blockNumber' })));

function chainYaml(name: string, plugin: string, ports: number[], extra = ''): string {
  const nodes = ports.map(
    (p, i) =>
      `      - { name: n${i}, url: "http://127.0.0.1:${p}", role: ${i === ports.length - 1 && extra.includes('archive') ? 'archive' : 'full'} }`,
  );
  return [
    `  ${name}:`,
    `    plugin: ${plugin}`,
    `    route: { path: /${name} }`,
    '    cache: off',
    '    health: { intervalMs: 5000 }',
    extra,
    '    nodes:',
    ...nodes,
  ]
    .filter((l) => l !== '')
    .join('\n');
}

async function gatewayConfig(dir: string, ports: number[], store: string): Promise<{ file: string; port: number }> {
  const file = join(dir, 'gateway.yaml');
  const port = await freePort();
  await writeFile(
    file,
    [
      `server: { host: 127.0.0.1, port: ${port}, adminHost: 127.0.0.1, adminPort: ${await freePort()} }`,
      'log: { level: info }',
      `store: ${store}`,
      'keys: { cacheMaxEntries: 10000 }',
      'tiers:',
      '  bench: { rate: 1000000, burst: 1000000, maxBatch: 1000, archive: true, wsConnections: unlimited }',
      'chains:',
      chainYaml('l1', 'evm', [ports[0] as number]),
      chainYaml('archive', 'evm', [ports[0] as number, ports[1] as number], '    options: { fullHistory: 10 }\n    # archive'),
      chainYaml('p8', 'evm', ports.slice(0, 8)),
      chainYaml('p64', 'evm', ports.slice(0, 64)),
      chainYaml('rest', 'sdk-rest', [ports[0] as number]),
      chainYaml('agree', 'evm', ports.slice(0, 3), '    consensus: { ask: 3, agree: 2 }'),
      '',
    ].join('\n'),
  );
  return { file, port };
}

/** A file store of `count` keys, ours among them; returns our key's value. */
async function fileStore(dir: string, count: number): Promise<string> {
  const ours = newKeyRecord({ account: 'bench', tier: 'bench' });
  const keys = [ours.record];
  for (let i = 1; i < count; i++) keys.push(newKeyRecord({ account: `a${i % 1000}`, tier: 'bench' }).record);
  await writeFile(join(dir, 'keys.json'), JSON.stringify({ version: 1, keys }));
  return ours.value;
}

/** A Redis store (db 7, under `prefix`) of `count` keys, ours among them. */
async function redisStore(count: number, prefix: string): Promise<string> {
  const redis = new Redis('redis://127.0.0.1:6379/7');
  const ours = newKeyRecord({ account: 'bench', tier: 'bench' });
  const put = (p: ReturnType<Redis['pipeline']>, r: typeof ours.record): void => {
    p.set(`${prefix}k:${r.id}`, JSON.stringify(r)).set(`${prefix}h:${r.hash}`, r.id).sadd(`${prefix}ids`, r.id);
  };
  let p = redis.pipeline();
  put(p, ours.record);
  for (let i = 1; i < count; i++) {
    put(p, newKeyRecord({ account: `a${i % 1000}`, tier: 'bench' }).record);
    if (i % 5000 === 0) {
      await p.exec();
      p = redis.pipeline();
    }
  }
  await p.exec();
  redis.disconnect();
  return ours.value;
}

/** CPU seconds a process has used (user + system), from /proc. */
async function cpuOf(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.length < 13 ? undefined : (Number(fields[11]) + Number(fields[12])) / 100;
}

async function rssOf(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

function nginxAvailable(): boolean {
  const has = (): boolean => {
    try {
      execFileSync('nginx', ['-v'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  if (has()) return true;
  try {
    console.log('nginx is absent: installing it from Debian’s packages…');
    execFileSync('bash', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx'], {
      stdio: 'ignore',
      timeout: 300_000,
    });
  } catch {
    return false;
  }
  return has();
}

/** A git revision of this repository, built beside it (its dist/), on this checkout's node_modules. */
async function buildRevision(rev: string, where: string): Promise<string> {
  console.log(`building ${rev} for the before figures…`);
  execFileSync('git', ['worktree', 'add', '--detach', '--force', where, rev], { cwd: ROOT, stdio: 'ignore' });
  cleanups.push(() => execFileSync('git', ['worktree', 'remove', '--force', where], { cwd: ROOT, stdio: 'ignore' }));
  execFileSync('ln', ['-s', join(ROOT, 'node_modules'), join(where, 'node_modules')]);
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(where, 'tsconfig.build.json')], {
    stdio: 'inherit',
  });
  return where;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-bench-'));
  if (!existsSync(join(ROOT, 'dist/src/bin.js'))) execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const ports = await Promise.all(Array.from({ length: 64 }, () => freePort()));
  await start(process.execPath, ['--import', 'tsx', 'bench/upstream.ts'], { BENCH_PORTS: ports.join(',') }, 0);
  if (TASKSET) execFileSync('taskset', ['-pc', '0', String(process.pid)], { stdio: 'ignore' });
  const upstream = `http://127.0.0.1:${ports[0]}`;

  const barePort = await freePort();
  const bareProc = await start(
    process.execPath,
    ['--import', 'tsx', 'bench/bare-proxy.ts'],
    { BENCH_TARGET: upstream, BENCH_PORT: String(barePort) },
    1,
  );
  const bare = `http://127.0.0.1:${barePort}`;
  const bareWsPort = await freePort();
  const bareWsProc = await start(
    process.execPath,
    ['--import', 'tsx', 'bench/bare-ws-proxy.ts'],
    { BENCH_TARGET: upstream, BENCH_PORT: String(bareWsPort) },
    1,
  );
  const bareWs = `http://127.0.0.1:${bareWsPort}`;

  let nginx: string | undefined;
  if (nginxAvailable()) {
    const port = await freePort();
    await mkdir(join(dir, 'nginx'), { recursive: true });
    const conf = join(dir, 'nginx', 'nginx.conf');
    await writeFile(
      conf,
      `daemon off; worker_processes 1; pid ${dir}/nginx/nginx.pid; error_log ${dir}/nginx/error.log;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path ${dir}/nginx;
  upstream node { server 127.0.0.1:${ports[0]}; keepalive 128; }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://node; proxy_http_version 1.1; proxy_set_header Connection ""; } } }\n`,
    );
    const child = spawn(TASKSET ? 'taskset' : 'nginx', TASKSET ? ['-c', '1', 'nginx', '-c', conf] : ['-c', conf], { stdio: 'ignore' });
    // nginx's master is stopped with SIGTERM, which takes its workers down with it
    // (SIGKILL would leave the workers running).
    cleanups.push(() => child.kill('SIGTERM'));
    await new Promise((r) => setTimeout(r, 500));
    nginx = `http://127.0.0.1:${port}`;
  } else {
    console.log('nginx: skipped (not installed and could not be installed here)');
  }

  const gateways: Array<{ label: string; url: string; key: string; pid: number | undefined }> = [];
  // Key counts are compared within one store kind: the file store from 1 to 10 000 keys,
  // the Redis store (the one for large key counts) from 1 to 1 000 000.
  const with1m = process.env.BENCH_SKIP_1M !== '1';
  const redis = new Redis('redis://127.0.0.1:6379/7');
  await redis.flushdb();
  redis.disconnect();
  for (const [label, count, kind] of [
    ['1 key', 1, 'file'],
    ['10 000 keys', 10_000, 'file'],
    ['1 key, Redis store', 1, 'redis'],
    // Every call asks Redis (no leases): what leases save.
    ['1 key, Redis store, exact per call', 1, 'redis-exact'],
    ...(with1m ? [['1 000 000 keys, Redis store', 1_000_000, 'redis']] : []),
  ] as Array<[string, number, 'file' | 'redis' | 'redis-exact']>) {
    const gdir = await mkdtemp(join(dir, 'gw-'));
    console.log(`preparing noderouter with ${label} (${kind} store)…`);
    const prefix = `nrb${count}${kind}:`;
    const key = kind === 'file' ? await fileStore(gdir, count) : await redisStore(count, prefix);
    const store =
      kind === 'file'
        ? `{ kind: file, path: "${gdir}/keys.json" }`
        : `{ kind: redis, url: "redis://127.0.0.1:6379/7", prefix: "${prefix}"${kind === 'redis-exact' ? ', leaseTokens: 0' : ''} }`;
    const { file, port } = await gatewayConfig(gdir, ports, store);
    const child = await start(process.execPath, ['dist/src/bin.js', 'serve', '--config', file], {}, 1, /serving (\S+)/);
    gateways.push({ label, url: `http://127.0.0.1:${port}`, key, pid: child.pid });
  }
  const [g1] = gateways;
  if (g1 === undefined) throw new Error('no gateway');
  const before = process.env.BENCH_BEFORE;
  let gBefore: (typeof gateways)[number] | undefined;
  if (before !== undefined && before !== '') {
    const gdir = await mkdtemp(join(dir, 'gw-'));
    const root = await buildRevision(before, join(dir, 'before'));
    const key = await fileStore(gdir, 1);
    const { file, port } = await gatewayConfig(gdir, ports, `{ kind: file, path: "${gdir}/keys.json" }`);
    const child = await start(process.execPath, [join(root, 'dist/src/bin.js'), 'serve', '--config', file], {}, 1, /serving (\S+)/);
    gBefore = { label: `1 key, before (${before})`, url: `http://127.0.0.1:${port}`, key, pid: child.pid };
  }
  const auth = (key: string) => ({ apikey: key });

  const plan: Array<{ scenario: string; target: string; url: string; load: Load; floor: string; pid?: number; isFloor?: boolean }> = [];
  const shapes: Record<string, Load> = {
    single: { method: 'POST', path: '/', body: call('eth_blockNumber') },
    'batch of 10': { method: 'POST', path: '/', body: batch(10) },
    'batch of 100': { method: 'POST', path: '/', body: batch(100) },
    'REST GET': { method: 'GET', path: '/cosmos/auth/v1beta1/params' },
    [`single at ${RATE} req/s`]: { method: 'POST', path: '/', body: call('eth_blockNumber'), rate: RATE },
  };
  const atRate = `single at ${RATE} req/s`;
  plan.push({ scenario: 'single', target: 'upstream direct', url: upstream, load: shapes.single as Load, floor: 'single' });
  for (const [shape, l] of Object.entries(shapes))
    plan.push({ scenario: shape, target: 'bare proxy', url: bare, load: l, floor: shape, pid: bareProc.pid, isFloor: true });
  const wsMessage: Load = { method: 'POST', path: '', body: call('eth_blockNumber'), ws: true };
  plan.push({
    scenario: 'WebSocket message',
    target: 'bare WS proxy',
    url: bareWs,
    load: wsMessage,
    floor: 'WebSocket message',
    pid: bareWsProc.pid,
    isFloor: true,
  });
  if (nginx !== undefined) plan.push({ scenario: 'single', target: 'nginx', url: nginx, load: shapes.single as Load, floor: 'single' });
  const nr = (scenario: string, g: (typeof gateways)[number], path: string, l: Load, floor: string): void => {
    plan.push({
      scenario,
      target: `noderouter, ${g.label}`,
      url: g.url,
      load: { ...l, path: path + (l.path === '/' ? '' : l.path), headers: auth(g.key) },
      floor,
      pid: g.pid,
    });
  };
  nr('single', g1, '/l1', shapes.single as Load, 'single');
  nr(atRate, g1, '/l1', shapes[atRate] as Load, atRate);
  if (gBefore !== undefined) {
    nr('single', gBefore, '/l1', shapes.single as Load, 'single');
    nr(atRate, gBefore, '/l1', shapes[atRate] as Load, atRate);
    nr('batch of 10', gBefore, '/l1', shapes['batch of 10'] as Load, 'batch of 10');
    nr('batch of 100', gBefore, '/l1', shapes['batch of 100'] as Load, 'batch of 100');
  }
  nr('batch of 10', g1, '/l1', shapes['batch of 10'] as Load, 'batch of 10');
  nr('batch of 100', g1, '/l1', shapes['batch of 100'] as Load, 'batch of 100');
  nr('REST GET', g1, '/rest', shapes['REST GET'] as Load, 'REST GET');
  nr(
    'archive routing',
    g1,
    '/archive',
    { method: 'POST', path: '/', body: call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0x1']) },
    'single',
  );
  // A balance read from one node, and the same read checked by agreement (3 asked, 2 agree).
  const balance: Load = {
    method: 'POST',
    path: '/',
    body: call('eth_getBalance', ['0x00000000000000000000000000000000000000aa', '0x3e0']),
  };
  nr('getBalance', g1, '/l1', balance, 'single');
  nr('agreement 2 of 3', g1, '/agree', balance, 'single');
  nr('pool of 8 nodes', g1, '/p8', shapes.single as Load, 'single');
  nr('pool of 64 nodes', g1, '/p64', shapes.single as Load, 'single');
  nr('WebSocket message', g1, '/l1', wsMessage, 'WebSocket message');
  for (const g of gateways.slice(1)) nr('single', g, '/l1', shapes.single as Load, 'single');

  // BENCH_ONLY=single,REST GET measures only those scenarios (quicker, while working on one).
  const only = process.env.BENCH_ONLY?.split(',').map((x) => x.trim());
  if (only !== undefined) plan.splice(0, plan.length, ...plan.filter((p) => only.includes(p.scenario)));
  // One short unrecorded pass, so every target is warm (JIT, connections) when measured.
  for (const p of plan) await load(p.url, p.load, WARMUP_SECONDS);
  const results = new Map<string, Result>();
  let rss1m = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? plan : [...plan].reverse();
    for (const p of order) {
      const id = `${p.scenario}|${p.target}`;
      process.stdout.write(`round ${round + 1}/${ROUNDS}: ${p.target} — ${p.scenario}… `);
      const cpu0 = await cpuOf(p.pid);
      const r = await load(p.url, p.load);
      const cpu1 = await cpuOf(p.pid);
      console.log(`${Math.round(r.rps)} req/s`);
      const acc = results.get(id) ?? { scenario: p.scenario, target: p.target, cpuUs: [], rps: [], p50: [], p99: [], errors: 0 };
      if (cpu0 !== undefined && cpu1 !== undefined && r.rps > 0) acc.cpuUs.push(((cpu1 - cpu0) / (r.served ?? r.rps * SECONDS)) * 1e6);
      acc.rps.push(r.rps);
      acc.p50.push(r.p50);
      acc.p99.push(r.p99);
      acc.errors += r.errors;
      results.set(id, acc);
      if (p.target.includes('1 000 000')) rss1m = Math.max(rss1m, await rssOf(gateways.at(-1)?.pid));
    }
  }
  const avg = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  // Latency percentiles are the median of the rounds: one round hit by a VM's stall would
  // otherwise move a mean of three by a third of the stall.
  const median = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = s.length >> 1;
    return s.length === 0 ? 0 : s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  };
  const floors = plan.filter((p) => p.isFloor === true);
  const floorOf = new Map(floors.map((p) => [p.scenario, avg(results.get(`${p.scenario}|${p.target}`)?.rps ?? [])]));
  const cpuFloor = new Map(floors.map((p) => [p.scenario, avg(results.get(`${p.scenario}|${p.target}`)?.cpuUs ?? [])]));
  const rows = plan.map((p) => {
    const r = results.get(`${p.scenario}|${p.target}`) as Result;
    const rps = avg(r.rps);
    const cpuUs = r.cpuUs.length === 0 ? undefined : avg(r.cpuUs);
    const floorCpu = cpuFloor.get(p.floor);
    return {
      scenario: p.scenario,
      target: p.target,
      rps: Math.round(rps),
      p50: median(r.p50),
      p99: median(r.p99),
      errors: r.errors,
      ratio: rps / (floorOf.get(p.floor) ?? rps),
      cpuUs,
      cpuRatio: cpuUs === undefined || floorCpu === undefined ? undefined : cpuUs / floorCpu,
    };
  });
  console.log(
    `\n${'scenario'.padEnd(22)} ${'target'.padEnd(44)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'errors'.padStart(7)} ${'vs bare'.padStart(8)} ${'CPU µs/req'.padStart(11)} ${'CPU vs bare'.padStart(12)}`,
  );
  for (const r of rows) {
    const cpu = r.cpuUs === undefined ? '-' : r.cpuUs.toFixed(0);
    const cpuRatio = r.cpuRatio === undefined ? '-' : `${r.cpuRatio.toFixed(2)}×`;
    console.log(
      `${r.scenario.padEnd(22)} ${r.target.padEnd(44)} ${String(r.rps).padStart(8)} ${r.p50.toFixed(2).padStart(7)} ${r.p99.toFixed(2).padStart(7)} ${String(r.errors).padStart(7)} ${`${(r.ratio * 100).toFixed(0)}%`.padStart(8)} ${cpu.padStart(11)} ${cpuRatio.padStart(12)}`,
    );
  }
  if (rss1m > 0) console.log(`\nnoderouter RSS under load with 1 000 000 keys in the store: ${(rss1m / 1048576).toFixed(0)} MB`);
  const machine = {
    cpus: cpus().length,
    cpu: cpus()[0]?.model ?? '',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    taskset: TASKSET,
  };
  const out = join(ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}.json`);
  await writeFile(
    out,
    `${JSON.stringify({ date: new Date().toISOString(), seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS, machine, rss1mBytes: rss1m, rows }, null, 2)}\n`,
  );
  console.log(`\nwritten to ${out}`);
  await rm(dir, { recursive: true, force: true });
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) c.kill('SIGKILL');
    for (const c of cleanups) c();
    if (process.env.BENCH_SKIP_1M !== '1') {
      const r = new Redis('redis://127.0.0.1:6379/7');
      void r.flushdb().finally(() => r.disconnect());
    }
  });
