// npm run profile — where a request's CPU goes. Starts the benchmark's upstream node
// and one noderouter (auth, a finite rate limit, metrics, info-level request logs) with
// --cpu-prof, loads it, stops it, and prints the profile's self time by package or file
// and by function. PROFILE_SECONDS (default 10). PROFILE_SCENARIO picks the load:
// `single` (the default: eth_blockNumber over HTTP, forwarded), `cache-hit`
// (eth_chainId on a chain with the memory cache on, every call after the first a hit)
// or `ws` (eth_blockNumber as WebSocket messages, bench/ws-load.ts); PROFILE_BATCH=N
// sends HTTP batches of N calls instead of single ones (the bench's shape). The profile file is
// kept in bench/results/ for Chrome DevTools or speedscope.

import autocannon from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newKeyRecord } from '../src/auth/key-store.js';
import { freePort } from './measure.js';
import { wsLoad } from './ws-load.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);
const TASKSET = existsSync('/usr/bin/taskset');
const SCENARIOS = ['single', 'cache-hit', 'ws'] as const;
const SCENARIO = (process.env.PROFILE_SCENARIO ?? 'single') as (typeof SCENARIOS)[number];
if (!SCENARIOS.includes(SCENARIO)) throw new Error(`PROFILE_SCENARIO must be one of ${SCENARIOS.join(', ')}`);
const BATCH = Number(process.env.PROFILE_BATCH ?? 0);
/** A batch as bench/run.ts sends it. */
const batchBody = (n: number): string =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_blockNumber' })));

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

function started(child: ChildProcess, marker: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      if (out.length < 100_000) out += d.toString();
      if (marker.test(out)) resolve();
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

/** Where a sample's time goes: a package under node_modules, a file of ours, or Node's own. */
function placeOf(url: string, name: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return `package ${pkg[1]}`;
  if (url.startsWith('node:')) return url;
  if (url === '') return name;
  return url.replace(`file://${ROOT}`, '');
}

function top(totals: Map<string, number>, all: number, n: number): string {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / all).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-profile-'));
  const children: ChildProcess[] = [];
  try {
    const [up, port, admin] = await Promise.all([freePort(), freePort(), freePort()]);
    if (TASKSET) execFileSync('taskset', ['-a', '-pc', '0', String(process.pid)], { stdio: 'ignore' });
    const upstreamArgs = ['--import', 'tsx', 'bench/upstream.ts'];
    const upstream = spawn(
      TASKSET ? 'taskset' : process.execPath,
      TASKSET ? ['-c', '1', process.execPath, ...upstreamArgs] : upstreamArgs,
      {
        cwd: ROOT,
        env: { ...process.env, BENCH_PORTS: String(up) },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    children.push(upstream);
    await started(upstream, /ready/);
    const ours = newKeyRecord({ account: 'bench', tier: 'bench' });
    await writeFile(join(dir, 'keys.json'), JSON.stringify({ version: 1, keys: [ours.record] }));
    const config = join(dir, 'gateway.yaml');
    await writeFile(
      config,
      [
        `server: { host: 127.0.0.1, port: ${port}, adminHost: 127.0.0.1, adminPort: ${admin} }`,
        'log: { level: info }',
        `store: { kind: file, path: "${dir}/keys.json" }`,
        'tiers:',
        '  bench: { rate: 1000000, burst: 1000000, wsConnections: unlimited }',
        'chains:',
        '  l1:',
        '    plugin: evm',
        '    route: { path: /l1 }',
        '    cache: off',
        '    nodes:',
        `      - { name: n0, url: "http://127.0.0.1:${up}", role: full }`,
        '  cached:',
        '    plugin: evm',
        '    route: { path: /cached }',
        '    cache: memory',
        '    nodes:',
        `      - { name: n0, url: "http://127.0.0.1:${up}", role: full }`,
        '',
      ].join('\n'),
    );
    // Its log lines go to a file, as to a log shipper: a pipe read by this busy process would hold them back.
    const log = join(dir, 'gateway.log');
    const fd = openSync(log, 'w');
    // Pinned as in the bench (when taskset is there): the gateway and the upstream on core 1, the load on
    // core 0, so the profile's wall-clock samples are not the gateway waiting for the load generator's core.
    const args = ['--cpu-prof', `--cpu-prof-dir=${dir}`, 'dist/src/bin.js', 'serve', '--config', config];
    const gateway = spawn(TASKSET ? 'taskset' : process.execPath, TASKSET ? ['-c', '1', process.execPath, ...args] : args, {
      cwd: ROOT,
      stdio: ['ignore', fd, 'inherit'],
    });
    closeSync(fd);
    children.push(gateway);
    while (!(await readFile(log, 'utf8')).includes('serving')) await new Promise((r) => setTimeout(r, 50));
    const headers = { 'content-type': 'application/json', apikey: ours.value };
    const one = `{"jsonrpc":"2.0","id":1,"method":"${SCENARIO === 'cache-hit' ? 'eth_chainId' : 'eth_blockNumber'}","params":[]}`;
    const body = BATCH > 0 && SCENARIO !== 'ws' ? batchBody(BATCH) : one;
    const rps =
      SCENARIO === 'ws'
        ? (await wsLoad(`ws://127.0.0.1:${port}/l1`, headers, body, 64, SECONDS)).rps
        : (
            await autocannon({
              url: `http://127.0.0.1:${port}/${SCENARIO === 'cache-hit' ? 'cached' : 'l1'}`,
              method: 'POST',
              headers,
              body,
              connections: 64,
              duration: SECONDS,
            })
          ).requests.average;
    const exited = new Promise((resolve) => gateway.once('exit', resolve));
    gateway.kill('SIGINT');
    await exited;
    const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error('no profile written');
    const kept = join(ROOT, 'bench', 'results', `profile-${SCENARIO}-${new Date().toISOString().slice(0, 10)}.cpuprofile`);
    await copyFile(join(dir, file), kept);
    const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const byPlace = new Map<string, number>();
    const byFunction = new Map<string, number>();
    let all = 0;
    profile.samples.forEach((id, i) => {
      const t = profile.timeDeltas[i] ?? 0;
      const cf = (byId.get(id) as ProfileNode).callFrame;
      const place = placeOf(cf.url, cf.functionName);
      byPlace.set(place, (byPlace.get(place) ?? 0) + t);
      const fn = `${cf.functionName || '(anonymous)'}  ${place}:${cf.lineNumber + 1}`;
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + t);
      all += t;
    });
    console.log(`${SCENARIO}: ${Math.round(rps)} req/s over ${SECONDS} s; profile of the whole run (start-up included) in ${kept}\n`);
    console.log(`self time by package or file:\n${top(byPlace, all, 30)}\n`);
    console.log(`self time by function:\n${top(byFunction, all, 40)}`);
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
