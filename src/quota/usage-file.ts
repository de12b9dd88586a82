// The usage book beside the key file of the file store of earlier versions (read now to
// adopt it into the record; the record keeps the book: record/sqlite-usage-store.ts):
// read at start, written atomically when changed (on an interval and at shutdown).

import { readFile } from 'node:fs/promises';
import { writeJsonAtomic } from '../store/json-file.js';
import type { UsageArchive, UsageBook, UsageRow } from './usage.js';

export function usagePathFor(keyFile: string): string {
  return keyFile.replace(/(\.json)?$/, '.usage.json');
}

export async function readUsageFile(path: string): Promise<Record<string, UsageRow[]>> {
  try {
    const data = JSON.parse(await readFile(path, 'utf8')) as { version?: number; usage?: Record<string, UsageRow[]> };
    return data.version === 1 && data.usage !== undefined ? data.usage : {};
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
}

export class UsageFile implements UsageArchive {
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly book: UsageBook,
    readonly path: string,
  ) {}

  async load(): Promise<void> {
    this.book.load(await readUsageFile(this.path));
  }

  start(intervalMs = 5_000): void {
    this.timer = setInterval(() => void this.flush(), intervalMs).unref();
  }

  flush(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.book.dirty) return;
      this.book.dirty = false;
      try {
        await writeJsonAtomic(this.path, { version: 1, usage: this.book.snapshot() });
      } catch {
        this.book.dirty = true;
      }
    });
    return this.writing;
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.flush();
  }
}
