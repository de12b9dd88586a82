// Whole-file JSON documents (key records, usage, accounts): read with "absent means
// empty", written atomically (a private temp file renamed over the old one), so a
// reader never sees half a file and a crash never leaves one.

import { readFile, rename, stat, writeFile } from 'node:fs/promises';

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

/** Replace the file in one step; mode 0600 because these files hold hashes of secrets. */
export async function writeJsonAtomic(path: string, value: unknown, indent?: number): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(value, null, indent), { mode: 0o600 });
  await rename(tmp, path);
}

/** Modification time, or 0 when the file is absent. */
export async function mtimeOf(path: string): Promise<number> {
  return (await stat(path).catch(() => undefined))?.mtimeMs ?? 0;
}
