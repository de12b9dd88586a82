// npm run heap-profile — what a lone call allocates. Starts the benchmark's upstream node
// and the same noderouter as npm run profile, with V8's sampling heap profiler preloaded
// (bench/heap-sampler.mjs: every sampled allocation counted, garbage included, which
// Node's --heap-prof leaves out), warms it up with single eth_blockNumber calls, samples
// its allocations over PROFILE_SECONDS (default 10) of them, and prints the bytes
// allocated per request by package or file and by function (self size). The bare proxy
// (bench/bare-proxy.ts) is sampled the same way first, for the floor: what node:http and
// undici allocate to relay the request's and the answer's bytes. HEAP_INTERVAL: bytes
// between samples on average (default 4096). The gateway's profile is kept in
// bench/results/ (Chrome DevTools: Memory, Load profile).

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './measure.js';
import { heapTotals, topPerRequest, type HeapNode, type Totals } from './profile-summary.js';
import { dropPgSchemas } from './pg-record.js';
import { logShows, ROOT, SINGLE_CALL, singleCalls, startProfiledGateway } from './profiled-gateway.js';

const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);
/** Unsampled load first, so what is sampled is the warm path (JIT done, connections open). */
const WARMUP_SECONDS = 3;
const SAMPLER = ['--import', join(ROOT, 'bench/heap-sampler.mjs')];
const MB = 2 ** 20;

interface Sampled {
  readonly totals: Totals;
  readonly requests: number;
  readonly rps: number;
}

/** Warm `child` up, sample its allocations over SECONDS of `load`, and read the profile written to `out`. */
async function sample(
  child: ChildProcess,
  log: string,
  out: string,
  load: (seconds: number) => Promise<{ requests: number; rps: number }>,
): Promise<Sampled> {
  await load(WARMUP_SECONDS);
  child.kill('SIGUSR2');
  await logShows(log, 'heap sampling started', 10_000);
  const r = await load(SECONDS);
  child.kill('SIGUSR2');
  await logShows(log, 'heap profile written', 60_000);
  const head = (JSON.parse(await readFile(out, 'utf8')) as { head: HeapNode }).head;
  return { totals: heapTotals(head, ROOT), ...r };
}

const perRequest = (s: Sampled): string =>
  `${(s.totals.all / s.requests).toFixed(0)} B a request (${(s.totals.all / MB).toFixed(1)} MB over ${s.requests} requests, ${Math.round(s.rps)} req/s)`;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-heap-'));
  const children: ChildProcess[] = [];
  const env = (file: string): Record<string, string> => ({
    NODEROUTER_HEAP_PROFILE: join(dir, file),
    NODEROUTER_HEAP_INTERVAL: process.env.HEAP_INTERVAL ?? '4096',
  });
  try {
    const g = await startProfiledGateway(dir, SAMPLER, env('gateway.heapprofile'));
    children.push(...g.children);
    const answer = await (await fetch(g.url, { method: 'POST', headers: g.headers, body: SINGLE_CALL })).text();

    const barePort = await freePort();
    const bareLog = join(dir, 'bare.log');
    const fd = openSync(bareLog, 'w');
    const bareProc = spawn(process.execPath, ['--import', 'tsx', ...SAMPLER, 'bench/bare-proxy.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env('bare.heapprofile'), BENCH_TARGET: g.upstream, BENCH_PORT: String(barePort) },
      stdio: ['ignore', fd, 'inherit'],
    });
    closeSync(fd);
    children.push(bareProc);
    await logShows(bareLog, 'ready');
    const bareUrl = `http://127.0.0.1:${barePort}/`;
    const bare = await sample(bareProc, bareLog, join(dir, 'bare.heapprofile'), (s) =>
      singleCalls(bareUrl, { 'content-type': 'application/json' }, s),
    );
    bareProc.kill('SIGKILL');

    const nr = await sample(g.gateway, g.log, join(dir, 'gateway.heapprofile'), g.load);
    const kept = join(ROOT, 'bench', 'results', `heap-${new Date().toISOString().slice(0, 10)}.heapprofile`);
    await copyFile(join(dir, 'gateway.heapprofile'), kept);
    const t = nr.totals;
    console.log(`noderouter: ${perRequest(nr)}, V8's estimate from its samples`);
    console.log(`bare proxy: ${perRequest(bare)}: the floor, node:http and undici relaying the bytes`);
    console.log(
      `the request's body is ${Buffer.byteLength(SINGLE_CALL)} B, the answer's ${Buffer.byteLength(answer)} B; noderouter's profile in ${kept}\n`,
    );
    console.log(`noderouter, allocated by package or file (self size):\n${topPerRequest(t.byPlace, t.all, nr.requests, 30)}\n`);
    console.log(`noderouter, allocated by function (self size):\n${topPerRequest(t.byFunction, t.all, nr.requests, 40)}\n`);
    console.log(
      `bare proxy, allocated by package or file (self size):\n${topPerRequest(bare.totals.byPlace, bare.totals.all, bare.requests, 12)}`,
    );
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    await dropPgSchemas();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
