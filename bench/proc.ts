// CPU time of a process and its children, from /proc: what a target spent serving a
// load, whatever its shape (one Node process, nginx's master and workers, a primary
// and its forked workers).

import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

export interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  /** Clock ticks in user and kernel mode, its own and its reaped children's. */
  readonly utime: number;
  readonly stime: number;
  readonly cutime: number;
  readonly cstime: number;
}

/**
 * One /proc/<pid>/stat line. The command name is in parentheses and may itself hold
 * spaces and parentheses, so the fields are counted from the last `)`.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 1 || close < open) return undefined;
  const f = text
    .slice(close + 2)
    .trim()
    .split(' ');
  if (f.length < 15) return undefined;
  const n = (i: number): number => Number(f[i]);
  const stat = { pid: Number(text.slice(0, open).trim()), ppid: n(1), utime: n(11), stime: n(12), cutime: n(13), cstime: n(14) };
  return Object.values(stat).every(Number.isFinite) ? stat : undefined;
}

/**
 * Clock ticks used by `root` and every live descendant, with the children each of them
 * has reaped (so a worker that exited during the load still counts, once).
 */
export function treeTicks(stats: readonly ProcStat[], root: number): number | undefined {
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const top = stats.find((s) => s.pid === root);
  if (top === undefined) return undefined;
  let ticks = 0;
  const seen = new Set<number>();
  const walk = (s: ProcStat): void => {
    if (seen.has(s.pid)) return;
    seen.add(s.pid);
    ticks += s.utime + s.stime + s.cutime + s.cstime;
    for (const c of children.get(s.pid) ?? []) walk(c);
  };
  walk(top);
  return ticks;
}

let tickHz: number | undefined;
function clockTicks(): number {
  if (tickHz === undefined) {
    try {
      tickHz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      tickHz = 100;
    }
  }
  return tickHz;
}

async function allStats(): Promise<ProcStat[]> {
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
  const stats = await Promise.all(pids.map((p) => readFile(`/proc/${p}/stat`, 'utf8').then(parseProcStat, () => undefined)));
  return stats.filter((s): s is ProcStat => s !== undefined);
}

/** CPU seconds (user + system) used so far by `pid` and its descendants; undefined when it is gone. */
export async function cpuSecondsOfTree(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  const ticks = treeTicks(await allStats(), pid);
  return ticks === undefined ? undefined : ticks / clockTicks();
}

/** CPU seconds used by the children this process has reaped (a finished wrk run, for one). */
export async function reapedChildrenCpuSeconds(): Promise<number> {
  const s = parseProcStat(await readFile('/proc/self/stat', 'utf8'));
  return s === undefined ? 0 : (s.cutime + s.cstime) / clockTicks();
}
