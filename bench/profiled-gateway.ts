// The gateway npm run profile and npm run heap-profile look into: the bench's upstream
// node and one noderouter in front of it with auth, a finite rate limit, metrics and
// info-level request logs (`/l1`, and `/cached` with the memory cache on), started with
// the profiler's Node options, and single eth_blockNumber calls to load it with.
// `pinned`: the gateway and the upstream on core 1 (taskset, when there), as the bench
// pins them, the caller's load on core 0.

import autocannon from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newKeyRecord } from '../src/auth/key-store.js';
import { SqliteDatabase } from '../src/record/sqlite-database.js';
import { writeRows } from '../src/record/sqlite-rows.js';
import { freePort } from './measure.js';
import { pgRecordConfig, pgSchema, pgStore } from './pg-record.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SINGLE_CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

const TASKSET = existsSync('/usr/bin/taskset');

/** `process.execPath` with `args`, on core 1 when `pinned` and taskset is there. */
function node(args: readonly string[], pinned: boolean): [string, string[]] {
  return pinned && TASKSET ? ['taskset', ['-c', '1', process.execPath, ...args]] : [process.execPath, [...args]];
}

export interface ProfiledGateway {
  readonly gateway: ChildProcess;
  readonly children: readonly ChildProcess[];
  /** Its log (stdout), written to a file as a log shipper would take it. */
  readonly log: string;
  /** The upstream node's origin. */
  readonly upstream: string;
  /** The gateway's origin (chains at /l1 and /cached). */
  readonly origin: string;
  /** The single call's URL and headers (our key). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Single calls at full load for `seconds`; the requests answered and their rate. */
  load(seconds: number): Promise<{ requests: number; rps: number }>;
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

/** Single calls at full load (64 connections) for `seconds`: the requests answered and their rate. */
export async function singleCalls(
  url: string,
  headers: Readonly<Record<string, string>>,
  seconds: number,
): Promise<{ requests: number; rps: number }> {
  const r = await autocannon({ url, method: 'POST', headers, body: SINGLE_CALL, connections: 64, duration: seconds });
  return { requests: r.requests.total, rps: r.requests.average };
}

/** Resolve once the file holds `marker`, polling it (the gateway's log is a file, not a pipe). */
export async function logShows(file: string, marker: string, timeoutMs = 60_000): Promise<void> {
  for (let waited = 0; waited < timeoutMs; waited += 50) {
    if ((await readFile(file, 'utf8').catch(() => '')).includes(marker)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${file} did not show "${marker}" within ${timeoutMs} ms`);
}

/** Start the upstream and the gateway (Node options `nodeArgs`, more environment `env`) in `dir`. */
export async function startProfiledGateway(
  dir: string,
  nodeArgs: readonly string[],
  env: Record<string, string> = {},
  pinned = false,
): Promise<ProfiledGateway> {
  const children: ChildProcess[] = [];
  const [up, port, admin] = await Promise.all([freePort(), freePort(), freePort()]);
  if (pinned && TASKSET) execFileSync('taskset', ['-a', '-pc', '0', String(process.pid)], { stdio: 'ignore' });
  const upstream = spawn(...node(['--import', 'tsx', 'bench/upstream.ts'], pinned), {
    cwd: ROOT,
    env: { ...process.env, BENCH_PORTS: String(up) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(upstream);
  await started(upstream, /ready/);
  const ours = newKeyRecord({ account: 'bench', tier: 'bench' });
  // PROFILE_RECORD=postgres: the key in a PostgreSQL record (a schema of its own, which the caller drops: dropPgSchemas).
  let record = `{ kind: sqlite, path: "${dir}/noderouter.db" }`;
  if (process.env.PROFILE_RECORD === 'postgres') {
    const schema = pgSchema();
    await pgStore(schema, 0, [ours.record]);
    record = pgRecordConfig(schema);
  } else {
    const db = SqliteDatabase.open(join(dir, 'noderouter.db'));
    writeRows(db, [{ kind: 'key', key: ours.record }]);
    db.close();
  }
  const config = join(dir, 'gateway.yaml');
  await writeFile(
    config,
    [
      `server: { host: 127.0.0.1, port: ${port}, adminHost: 127.0.0.1, adminPort: ${admin} }`,
      'log: { level: info }',
      `store: { record: ${record} }`,
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
  const gateway = spawn(...node([...nodeArgs, 'dist/src/bin.js', 'serve', '--config', config], pinned), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', fd, 'inherit'],
  });
  closeSync(fd);
  children.push(gateway);
  await logShows(log, 'serving');
  const url = `http://127.0.0.1:${port}/l1`;
  const headers = { 'content-type': 'application/json', apikey: ours.value };
  const load = (seconds: number): Promise<{ requests: number; rps: number }> => singleCalls(url, headers, seconds);
  return { gateway, children, log, upstream: `http://127.0.0.1:${up}`, origin: `http://127.0.0.1:${port}`, url, headers, load };
}
