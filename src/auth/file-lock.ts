// A lock file beside a data file, so the CLI and a running gateway never interleave
// read-modify-write cycles on it. A lock older than STALE_MS is from a dead process.

import { open, rm, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

const STALE_MS = 30_000;
const WAIT_MS = 10_000;

export async function withFileLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const lock = `${path}.lock`;
  const started = Date.now();
  for (;;) {
    try {
      const handle = await open(lock, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const info = await stat(lock).catch(() => undefined);
      if (info !== undefined && Date.now() - info.mtimeMs > STALE_MS) {
        await rm(lock, { force: true });
        continue;
      }
      if (Date.now() - started > WAIT_MS) throw new Error(`${lock} is held by another process`);
      await sleep(15);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { force: true });
  }
}
