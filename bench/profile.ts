// npm run profile — where a request's CPU goes. Starts the benchmark's upstream node
// and one noderouter (auth, a finite rate limit, metrics, info-level request logs) with
// --cpu-prof, loads it with single calls, stops it, and prints the profile's self time
// by package or file and by function. PROFILE_SECONDS (default 10). The profile file is
// kept in bench/results/ for Chrome DevTools or speedscope.

import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startProfiledGateway } from './profiled-gateway.js';
import { cpuTotals, top, type CallFrame } from './profile-summary.js';

const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);

interface Profile {
  readonly nodes: Array<{ id: number; callFrame: CallFrame }>;
  readonly samples: number[];
  readonly timeDeltas: number[];
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-profile-'));
  let children: readonly ChildProcess[] = [];
  try {
    const g = await startProfiledGateway(dir, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    children = g.children;
    const r = await g.load(SECONDS);
    const exited = new Promise((resolve) => g.gateway.once('exit', resolve));
    g.gateway.kill('SIGINT');
    await exited;
    const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error('no profile written');
    const kept = join(ROOT, 'bench', 'results', `profile-${new Date().toISOString().slice(0, 10)}.cpuprofile`);
    await copyFile(join(dir, file), kept);
    const t = cpuTotals(JSON.parse(await readFile(join(dir, file), 'utf8')) as Profile, ROOT);
    console.log(`${Math.round(r.rps)} req/s over ${SECONDS} s; profile of the whole run (start-up included) in ${kept}\n`);
    console.log(`self time by package or file:\n${top(t.byPlace, t.all, 30)}\n`);
    console.log(`self time by function:\n${top(t.byFunction, t.all, 40)}`);
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
