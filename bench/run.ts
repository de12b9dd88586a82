// npm run bench — noderouter's own cost, measured against the floor in one run.
// On loopback it starts a fast upstream node, then loads in turn: the upstream
// directly; a bare pass-through proxy (node:http + undici Pool); nginx as a reverse
// proxy (installed from Debian's packages when absent, skipped with a line when it
// cannot be); and noderouter with auth, rate limits, metrics and logging on, in
// several scenarios. Load comes from wrk (Debian's package, installed when absent;
// autocannon in this process only as a fallback, said in the output), pinned to core 0
// with this process; the upstream and the target share core 1. Rounds alternate the
// targets. CPU per request is each target's user + system time (its children's too)
// from /proc over the requests it served. A sanity check fails the run when the
// upstream answering directly is not 1.5× every Node proxy, or wrk used 90% of its core
// (the load generator set the ceiling: bench/sanity.ts). Prints one table and writes
// bench/results/<date>.json.
//
// BENCH_SECONDS (default 5), BENCH_ROUNDS (default 2), BENCH_CONNECTIONS (default 64),
// BENCH_REWARM (default 1): seconds of unrecorded load right before each measurement,
// BENCH_SKIP_1M=1 to leave out the 1 000 000-key store, BENCH_BEFORE=<git revision> to
// build that revision too and measure it beside this one (single calls, at full load and
// at the fixed rate, batches, cache hits and WebSocket messages, 1 key): a before and after in one run.
// `npm run bench -- --check` is the guard against regressions on the request path: the
// single-call, batch-of-100 and cache-hit rows of this build against BENCH_BEFORE
// (default: the last tag, else the merge base with origin/main), three alternating
// rounds, failing (exit 1) when any row's CPU per request grew more than 10% (the
// median of the rounds). Run it for every change to the request path.
// BENCH_ONLY=<scenario,…> measures only the named scenarios (`limit accuracy` names
// those, `features` every `feature: …` row; upstream direct and the bare proxy's single
// calls always run, for the sanity check, and the `feature: plain` row with any feature
// row), and writes its results to the temp dir. BENCH_ONLY=records measures issue #31's
// point 5 alone: the single call on the SQLite record (the 1-key row), on a PostgreSQL
// record with 1 key and with 1 000 000 (bench/pg-record.ts, on BENCH_PG_URL, default the
// test server 127.0.0.1:5432 trust auth, database `test`, a schema per gateway, dropped
// at the end), against BENCH_BEFORE's (92dd51c, the last build on the file store).
// The `feature: …` rows (bench/features.ts) are the single call where an optional feature
// is configured but not used by it, each against `feature: plain` (every feature off).
// The run ends with issue #30's targets (bench/targets.ts), each met or missed by how much.
// BENCH_RATE (default 1000) is the request rate of the fixed-rate scenario, where
// latency is compared below saturation. BENCH_LIMIT_RATE (default 200) is the rate limit
// of the limit-accuracy scenarios; BENCH_LEASE (default `leaseMs: 200, leaseTokens: auto`)
// the lease settings of the Redis hot state in the scenarios with leases. Rows named
// "Redis hot state" use its defaults, whatever they are in the build measured.
//
// Keys are written into a SQLite record (store.record) before each gateway starts; a build
// from before the record (BENCH_BEFORE), whose check-config does not know store.record, gets
// the file store or the Redis store it knows. Scenarios that need a setting this build does
// not know (server.workers, store.hot.leaseMs) are skipped with a line saying so:
// check-config decides.

import autocannon from 'autocannon';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { newKeyRecord, type KeyRecord } from '../src/auth/key-store.js';
import { SqliteDatabase } from '../src/record/sqlite-database.js';
import { writeRows } from '../src/record/sqlite-rows.js';
import { dropPgSchemas, pgRecordConfig, pgSchema, pgStore, pgUnreachable, recordActivity, type RecordActivity } from './pg-record.js';
import type { KeyRestrictions } from '../src/auth/restrictions.js';
import { chainYaml } from './chain-yaml.js';
import { FEATURE_PREFIX, featureFigures, featureKept, featureSetup } from './features.js';
import { freePort } from './measure.js';
import { cpuSecondsOfTree, reapedChildrenCpuSeconds } from './proc.js';
import { rateLoad } from './rate-load.js';
import { checkSanity, MIN_DIRECT_RATIO } from './sanity.js';
import { issue30Targets, issue31Targets, type TargetLine } from './targets.js';
import { ensureWrk, runWrk, type WrkResult } from './wrk.js';
import { wsLoad } from './ws-load.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CHECK = process.argv.includes('--check');
const ROUNDS = CHECK ? 3 : Number(process.env.BENCH_ROUNDS ?? 2);
/** The rows --check compares, and the growth of CPU per request it lets pass. */
const CHECKED = ['single', 'batch of 100', 'cache hit'];
const CHECK_LIMIT = 1.1;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
/**
 * At full load every target is saturated and its latency is mostly queueing (connections ÷
 * throughput), so a slower target shows a longer p99 for that reason alone. The added
 * latency of a hop is read at a fixed rate well below every target's capacity instead.
 */
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const LIMIT_RATE = Number(process.env.BENCH_LIMIT_RATE ?? 200);
const LEASE = process.env.BENCH_LEASE ?? 'leaseMs: 200, leaseTokens: auto';
/** An unrecorded pass per target first, so JIT and connections are warm when measured. */
const WARMUP_SECONDS = 2;
/**
 * And an unrecorded second of the same load right before each measurement, so every row
 * starts on a process already under load, as a gateway in service is, not one that sat
 * idle while the other targets were measured (its heap may have been shrunk meanwhile).
 * In short runs the first row measured on a process after idling tended to cost more
 * than the next row on it. BENCH_REWARM=0 measures without it.
 */
const REWARM_SECONDS = Number(process.env.BENCH_REWARM ?? 1);
const TASKSET = existsSync('/usr/bin/taskset');
/** Issue #31, point 5: the single call with the keys in PostgreSQL, against the file store's (BENCH_BEFORE). */
const PG_1 = '1 key (PostgreSQL record)';
const PG_1M = '1 000 000 keys (PostgreSQL record)';
/** BENCH_ONLY=records: the single call on each record (the 1-key row is on SQLite) and BENCH_BEFORE's. */
const RECORDS = 'records';
const RECORD_TARGETS = ['1 key', PG_1, PG_1M];
const mb = (bytes: number | undefined): number => Math.round((bytes ?? 0) / 1048576);
/** The load generator (and this process) run on core 0; the upstream and the target on core 1. */
const LOAD_CORE = '0';
const TARGET_CORE = '1';
const ALL_CORES = '0,1';
const children: ChildProcess[] = [];
/** Run at the end, whatever happened (worktrees of built revisions). */
const cleanups: Array<() => void> = [];
let wrk = false;

let started = 0;

/**
 * Start a child pinned to `cores`; resolve once it prints `ready` (or `serving`). Its
 * output goes to a file, as a log shipper would take it: a pipe read by this process,
 * busy generating load, would hold the child's synchronous stdout writes back.
 */
async function start(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  cores: string,
  marker = /ready|serving/,
): Promise<ChildProcess> {
  const log = join(tmpdir(), `noderouter-bench-${process.pid}-${++started}.log`);
  const fd = openSync(log, 'w');
  const child = spawn(TASKSET ? 'taskset' : cmd, TASKSET ? ['-c', cores, cmd, ...args] : args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', fd, 'inherit'],
  });
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

/** Pin a running process, all its threads, to `cores`. */
function pin(pid: number | undefined, cores: string): void {
  if (TASKSET && pid !== undefined) execFileSync('taskset', ['-a', '-pc', cores, String(pid)], { stdio: 'ignore' });
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
  /** CPU microseconds the target process (and its children) spent per request. */
  cpuUs: number[];
  /** Share of a core the load generator used (1 = a whole core). */
  loadCpu: number[];
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
  /** Requests the target answered during the whole load. */
  readonly served: number;
  /** Share of a core the load generator used over the load. */
  readonly loadCpu: number;
}

/** Which generator drives each kind of load, as printed and recorded. */
const GENERATORS = {
  http: (): string =>
    wrk
      ? 'wrk (one thread, pinned to core 0, bench/wrk-jsonrpc.lua)'
      : 'autocannon in the bench process (FALLBACK: wrk could not be installed; the load generator may saturate)',
  rate: 'bench/rate-load.ts, an open-loop generator in the bench process (wrk2 is not packaged in Debian)',
  ws: 'bench/ws-load.ts in the bench process (wrk speaks HTTP only)',
};

async function inProcess(
  run: () => Promise<{ rps: number; p50: number; p99: number; errors: number; served?: number }>,
  seconds: number,
): Promise<LoadResult> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await run();
  const cpu = process.cpuUsage(cpu0);
  const wall = (performance.now() - t0) / 1000;
  return { ...r, served: r.served ?? r.rps * seconds, loadCpu: (cpu.user + cpu.system) / 1e6 / wall };
}

async function wrkLoad(
  url: string,
  l: Load,
  seconds: number,
  cores: string | undefined,
  connections = CONNECTIONS,
): Promise<WrkResult & { loadCpu: number }> {
  const cpu0 = await reapedChildrenCpuSeconds();
  const r = await runWrk(
    { url: url + l.path, method: l.method, body: l.body, headers: l.headers },
    { connections, seconds, cores: TASKSET ? cores : undefined },
  );
  return { ...r, loadCpu: ((await reapedChildrenCpuSeconds()) - cpu0) / r.seconds };
}

async function load(url: string, l: Load, cores: string, seconds = SECONDS): Promise<LoadResult> {
  if (l.ws === true)
    return inProcess(() => wsLoad(url.replace(/^http/, 'ws') + l.path, l.headers ?? {}, l.body ?? '', CONNECTIONS, seconds), seconds);
  if (l.rate !== undefined) {
    const headers = { 'content-type': 'application/json', ...l.headers };
    const req = { method: l.method, path: l.path === '' ? '/' : l.path, body: l.body, headers };
    return inProcess(() => rateLoad(url, req, l.rate as number, CONNECTIONS, seconds), seconds);
  }
  if (wrk) {
    const r = await wrkLoad(url, l, seconds, cores);
    return { rps: r.rps, p50: r.p50, p99: r.p99, errors: r.non2xx + r.socketErrors, served: r.requests, loadCpu: r.loadCpu };
  }
  return inProcess(async () => {
    const r = await autocannon({
      url: url + l.path,
      method: l.method,
      body: l.body,
      headers: { 'content-type': 'application/json', ...l.headers },
      connections: CONNECTIONS,
      duration: seconds,
    });
    return {
      rps: r.requests.average,
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.errors + r.timeouts + r.non2xx,
      served: r.requests.total,
    };
  }, seconds);
}

const call = (method: string, params: unknown[] = []): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const batch = (n: number): string =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_blockNumber' })));

/** What one noderouter of the bench is: its keys and store, and settings beyond the defaults. */
interface GatewaySpec {
  readonly label: string;
  readonly keys: number;
  /** Where the limits are kept (the keys are in a SQLite record, or a file or Redis store for a build from before it). */
  readonly hot: 'memory' | 'redis';
  /** Where the keys are (`sqlite`, the default: a file of the gateway's own; `postgres`: a schema of its own on BENCH_PG_URL). */
  readonly record?: 'sqlite' | 'postgres';
  /** Tier of our key: `bench` (limits far above the load) or `limited` (LIMIT_RATE). */
  readonly tier?: 'bench' | 'limited';
  /** More entries of the `store` mapping (`leaseMs: 100, leaseTokens: 20`). */
  readonly store?: string;
  /** More entries of the `server` mapping (`workers: 2`). */
  readonly server?: string;
  /** The settings this spec needs beyond today's, named in the line that skips it. */
  readonly needs?: string;
  /** CPU list the gateway runs on. */
  readonly cores: string;
  /** Instances started on one store (Redis: they share the key's limits). */
  readonly instances?: number;
  /** YAML lines under `chains:` instead of the bench's usual chains (the feature rows). */
  readonly chains?: string;
  /** More top-level YAML lines (`tracing: …`). */
  readonly top?: string;
  /** File store: keys beside ours, by name, with their restrictions (the bench tier). */
  readonly namedKeys?: Readonly<Record<string, KeyRestrictions>>;
}

interface Gateway {
  readonly label: string;
  readonly url: string;
  readonly key: string;
  /** The values of the spec's named keys. */
  readonly named: Readonly<Record<string, string>>;
  readonly pid: number | undefined;
  readonly child: ChildProcess;
  /** Where its keys are, as printed: `SQLite record`, `PostgreSQL record`, `file store`, `Redis store`. */
  readonly store: string;
  /** Milliseconds from spawning the gateway to its `serving` line. */
  readonly startMs: number;
  /** The PostgreSQL record's schema, when its keys are there. */
  readonly schema?: string;
}

/** The bench's usual chains: single calls, a cache, archive routing, pools, REST, agreement. */
function benchChains(ports: number[]): string {
  return [
    chainYaml('l1', 'evm', [ports[0] as number]),
    chainYaml('cached', 'evm', [ports[0] as number], '', 'memory'),
    chainYaml('archive', 'evm', [ports[0] as number, ports[1] as number], '    options: { fullHistory: 10 }\n    # archive'),
    chainYaml('p8', 'evm', ports.slice(0, 8)),
    chainYaml('p64', 'evm', ports.slice(0, 64)),
    chainYaml('rest', 'sdk-rest', [ports[0] as number]),
    chainYaml('agree', 'evm', ports.slice(0, 3), '    consensus: { ask: 3, agree: 2 }'),
  ].join('\n');
}

async function gatewayConfig(
  dir: string,
  store: string,
  server: string,
  chains: string,
  top: string,
): Promise<{ file: string; port: number }> {
  const file = join(dir, `gateway-${await freePort()}.yaml`);
  const port = await freePort();
  await writeFile(
    file,
    [
      `server: { host: 127.0.0.1, port: ${port}, adminHost: 127.0.0.1, adminPort: ${await freePort()}${server === '' ? '' : `, ${server}`} }`,
      'log: { level: info }',
      `store: ${store}`,
      'keys: { cacheMaxEntries: 10000 }',
      top,
      'tiers:',
      '  bench: { rate: 1000000, burst: 1000000, maxBatch: 1000, archive: true, wsConnections: unlimited }',
      `  limited: { rate: ${LIMIT_RATE}, burst: ${LIMIT_RATE} }`,
      'chains:',
      chains,
      '',
    ].join('\n'),
  );
  return { file, port };
}

/** `count` keys, ours among them, and the named keys (the bench tier), with their values. */
function benchKeys(
  count: number,
  tier: string,
  namedKeys: Readonly<Record<string, KeyRestrictions>> = {},
): { keys: KeyRecord[]; key: string; named: Record<string, string> } {
  const ours = newKeyRecord({ account: 'bench', tier });
  const keys = [ours.record];
  for (let i = 1; i < count; i++) keys.push(newKeyRecord({ account: `a${i % 1000}`, tier: 'bench' }).record);
  const named: Record<string, string> = {};
  for (const [name, restrictions] of Object.entries(namedKeys)) {
    const k = newKeyRecord({ account: 'bench', tier: 'bench', label: name, restrictions });
    keys.push(k.record);
    named[name] = k.value;
  }
  return { keys, key: ours.value, named };
}

/** A file store of `count` keys (a build from before the record), ours among them, and the named keys; returns their values. */
async function fileStore(
  dir: string,
  count: number,
  tier: string,
  namedKeys: Readonly<Record<string, KeyRestrictions>> = {},
): Promise<{ key: string; named: Record<string, string> }> {
  const { keys, key, named } = benchKeys(count, tier, namedKeys);
  await writeFile(join(dir, 'keys.json'), JSON.stringify({ version: 1, keys }));
  return { key, named };
}

/** A SQLite record of `count` keys, ours among them, and the named keys, written in batches; returns their values. */
async function recordStore(
  path: string,
  count: number,
  tier: string,
  namedKeys: Readonly<Record<string, KeyRestrictions>> = {},
): Promise<{ key: string; named: Record<string, string> }> {
  const { keys, key, named } = benchKeys(count, tier, namedKeys);
  const db = SqliteDatabase.open(path);
  try {
    for (let i = 0; i < keys.length; i += 20_000)
      writeRows(
        db,
        keys.slice(i, i + 20_000).map((k) => ({ kind: 'key', key: k })),
      );
  } finally {
    db.close();
  }
  return { key, named };
}

/** A PostgreSQL record on `schema` of `count` keys, ours and the named keys among them (the others synthetic); returns their values. */
async function pgRecord(
  schema: string,
  count: number,
  tier: string,
  namedKeys: Readonly<Record<string, KeyRestrictions>> = {},
): Promise<{ key: string; named: Record<string, string> }> {
  const { keys, key, named } = benchKeys(1, tier, namedKeys);
  await pgStore(schema, count - 1, keys);
  return { key, named };
}

/** A Redis store (db 7, under `prefix`) of `count` keys, ours among them (a build from before the record). */
async function redisStore(count: number, prefix: string, tier: string): Promise<string> {
  const redis = new Redis('redis://127.0.0.1:6379/7');
  const ours = newKeyRecord({ account: 'bench', tier });
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

/** check-config's verdict on a config: undefined when accepted, the unknown setting's line when it names one; throws otherwise. */
function unknownSetting(bin: string, file: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [bin, 'check-config', file], { cwd: ROOT }, (err, stdout, stderr) => {
      if (err === null) return resolve(undefined);
      const text = `${stdout}\n${stderr}`;
      const line = text.split('\n').find((l) => l.includes('is not a known setting'));
      if (line !== undefined) resolve(line.trim());
      else reject(new Error(`check-config refused the bench's config ${file}:\n${text.slice(0, 4000)}`));
    });
  });
}

let gatewayDirs = 0;
/** Start the gateways of a spec (one per instance), or undefined with a printed line when this build does not know a setting it needs. */
async function startGateways(spec: GatewaySpec, dir: string, ports: number[], root = ROOT): Promise<Gateway[] | undefined> {
  const gdir = join(dir, `gw-${++gatewayDirs}`);
  await mkdir(gdir, { recursive: true });
  const tier = spec.tier ?? 'bench';
  const prefix = `nrb${gatewayDirs}:`;
  const extra = spec.store === undefined ? '' : `, ${spec.store}`;
  const redisUrl = `url: "redis://127.0.0.1:6379/7", prefix: "${prefix}"${extra}`;
  const hot = spec.hot === 'memory' ? '{ kind: memory }' : `{ kind: redis, ${redisUrl} }`;
  // A build from before the record: keys in a file, or everything in Redis.
  const legacy = spec.hot === 'memory' ? `{ kind: file, path: "${gdir}/keys.json"${extra} }` : `{ kind: redis, ${redisUrl} }`;
  const bin = join(root, 'dist/src/bin.js');
  const write = async (store: string): Promise<Array<{ file: string; port: number }>> => {
    const out = [];
    for (let i = 0; i < (spec.instances ?? 1); i++)
      out.push(await gatewayConfig(gdir, store, spec.server ?? '', spec.chains ?? benchChains(ports), spec.top ?? ''));
    return out;
  };
  const schema = spec.record === 'postgres' ? pgSchema() : undefined;
  const record = schema === undefined ? `{ kind: sqlite, path: "${gdir}/noderouter.db" }` : pgRecordConfig(schema);
  let configs = await write(`{ record: ${record}, hot: ${hot} }`);
  let refused = await unknownSetting(bin, (configs[0] as { file: string }).file);
  const recorded = refused === undefined || !/\bstore\.(record|hot) is not a known setting/.test(refused);
  // A PostgreSQL record has no equivalent in a build from before the record.
  if (!recorded && schema === undefined) {
    configs = await write(legacy);
    refused = await unknownSetting(bin, (configs[0] as { file: string }).file);
  }
  if (refused !== undefined) {
    console.log(
      `skipped: noderouter, ${spec.label} — this build does not recognise ${spec.needs ?? 'a setting it needs'} (check-config: ${refused})`,
    );
    return undefined;
  }
  console.log(`preparing noderouter, ${spec.label}…`);
  const seeded = performance.now();
  const store =
    schema !== undefined ? 'PostgreSQL record' : recorded ? 'SQLite record' : spec.hot === 'memory' ? 'file store' : 'Redis store';
  const { key, named } =
    schema !== undefined
      ? await pgRecord(schema, spec.keys, tier, spec.namedKeys)
      : recorded
        ? await recordStore(join(gdir, 'noderouter.db'), spec.keys, tier, spec.namedKeys)
        : spec.hot === 'memory'
          ? await fileStore(gdir, spec.keys, tier, spec.namedKeys)
          : { key: await redisStore(spec.keys, prefix, tier), named: {} };
  if (spec.keys > 1000) console.log(`  ${spec.keys} keys written to the ${store} in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);
  const out: Gateway[] = [];
  for (const { file, port } of configs) {
    const t0 = performance.now();
    const child = await start(process.execPath, [bin, 'serve', '--config', file], {}, spec.cores, /serving (\S+)/);
    const startMs = performance.now() - t0;
    out.push({ label: spec.label, url: `http://127.0.0.1:${port}`, key, named, pid: child.pid, child, store, startMs, schema });
  }
  return out;
}

function stopGateways(gs: readonly Gateway[]): Promise<void> {
  return Promise.all(
    gs.map(
      (g) =>
        new Promise<void>((resolve) => {
          if (g.child.exitCode !== null || g.child.signalCode !== null) return resolve();
          g.child.once('exit', () => resolve());
          g.child.kill('SIGKILL');
        }),
    ),
  ).then(() => undefined);
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

/** nginx as a reverse proxy with upstream keep-alive, one worker; its master's pid (the worker is its child). */
async function startNginx(dir: string, upstreamPort: number): Promise<{ url: string; pid: number | undefined } | undefined> {
  if (!nginxAvailable()) {
    console.log('nginx: skipped (not installed and could not be installed here)');
    return undefined;
  }
  const port = await freePort();
  await mkdir(join(dir, 'nginx'), { recursive: true });
  const conf = join(dir, 'nginx', 'nginx.conf');
  await writeFile(
    conf,
    `daemon off; worker_processes 1; pid ${dir}/nginx/nginx.pid; error_log ${dir}/nginx/error.log;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path ${dir}/nginx;
  upstream node { server 127.0.0.1:${upstreamPort}; keepalive 128; }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://node; proxy_http_version 1.1; proxy_set_header Connection ""; } } }\n`,
  );
  const child = spawn(TASKSET ? 'taskset' : 'nginx', TASKSET ? ['-c', TARGET_CORE, 'nginx', '-c', conf] : ['-c', conf], {
    stdio: 'ignore',
  });
  // nginx's master is stopped with SIGTERM, which takes its workers down with it
  // (SIGKILL would leave the workers running).
  cleanups.push(() => child.kill('SIGTERM'));
  const url = `http://127.0.0.1:${port}`;
  for (let waited = 0; waited < 10_000; waited += 100) {
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      return { url, pid: child.pid };
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log('nginx: skipped (did not start)');
  return undefined;
}

/** A git revision of this repository, built beside it (its dist/), on this checkout's node_modules. */
function buildRevision(rev: string, where: string): string {
  console.log(`building ${rev} for the before figures…`);
  execFileSync('git', ['worktree', 'add', '--detach', '--force', where, rev], { cwd: ROOT, stdio: 'ignore' });
  cleanups.push(() => execFileSync('git', ['worktree', 'remove', '--force', where], { cwd: ROOT, stdio: 'ignore' }));
  execFileSync('ln', ['-s', join(ROOT, 'node_modules'), join(where, 'node_modules')]);
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(where, 'tsconfig.build.json')], {
    stdio: 'inherit',
  });
  return where;
}

interface Entry {
  readonly scenario: string;
  readonly target: string;
  readonly url: string;
  readonly load: Load;
  /** The bare proxy's scenario this row is compared with. */
  readonly floor: string;
  readonly pid?: number;
  readonly isFloor?: boolean;
  /** Cores of the load generator; the gateway was started on its spec's cores. */
  readonly cores: string;
  /** The upstream runs on every core too while this row is measured (the workers rows). */
  readonly allCores?: boolean;
}

interface LimitRow {
  readonly scenario: string;
  readonly limit: number;
  readonly admitted: number;
  readonly rejected: number;
  readonly seconds: number;
  readonly expected: number;
  /** admitted ÷ expected − 1. */
  readonly deviation: number;
}

/**
 * One key of the `limited` tier hammered through every gateway of `gs` at once for
 * SECONDS: the calls admitted (2xx) against what the limit allows over that time (the
 * burst, then the rate). A first unrecorded second warms the gateways (a cold one's
 * first calls are slow, and the time they take would count against it); then the key
 * rests until its bucket is full again (burst ÷ rate) and leases taken have ended.
 */
async function limitAccuracy(scenario: string, gs: readonly Gateway[]): Promise<LimitRow> {
  const l: Load = { method: 'POST', path: '/l1', body: call('eth_blockNumber'), headers: { apikey: (gs[0] as Gateway).key } };
  const connections = Math.max(1, Math.floor(CONNECTIONS / gs.length));
  await Promise.all(gs.map((g) => wrkLoad(g.url, l, 1, LOAD_CORE, connections)));
  await new Promise((r) => setTimeout(r, 2000));
  const runs = await Promise.all(gs.map((g) => wrkLoad(g.url, l, SECONDS, LOAD_CORE, connections)));
  const admitted = runs.reduce((a, r) => a + r.requests - r.non2xx - r.socketErrors, 0);
  const rejected = runs.reduce((a, r) => a + r.non2xx, 0);
  const seconds = Math.max(...runs.map((r) => r.seconds));
  const expected = LIMIT_RATE + LIMIT_RATE * seconds;
  return { scenario, limit: LIMIT_RATE, admitted, rejected, seconds, expected, deviation: admitted / expected - 1 };
}

/** The revision --check compares with: BENCH_BEFORE, else the last tag, else the merge base with origin/main. */
function checkedAgainst(): string {
  const given = process.env.BENCH_BEFORE;
  if (given !== undefined && given !== '') return given;
  const git = (...args: string[]): string | undefined => {
    try {
      return (
        execFileSync('git', args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
          .toString()
          .trim() || undefined
      );
    } catch {
      return undefined;
    }
  };
  const found = git('describe', '--tags', '--abbrev=0') ?? git('merge-base', 'HEAD', 'origin/main');
  if (found === undefined) throw new Error('--check compares with BENCH_BEFORE: set it (this clone has no tag and no origin/main)');
  return found;
}

/** A row's verdict against one of issue #21's targets: "met" or "missed", with the figure. */
function verdict(ok: boolean, by: string): string {
  return ok ? `met (${by})` : `missed (${by})`;
}

/** One of issue #21's targets as a line of the printout; whether met is read back from its verdict. */
function oldTarget(target: string, result: string): TargetLine {
  return { target, result, met: result.startsWith('met') ? true : result.startsWith('missed') ? false : undefined };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-bench-'));
  if (!existsSync(join(ROOT, 'dist/src/bin.js'))) execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  wrk = ensureWrk();
  console.log(`load generator (HTTP at full load): ${GENERATORS.http()}`);
  console.log(`load generator (fixed rate): ${GENERATORS.rate}`);
  console.log(`load generator (WebSocket): ${GENERATORS.ws}`);
  if (!TASKSET) console.log('taskset is absent: nothing is pinned, and the load generator competes with the targets');
  const ports = await Promise.all(Array.from({ length: 64 }, () => freePort()));
  const upstreamProc = await start(
    process.execPath,
    ['--import', 'tsx', 'bench/upstream.ts'],
    { BENCH_PORTS: ports.join(',') },
    TARGET_CORE,
  );
  pin(process.pid, LOAD_CORE);
  const upstream = `http://127.0.0.1:${ports[0]}`;

  const barePort = await freePort();
  const bareProc = await start(
    process.execPath,
    ['--import', 'tsx', 'bench/bare-proxy.ts'],
    { BENCH_TARGET: upstream, BENCH_PORT: String(barePort) },
    TARGET_CORE,
  );
  const bare = `http://127.0.0.1:${barePort}`;
  const bareWsPort = await freePort();
  const bareWsProc = await start(
    process.execPath,
    ['--import', 'tsx', 'bench/bare-ws-proxy.ts'],
    { BENCH_TARGET: upstream, BENCH_PORT: String(bareWsPort) },
    TARGET_CORE,
  );
  const bareWs = `http://127.0.0.1:${bareWsPort}`;
  const nginx = CHECK ? undefined : await startNginx(dir, ports[0] as number);

  // Key counts: 1 to 10 000 keys in the record with the memory hot state, 1 to 1 000 000
  // with the Redis hot state (as before the record, when large key counts meant Redis).
  const redis = new Redis('redis://127.0.0.1:6379/7');
  await redis.flushdb();
  redis.disconnect();
  const skip1m = process.env.BENCH_SKIP_1M === '1';
  const specs: GatewaySpec[] = [
    { label: '1 key', keys: 1, hot: 'memory', cores: TARGET_CORE },
    { label: '10 000 keys', keys: 10_000, hot: 'memory', cores: TARGET_CORE },
    { label: '1 key (Redis hot state)', keys: 1, hot: 'redis', cores: TARGET_CORE },
    ...(skip1m ? [] : [{ label: '1 000 000 keys (Redis hot state)', keys: 1_000_000, hot: 'redis' as const, cores: TARGET_CORE }]),
    // Issue #31, point 5: the keys in PostgreSQL, the memory hot state (as the 1-key row on
    // SQLite, and the file store of a build from before the record).
    { label: PG_1, keys: 1, hot: 'memory', record: 'postgres', cores: TARGET_CORE },
    ...(skip1m ? [] : [{ label: PG_1M, keys: 1_000_000, hot: 'memory' as const, record: 'postgres' as const, cores: TARGET_CORE }]),
    {
      label: '1 key (Redis hot state with leases)',
      keys: 1,
      hot: 'redis',
      store: LEASE,
      needs: 'store.hot.leaseMs / store.hot.leaseTokens',
      cores: TARGET_CORE,
    },
    {
      label: '1 key (Redis hot state, exact per-request limits)',
      keys: 1,
      hot: 'redis',
      store: 'leaseTokens: 0',
      needs: 'store.hot.leaseTokens',
      cores: TARGET_CORE,
    },
    // Workers: the gateway, the upstream and wrk all run on both cores (as an operator
    // would run them), one worker against two.
    { label: '1 worker, all cores', keys: 1, hot: 'memory', server: 'workers: 1', needs: 'server.workers', cores: ALL_CORES },
    { label: '2 workers, all cores', keys: 1, hot: 'memory', server: 'workers: 2', needs: 'server.workers', cores: ALL_CORES },
  ];
  const gateways = new Map<string, Gateway>();
  const skipped: string[] = [];
  // BENCH_ONLY=single,REST GET measures only those scenarios (quicker, while working on one).
  const only = CHECK ? CHECKED : process.env.BENCH_ONLY?.split(',').map((x) => x.trim());
  // The check compares one key on the embedded default, before and after: nothing else is
  // started. Every gateway but the 1-key one serves single calls only, so BENCH_ONLY
  // without `single` starts none of them, and `records` the PostgreSQL ones alone.
  if (CHECK) specs.splice(1);
  const wanted = (spec: GatewaySpec): boolean =>
    spec.label === '1 key' ||
    only === undefined ||
    only.includes('single') ||
    (only.includes(RECORDS) && RECORD_TARGETS.includes(spec.label));
  const unwanted = new Set(specs.filter((x) => !wanted(x)).map((x) => x.label));
  specs.splice(0, specs.length, ...specs.filter(wanted));
  if (specs.some((s) => s.record === 'postgres')) {
    const why = await pgUnreachable();
    if (why !== undefined) {
      for (const s of specs.filter((x) => x.record === 'postgres')) skipped.push(`${s.label}: ${why}`);
      specs.splice(0, specs.length, ...specs.filter((x) => x.record !== 'postgres'));
    }
  }
  for (const spec of specs) {
    const gs = await startGateways(spec, dir, ports);
    if (gs === undefined) skipped.push(`${spec.label}: this build does not recognise ${spec.needs ?? '?'}`);
    else gateways.set(spec.label, gs[0] as Gateway);
  }
  // The feature rows' gateways, started only when one of their rows is measured.
  const features = featureSetup(ports, await freePort());
  const featureGateways = new Map<string, Gateway>();
  for (const spec of features.gateways) {
    if (!features.rows.some((r) => r.gateway === spec.label && featureKept(r.scenario, only))) continue;
    const gs = await startGateways(
      { label: spec.label, keys: 1, hot: 'memory', cores: TARGET_CORE, chains: spec.chains, top: spec.top, namedKeys: spec.keys },
      dir,
      ports,
    );
    if (gs === undefined) skipped.push(`${spec.label}: this build does not recognise one of its settings`);
    else featureGateways.set(spec.label, gs[0] as Gateway);
  }
  const g1 = gateways.get('1 key') as Gateway;
  const before = CHECK ? checkedAgainst() : process.env.BENCH_BEFORE;
  let gBefore: Gateway | undefined;
  if (before !== undefined && before !== '') {
    const root = buildRevision(before, join(dir, 'before'));
    const gs = await startGateways({ label: `1 key, before (${before})`, keys: 1, hot: 'memory', cores: TARGET_CORE }, dir, ports, root);
    gBefore = gs?.[0];
  }
  // How long each gateway took to serve, and its size before any load: a record read
  // whole at start would show here, growing with its keys.
  const startedRss = new Map<string, number>();
  for (const g of [...gateways.values(), ...(gBefore === undefined ? [] : [gBefore])]) {
    startedRss.set(g.label, await rssOf(g.pid));
    console.log(
      `noderouter, ${g.label}${g.label.includes(g.store) ? '' : ` (${g.store})`}: serving ${(g.startMs / 1000).toFixed(2)} s after its start, RSS ${mb(startedRss.get(g.label))} MB`,
    );
  }
  // A cache hit must be one: the second identical call is answered from the cache.
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${g1.url}/cached`, {
      method: 'POST',
      headers: { apikey: g1.key, 'content-type': 'application/json' },
      body: call('eth_chainId'),
    });
    await res.arrayBuffer();
    if (i === 1 && res.headers.get('x-cache') !== 'HIT')
      throw new Error(`the cache-hit scenario is not a hit (x-cache: ${res.headers.get('x-cache')})`);
  }

  const plan: Entry[] = [];
  const shapes: Record<string, Load> = {
    single: { method: 'POST', path: '/', body: call('eth_blockNumber') },
    'batch of 10': { method: 'POST', path: '/', body: batch(10) },
    'batch of 100': { method: 'POST', path: '/', body: batch(100) },
    'REST GET': { method: 'GET', path: '/cosmos/auth/v1beta1/params' },
    [`single at ${RATE} req/s`]: { method: 'POST', path: '/', body: call('eth_blockNumber'), rate: RATE },
  };
  const atRate = `single at ${RATE} req/s`;
  plan.push({
    scenario: 'single',
    target: 'upstream direct',
    url: upstream,
    load: shapes.single as Load,
    floor: 'single',
    pid: upstreamProc.pid,
    cores: LOAD_CORE,
  });
  for (const [shape, l] of Object.entries(shapes))
    plan.push({
      scenario: shape,
      target: 'bare proxy',
      url: bare,
      load: l,
      floor: shape,
      pid: bareProc.pid,
      isFloor: true,
      cores: LOAD_CORE,
    });
  const wsMessage: Load = { method: 'POST', path: '', body: call('eth_blockNumber'), ws: true };
  plan.push({
    scenario: 'WebSocket message',
    target: 'bare WS proxy',
    url: bareWs,
    load: wsMessage,
    floor: 'WebSocket message',
    pid: bareWsProc.pid,
    isFloor: true,
    cores: LOAD_CORE,
  });
  if (nginx !== undefined)
    plan.push({
      scenario: 'single',
      target: 'nginx',
      url: nginx.url,
      load: shapes.single as Load,
      floor: 'single',
      pid: nginx.pid,
      cores: LOAD_CORE,
    });
  const nr = (scenario: string, g: Gateway | undefined, path: string, l: Load, floor: string, allCores = false): void => {
    if (g === undefined) return;
    plan.push({
      scenario,
      target: `noderouter, ${g.label}`,
      url: g.url,
      load: { ...l, path: path + (l.path === '/' ? '' : l.path), headers: { apikey: g.key } },
      floor,
      pid: g.pid,
      cores: allCores ? ALL_CORES : LOAD_CORE,
      allCores,
    });
  };
  nr('single', g1, '/l1', shapes.single as Load, 'single');
  nr(atRate, g1, '/l1', shapes[atRate] as Load, atRate);
  nr('single', gBefore, '/l1', shapes.single as Load, 'single');
  nr(atRate, gBefore, '/l1', shapes[atRate] as Load, atRate);
  nr('batch of 10', gBefore, '/l1', shapes['batch of 10'] as Load, 'batch of 10');
  nr('batch of 100', gBefore, '/l1', shapes['batch of 100'] as Load, 'batch of 100');
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
  nr('cache hit', g1, '/cached', { method: 'POST', path: '/', body: call('eth_chainId') }, 'single');
  nr('cache hit', gBefore, '/cached', { method: 'POST', path: '/', body: call('eth_chainId') }, 'single');
  nr('pool of 8 nodes', g1, '/p8', shapes.single as Load, 'single');
  nr('pool of 64 nodes', g1, '/p64', shapes.single as Load, 'single');
  nr('WebSocket message', g1, '/l1', wsMessage, 'WebSocket message');
  nr('WebSocket message', gBefore, '/l1', wsMessage, 'WebSocket message');
  for (const [label, g] of gateways)
    if (label !== '1 key') nr('single', g, '/l1', shapes.single as Load, 'single', label.includes('all cores'));
  for (const f of features.rows) {
    const g = featureGateways.get(f.gateway);
    if (g === undefined) continue;
    const key = f.key === undefined ? g.key : (g.named[f.key] as string);
    plan.push({
      scenario: f.scenario,
      target: `noderouter, ${g.label}`,
      url: g.url,
      load: { ...(shapes.single as Load), path: f.path, headers: { apikey: key } },
      floor: 'single',
      pid: g.pid,
      cores: LOAD_CORE,
    });
  }

  // The sanity check's pair (upstream direct, the bare proxy's single calls) always runs.
  const recordTargets = [
    ...RECORD_TARGETS.map((l) => `noderouter, ${l}`),
    ...(gBefore === undefined ? [] : [`noderouter, ${gBefore.label}`]),
  ];
  const kept = (p: Entry): boolean =>
    (p.scenario.startsWith(FEATURE_PREFIX) ? featureKept(p.scenario, only) : only === undefined || only.includes(p.scenario)) ||
    (p.scenario === 'single' && (p.target === 'upstream direct' || p.target === 'bare proxy')) ||
    (p.scenario === 'single' && only?.includes(RECORDS) === true && recordTargets.includes(p.target));
  plan.splice(0, plan.length, ...plan.filter(kept));
  /** Requests each target answered over every load, warm-ups included. */
  const servedBy = new Map<string, number>();
  const measure = async (p: Entry, seconds?: number): Promise<LoadResult> => {
    if (p.allCores === true) pin(upstreamProc.pid, ALL_CORES);
    try {
      const r = await load(p.url, p.load, p.cores, seconds);
      servedBy.set(p.target, (servedBy.get(p.target) ?? 0) + r.served);
      return r;
    } finally {
      if (p.allCores === true) pin(upstreamProc.pid, TARGET_CORE);
    }
  };
  // The hot path does not touch the record (issue #31, point 5): what the gateways on a
  // PostgreSQL record did to its tables over all their load, warm-ups included.
  const onPg = [...gateways.values()].filter((g) => g.schema !== undefined && plan.some((p) => p.target === `noderouter, ${g.label}`));
  const activity0 = new Map<string, RecordActivity>();
  for (const g of onPg) activity0.set(g.label, await recordActivity(g.schema as string));
  // One short unrecorded pass, so every target is warm (JIT, connections) when measured.
  for (const p of plan) await measure(p, WARMUP_SECONDS);
  const results = new Map<string, Result>();
  /** The highest RSS under load of each gateway with 1 000 000 keys, and of issue #31's record rows, by target. */
  const rssLoaded = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? plan : [...plan].reverse();
    for (const p of order) {
      const id = `${p.scenario}|${p.target}`;
      process.stdout.write(`round ${round + 1}/${ROUNDS}: ${p.target} — ${p.scenario}… `);
      if (REWARM_SECONDS > 0) await measure(p, REWARM_SECONDS);
      const cpu0 = await cpuSecondsOfTree(p.pid);
      const r = await measure(p);
      const cpu1 = await cpuSecondsOfTree(p.pid);
      console.log(`${Math.round(r.rps)} req/s, load generator at ${Math.round(r.loadCpu * 100)}% of a core`);
      const acc = results.get(id) ?? {
        scenario: p.scenario,
        target: p.target,
        cpuUs: [],
        loadCpu: [],
        rps: [],
        p50: [],
        p99: [],
        errors: 0,
      };
      if (cpu0 !== undefined && cpu1 !== undefined && r.served > 0) acc.cpuUs.push(((cpu1 - cpu0) / r.served) * 1e6);
      acc.loadCpu.push(r.loadCpu);
      acc.rps.push(r.rps);
      acc.p50.push(r.p50);
      acc.p99.push(r.p99);
      acc.errors += r.errors;
      results.set(id, acc);
      if (p.target.includes('1 000 000') || recordTargets.includes(p.target))
        rssLoaded.set(p.target, Math.max(rssLoaded.get(p.target) ?? 0, await rssOf(p.pid)));
    }
  }

  const recordUse: Array<{ target: string; served: number; reads: number; writes: number }> = [];
  if (onPg.length > 0) await new Promise((r) => setTimeout(r, 1500));
  for (const g of onPg) {
    const a0 = activity0.get(g.label) as RecordActivity;
    const a1 = await recordActivity(g.schema as string);
    recordUse.push({
      target: `noderouter, ${g.label}`,
      served: servedBy.get(`noderouter, ${g.label}`) ?? 0,
      reads: a1.reads - a0.reads,
      writes: a1.writes - a0.writes,
    });
  }
  // Limit accuracy: one key of the `limited` tier through two gateways on one Redis, and
  // through two workers, each on their own fresh bucket; the other gateways are stopped
  // first so these have the cores.
  await stopGateways([...gateways.values(), ...(gBefore === undefined ? [] : [gBefore])]);
  await dropPgSchemas();
  const limits: LimitRow[] = [];
  if (!wrk) skipped.push('limit accuracy: it counts admitted calls from wrk, which could not be installed');
  else if (only === undefined || only.includes('limit accuracy')) {
    const limitSpecs: GatewaySpec[] = [
      {
        label: '2 instances on Redis, store defaults',
        keys: 1,
        hot: 'redis',
        tier: 'limited',
        instances: 2,
        cores: TARGET_CORE,
      },
      {
        label: '2 instances on Redis, exact per-request limits',
        keys: 1,
        hot: 'redis',
        tier: 'limited',
        instances: 2,
        store: 'leaseTokens: 0',
        needs: 'store.hot.leaseTokens',
        cores: TARGET_CORE,
      },
      {
        label: '2 instances on Redis, leases',
        keys: 1,
        hot: 'redis',
        tier: 'limited',
        instances: 2,
        store: LEASE,
        needs: 'store.hot.leaseMs / store.hot.leaseTokens',
        cores: TARGET_CORE,
      },
      {
        label: '2 workers, memory hot state',
        keys: 1,
        hot: 'memory',
        tier: 'limited',
        server: 'workers: 2',
        needs: 'server.workers',
        cores: TARGET_CORE,
      },
      {
        label: '2 workers on Redis, leases',
        keys: 1,
        hot: 'redis',
        tier: 'limited',
        server: 'workers: 2',
        store: LEASE,
        needs: 'server.workers, store.hot.leaseMs / store.hot.leaseTokens',
        cores: TARGET_CORE,
      },
    ];
    for (const spec of limitSpecs) {
      const gs = await startGateways(spec, dir, ports);
      if (gs === undefined) {
        skipped.push(`limit accuracy, ${spec.label}: this build does not recognise ${spec.needs ?? '?'}`);
        continue;
      }
      const row = await limitAccuracy(spec.label, gs);
      console.log(
        `limit accuracy, ${spec.label}: ${row.admitted} admitted (${row.rejected} refused) in ${row.seconds.toFixed(2)} s against ${Math.round(row.expected)} allowed: ${(row.deviation * 100).toFixed(1)}%`,
      );
      limits.push(row);
      await stopGateways(gs);
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
      allCores: p.allCores === true,
      rps: Math.round(rps),
      p50: median(r.p50),
      p99: median(r.p99),
      errors: r.errors,
      ratio: rps / (floorOf.get(p.floor) ?? rps),
      cpuUs,
      cpuRatio: cpuUs === undefined || floorCpu === undefined ? undefined : cpuUs / floorCpu,
      cpuUsByRound: r.cpuUs,
      loadCpu: Math.max(...r.loadCpu),
    };
  });
  console.log(
    `\n${'scenario'.padEnd(22)} ${'target'.padEnd(48)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'errors'.padStart(7)} ${'vs bare'.padStart(8)} ${'CPU µs/req'.padStart(11)} ${'CPU vs bare'.padStart(12)} ${'load CPU'.padStart(9)}`,
  );
  for (const r of rows) {
    const cpu = r.cpuUs === undefined ? '-' : r.cpuUs.toFixed(0);
    const cpuRatio = r.cpuRatio === undefined ? '-' : `${r.cpuRatio.toFixed(2)}×`;
    console.log(
      `${r.scenario.padEnd(22)} ${r.target.padEnd(48)} ${String(r.rps).padStart(8)} ${r.p50.toFixed(2).padStart(7)} ${r.p99.toFixed(2).padStart(7)} ${String(r.errors).padStart(7)} ${`${(r.ratio * 100).toFixed(0)}%`.padStart(8)} ${cpu.padStart(11)} ${cpuRatio.padStart(12)} ${`${(r.loadCpu * 100).toFixed(0)}%`.padStart(9)}`,
    );
  }
  const featureRows = featureFigures(rows);
  if (featureRows.length > 0) {
    console.log(
      '\noptional features on the single eth_blockNumber call, configured but not used by it (CPU per request against every feature off):',
    );
    console.log(
      `  ${'feature'.padEnd(30)} ${'target'.padEnd(48)} ${'req/s'.padStart(8)} ${'CPU µs/req'.padStart(11)} ${'vs plain'.padStart(9)}`,
    );
    for (const f of featureRows)
      console.log(
        `  ${f.feature.padEnd(30)} ${f.target.padEnd(48)} ${String(f.rps).padStart(8)} ${(f.cpuUs?.toFixed(0) ?? '-').padStart(11)} ${(f.vsPlain === undefined ? '-' : `${f.vsPlain.toFixed(3)}×`).padStart(9)}`,
      );
  }
  const rss1m = rssLoaded.get('noderouter, 1 000 000 keys (Redis hot state)') ?? 0;
  if (rssLoaded.size > 0) console.log('');
  for (const [target, rss] of rssLoaded) console.log(`${target}: RSS under load ${mb(rss)} MB`);
  for (const u of recordUse)
    console.log(
      `${u.target}: ${u.served} requests answered, and meanwhile ${u.reads} scans of the record's tables and ${u.writes} rows written (PostgreSQL's statistics)`,
    );
  for (const s of skipped) console.log(`skipped: ${s}`);

  // Issue #30's targets, then those of issue #21 it does not restate, from this run.
  const row = (scenario: string, target: string): (typeof rows)[number] | undefined =>
    rows.find((r) => r.scenario === scenario && r.target === target);
  const targets30 = issue30Targets(rows, rss1m);
  const targets: TargetLine[] = [];
  const notMeasured = (label: string, setting: string): string =>
    gateways.has(label) || unwanted.has(label)
      ? 'not measured in this run (BENCH_ONLY)'
      : `not measured: this build does not recognise ${setting}`;
  const direct = row('single', 'upstream direct');
  const nr1 = row('single', 'noderouter, 1 key');
  const leased = row('single', 'noderouter, 1 key (Redis hot state with leases)');
  targets.push(
    oldTarget(
      'Redis hot state with leases: CPU per request within 15% of the memory hot state’s',
      leased?.cpuUs === undefined || nr1?.cpuUs === undefined
        ? notMeasured('1 key (Redis hot state with leases)', 'store.hot.leaseMs / store.hot.leaseTokens')
        : verdict(leased.cpuUs <= nr1.cpuUs * 1.15, `${(leased.cpuUs / nr1.cpuUs).toFixed(2)}× the memory hot state’s`),
    ),
  );
  const w1 = row('single', 'noderouter, 1 worker, all cores');
  const w2 = row('single', 'noderouter, 2 workers, all cores');
  targets.push(
    oldTarget(
      '2 workers ≥ 1.4× one worker’s req/s, cost per request flat',
      w1 === undefined || w2 === undefined
        ? notMeasured('2 workers, all cores', 'server.workers')
        : verdict(
            w2.rps >= w1.rps * 1.4,
            `${(w2.rps / w1.rps).toFixed(2)}×; CPU per request ${w1.cpuUs?.toFixed(0) ?? '-'} → ${w2.cpuUs?.toFixed(0) ?? '-'} µs`,
          ),
    ),
  );
  for (const l of limits)
    targets.push(
      oldTarget(
        `limit accuracy within 5%: ${l.scenario}`,
        l.rejected === 0
          ? `not measured: the load (${Math.round(l.admitted / l.seconds)} req/s) never reached the limit`
          : verdict(Math.abs(l.deviation) <= 0.05, `${(l.deviation * 100).toFixed(1)}%`),
      ),
    );
  const targets31 = issue31Targets(
    rows,
    gBefore?.store === 'file store' ? `noderouter, ${gBefore.label}` : undefined,
    gBefore === undefined ? 'set BENCH_BEFORE=92dd51c' : `BENCH_BEFORE=${before ?? ''} keeps its keys in the ${gBefore.store}`,
  );
  // The check measures one gateway: the targets' other rows are not in its run.
  if (!CHECK) {
    console.log('\ntargets (issue #30, point 5):');
    for (const t of targets30) console.log(`  ${t.target}: ${t.result}`);
    console.log('targets (issue #21, point 4, those #30 does not restate):');
    for (const t of targets) console.log(`  ${t.target}: ${t.result}`);
    console.log('targets (issue #31, point 5; the file store is BENCH_BEFORE=92dd51c, the last build on it):');
    for (const t of targets31) console.log(`  ${t.target}: ${t.result}`);
  }
  if (CHECK && before !== undefined) {
    console.log(`\nregression check against ${before} (CPU per request, the median of ${ROUNDS} rounds; at most ${CHECK_LIMIT}× passes):`);
    for (const scenario of CHECKED) {
      const now = results.get(`${scenario}|noderouter, 1 key`)?.cpuUs ?? [];
      const then = results.get(`${scenario}|noderouter, 1 key, before (${before})`)?.cpuUs ?? [];
      if (now.length === 0 || then.length === 0) {
        console.log(`  ${scenario}: FAILED (not measured)`);
        process.exitCode = 1;
        continue;
      }
      const growth = median(now) / median(then);
      const ok = growth <= CHECK_LIMIT;
      console.log(
        `  ${scenario}: ${median(then).toFixed(0)} → ${median(now).toFixed(0)} µs, ${growth.toFixed(2)}× ${ok ? 'ok' : 'FAILED'}`,
      );
      if (!ok) process.exitCode = 1;
    }
  }

  // The bench checks itself: upstream direct well above every Node proxy measured as it
  // was (nginx, cheaper per request than the upstream itself, only for reference).
  const sanity = checkSanity(
    direct,
    rows.filter((r) => r.scenario === 'single' && r.target !== 'upstream direct' && r.target !== 'nginx' && !r.allCores),
  );
  console.log(`\n${sanity.message}`);
  const ngx = row('single', 'nginx');
  if (ngx !== undefined && direct !== undefined)
    console.log(`  (for reference, not checked: upstream direct = ${(direct.rps / ngx.rps).toFixed(2)}× nginx)`);

  const machine = {
    cpus: cpus().length,
    cpu: cpus()[0]?.model ?? '',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    taskset: TASKSET,
    loadavg: await readFile('/proc/loadavg', 'utf8').then((s) => s.trim()),
  };
  const result = {
    date: new Date().toISOString(),
    seconds: SECONDS,
    rounds: ROUNDS,
    connections: CONNECTIONS,
    generators: { http: GENERATORS.http(), rate: GENERATORS.rate, ws: GENERATORS.ws },
    machine,
    sanity: { ok: sanity.ok, ratio: sanity.ratio, minRatio: MIN_DIRECT_RATIO, message: sanity.message },
    rss1mBytes: rss1m,
    rows,
    features: featureRows,
    limits,
    targets: [
      ...targets30.map((t) => ({ issue: 30, ...t })),
      ...targets.map((t) => ({ issue: 21, ...t })),
      ...targets31.map((t) => ({ issue: 31, ...t })),
    ],
    started: [...gateways.values(), ...(gBefore === undefined ? [] : [gBefore])].map((g) => ({
      target: `noderouter, ${g.label}`,
      store: g.store,
      startMs: Math.round(g.startMs),
      rssBytes: startedRss.get(g.label) ?? 0,
    })),
    rssLoadedBytes: Object.fromEntries(rssLoaded),
    recordUse,
    skipped,
  };
  // A failed or partial (BENCH_ONLY) run does not replace the day's results: it is kept aside.
  const out =
    sanity.ok && only === undefined
      ? join(ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}.json`)
      : join(tmpdir(), `noderouter-bench-${sanity.ok ? 'partial' : 'FAILED'}-${Date.now()}.json`);
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`written to ${out}`);
  await rm(dir, { recursive: true, force: true });
  if (!sanity.ok) {
    console.error(`\n${sanity.message}`);
    process.exitCode = 1;
  }
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) c.kill('SIGKILL');
    for (const c of cleanups) c();
    const r = new Redis('redis://127.0.0.1:6379/7');
    void r.flushdb().finally(() => r.disconnect());
    // After a failure, the schemas of gateways just killed (none left after a run that ended).
    void dropPgSchemas().catch((err: unknown) => console.error(err));
  });
