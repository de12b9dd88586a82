// What `server.workers: auto` counts. Node 20's availableParallelism() counts the cores
// the process may be scheduled on, not a container's CPU limit (Docker's --cpus,
// Kubernetes' limits.cpu), which the kernel enforces as a CFS quota: a pod limited to
// one CPU on a 32-core host would fork 32 workers that share one CPU's time. The quota
// is read from cgroup v2's cpu.max, or cgroup v1's cfs_quota_us / cfs_period_us.

import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** A file's text, or undefined when it cannot be read. */
export type ReadText = (path: string) => string | undefined;

const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** CPUs the quota allows, rounded up; undefined without a quota. */
function quotaCpus(read: ReadText): number | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 !== undefined) {
    const [quota, period] = [Number(v2[0]), Number(v2[1] ?? 100_000)];
    return v2[0] === 'max' || !(quota > 0 && period > 0) ? undefined : Math.ceil(quota / period);
  }
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim());
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
  // v1 writes -1 for no quota.
  return quota > 0 && period > 0 ? Math.ceil(quota / period) : undefined;
}

/** The number of workers `auto` means: the cores, capped by a CPU quota when there is one. */
export function usableCpus(read: ReadText = readText, cores: number = availableParallelism()): number {
  const quota = quotaCpus(read);
  return Math.max(1, quota === undefined ? cores : Math.min(cores, quota));
}
