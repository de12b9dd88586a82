// npm run profile — where a request's CPU goes. Starts the benchmark's upstream node
// and one noderouter (auth, a finite rate limit, metrics, info-level request logs) with
// --cpu-prof, loads it, stops it, and prints the profile's self time by package or file
// and by function. PROFILE_SECONDS (default 10). PROFILE_SCENARIO picks the load:
// `single` (the default: eth_blockNumber over HTTP, forwarded), `cache-hit`
// (eth_chainId on a chain with the memory cache on, every call after the first a hit)
// or `ws` (eth_blockNumber as WebSocket messages, bench/ws-load.ts); PROFILE_BATCH=N
// sends HTTP batches of N calls instead of single ones (the bench's shape). PROFILE_RECORD=postgres
// keeps the key in a PostgreSQL record (bench/pg-record.ts) instead of SQLite. The profile file is
// kept in bench/results/ for Chrome DevTools or speedscope.

import autocannon from 'autocannon';
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { functionOf, placeOf, type CallFrame } from './profile-summary.js';
import { dropPgSchemas } from './pg-record.js';
import { ROOT, startProfiledGateway, type ProfiledGateway } from './profiled-gateway.js';
import { wsLoad } from './ws-load.js';

const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);
const SCENARIOS = ['single', 'cache-hit', 'ws'] as const;
const SCENARIO = (process.env.PROFILE_SCENARIO ?? 'single') as (typeof SCENARIOS)[number];
if (!SCENARIOS.includes(SCENARIO)) throw new Error(`PROFILE_SCENARIO must be one of ${SCENARIOS.join(', ')}`);
const BATCH = Number(process.env.PROFILE_BATCH ?? 0);
/** A batch as bench/run.ts sends it. */
const batchBody = (n: number): string =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_blockNumber' })));

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}
interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

function top(totals: Map<string, number>, all: number, n: number): string {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / all).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
}

/** The scenario's load at full speed (64 connections) for SECONDS: requests (messages) a second. */
async function load(g: ProfiledGateway): Promise<number> {
  const one = `{"jsonrpc":"2.0","id":1,"method":"${SCENARIO === 'cache-hit' ? 'eth_chainId' : 'eth_blockNumber'}","params":[]}`;
  const body = BATCH > 0 && SCENARIO !== 'ws' ? batchBody(BATCH) : one;
  if (SCENARIO === 'ws') return (await wsLoad(`${g.origin.replace('http', 'ws')}/l1`, g.headers, body, 64, SECONDS)).rps;
  const url = `${g.origin}/${SCENARIO === 'cache-hit' ? 'cached' : 'l1'}`;
  return (await autocannon({ url, method: 'POST', headers: g.headers, body, connections: 64, duration: SECONDS })).requests.average;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-profile-'));
  let g: ProfiledGateway | undefined;
  try {
    // Pinned as in the bench: the profile's wall-clock samples are not the gateway waiting for the load's core.
    g = await startProfiledGateway(dir, ['--cpu-prof', `--cpu-prof-dir=${dir}`], {}, true);
    const rps = await load(g);
    const exited = new Promise((resolve) => g?.gateway.once('exit', resolve));
    g.gateway.kill('SIGINT');
    await exited;
    const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error('no profile written');
    const kept = join(
      ROOT,
      'bench',
      'results',
      `profile-${SCENARIO}${process.env.PROFILE_RECORD === 'postgres' ? '-postgres' : ''}-${new Date().toISOString().slice(0, 10)}.cpuprofile`,
    );
    await copyFile(join(dir, file), kept);
    const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const byPlace = new Map<string, number>();
    const byFunction = new Map<string, number>();
    let all = 0;
    profile.samples.forEach((id, i) => {
      const t = profile.timeDeltas[i] ?? 0;
      const cf = (byId.get(id) as ProfileNode).callFrame;
      const place = placeOf(cf.url, cf.functionName, ROOT);
      byPlace.set(place, (byPlace.get(place) ?? 0) + t);
      const fn = functionOf(cf, ROOT);
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + t);
      all += t;
    });
    console.log(`${SCENARIO}: ${Math.round(rps)} req/s over ${SECONDS} s; profile of the whole run (start-up included) in ${kept}\n`);
    console.log(`self time by package or file:\n${top(byPlace, all, 30)}\n`);
    console.log(`self time by function:\n${top(byFunction, all, 40)}`);
  } finally {
    for (const c of g?.children ?? []) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    await dropPgSchemas();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
