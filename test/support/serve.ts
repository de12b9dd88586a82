// `noderouter serve` as operators run it: the real binary in a child process, started
// from this checkout's sources, and what it printed. The caller stops it (SIGTERM,
// SIGINT) and awaits `exited`; one that does not come up is killed here, so a failed
// start leaves no process behind.

import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { until } from './until.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SERVING = /serving (http:\/\/\S+) \(admin (http:\/\/\S+)\)/;
const WORKERS = /workers: \d+ \(pids ([\d ]+)\)/;

export interface Served {
  readonly url: string;
  readonly admin: string;
  /** The traffic listener's port. */
  readonly port: number;
  /** The workers' pids once all are up (server.workers above 1); empty for one process. */
  readonly pids: number[];
  readonly child: ChildProcess;
  /** Its exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  /** Everything it printed so far, stdout and stderr. */
  out(): string;
}

export interface ServeOptions {
  readonly env?: Readonly<Record<string, string>>;
  /** Wait for every worker to be up, not just the listeners. */
  readonly workers?: boolean;
  /** How long it may take to come up; default 60 s (tsx compiles the sources first). */
  readonly timeoutMs?: number;
}

export async function serve(args: readonly string[], options: ServeOptions = {}): Promise<Served> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', 'src/bin.ts', 'serve', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = (): boolean => SERVING.test(out) && (options.workers !== true || WORKERS.test(out));
  // Not up in time: the error below shows what it printed.
  await until(() => ready() || child.exitCode !== null, { what: 'serve is up', timeoutMs: options.timeoutMs ?? 60_000, everyMs: 50 }).catch(
    () => undefined,
  );
  const m = SERVING.exec(out);
  if (m === null || !ready()) {
    child.kill('SIGKILL');
    await exited;
    throw new Error(`serve did not start: ${out}`);
  }
  const pids = WORKERS.exec(out)?.[1];
  return {
    url: m[1] as string,
    admin: m[2] as string,
    port: Number(new URL(m[1] as string).port),
    pids: pids === undefined ? [] : pids.split(' ').map(Number),
    child,
    exited,
    out: () => out,
  };
}
