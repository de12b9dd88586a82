// npm run heap-profile — what a lone call allocates. Starts the benchmark's upstream node
// and the same noderouter as npm run profile, with V8's sampling heap profiler preloaded
// (bench/heap-sampler.mjs: every sampled allocation counted, garbage included, which
// Node's --heap-prof leaves out), warms it up with single eth_blockNumber calls, samples
// its allocations over PROFILE_SECONDS (default 10) of them, and prints the bytes
// allocated per request by package or file and by function (self size): beyond the
// request's and the answer's buffers, what shows is per-request work to take off the
// path. HEAP_INTERVAL: bytes between samples on average (default 4096). The profile is
// kept in bench/results/ (Chrome DevTools: Memory, Load profile).

import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heapTotals, topPerRequest, type HeapNode } from './profile-summary.js';
import { logShows, ROOT, SINGLE_CALL, startProfiledGateway } from './profiled-gateway.js';

const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);
/** Unsampled load first, so what is sampled is the warm path (JIT done, connections open). */
const WARMUP_SECONDS = 3;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-heap-'));
  const out = join(dir, 'gateway.heapprofile');
  let children: readonly ChildProcess[] = [];
  try {
    const g = await startProfiledGateway(dir, ['--import', join(ROOT, 'bench/heap-sampler.mjs')], {
      NODEROUTER_HEAP_PROFILE: out,
      NODEROUTER_HEAP_INTERVAL: process.env.HEAP_INTERVAL ?? '4096',
    });
    children = g.children;
    const answer = await (await fetch(g.url, { method: 'POST', headers: g.headers, body: SINGLE_CALL })).text();
    await g.load(WARMUP_SECONDS);
    g.gateway.kill('SIGUSR2');
    await logShows(g.log, 'heap sampling started', 10_000);
    const r = await g.load(SECONDS);
    g.gateway.kill('SIGUSR2');
    await logShows(g.log, 'heap profile written', 60_000);
    const kept = join(ROOT, 'bench', 'results', `heap-${new Date().toISOString().slice(0, 10)}.heapprofile`);
    await copyFile(out, kept);
    const t = heapTotals((JSON.parse(await readFile(out, 'utf8')) as { head: HeapNode }).head, ROOT);
    console.log(
      `${Math.round(r.rps)} req/s; ${r.requests} requests sampled over ${SECONDS} s: ${(t.all / 2 ** 20).toFixed(1)} MB allocated (V8's estimate), ${(t.all / r.requests).toFixed(0)} B a request`,
    );
    console.log(
      `the request's body is ${Buffer.byteLength(SINGLE_CALL)} B, the answer's ${Buffer.byteLength(answer)} B; profile in ${kept}\n`,
    );
    console.log(`allocated by package or file (self size):\n${topPerRequest(t.byPlace, t.all, r.requests, 30)}\n`);
    console.log(`allocated by function (self size):\n${topPerRequest(t.byFunction, t.all, r.requests, 40)}`);
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
