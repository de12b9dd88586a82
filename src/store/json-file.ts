// Whole-file JSON documents (key records, usage, accounts): read with "absent means
// empty", written atomically (a private temp file renamed over the old one), so a
// reader never sees half a file and a crash never leaves one. The temp file has a
// random name and is created exclusively (O_EXCL): a file or symlink planted at a
// guessable name can never be written through. The name starts with the writer's
// process id, so a file left by a crash, or a second writer, says which process it was.

import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm, stat } from 'node:fs/promises';

/** The document and its modification time; `empty` when the file does not exist. */
export async function readJsonFile<T>(path: string, empty: () => T): Promise<{ value: T; mtimeMs: number }> {
  try {
    const [text, info] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    return { value: JSON.parse(text) as T, mtimeMs: info.mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { value: empty(), mtimeMs: 0 };
    throw err;
  }
}

/** A fresh temp name beside `path` (tests pass their own to plant a file there first). */
export type TempName = (path: string) => string;

const randomTempName: TempName = (path) => `${path}.${process.pid}-${randomBytes(8).toString('hex')}.tmp`;

/** Replace the file in one step; mode 0600 because these files hold hashes of secrets. */
export async function writeJsonAtomic(path: string, value: unknown, indent?: number, tempName: TempName = randomTempName): Promise<void> {
  const text = JSON.stringify(value, null, indent);
  // A name already taken (by chance, or planted) is never opened: another name is tried.
  for (let attempt = 0; ; attempt++) {
    const tmp = tempName(path);
    let handle;
    try {
      handle = await open(tmp, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && attempt < 4) continue;
      throw err;
    }
    try {
      await handle.writeFile(text);
      await handle.close();
      await rename(tmp, path);
      return;
    } catch (err) {
      await handle.close().catch(() => undefined);
      await rm(tmp, { force: true });
      throw err;
    }
  }
}

/** Modification time, or 0 when the file is absent. */
export async function mtimeOf(path: string): Promise<number> {
  return (await stat(path).catch(() => undefined))?.mtimeMs ?? 0;
}
