// The log file (log.file), rotated by size so operators need no sidecar: before a write
// would take the file past `maxBytes` it is renamed to file.1 (file.1 to file.2 …,
// keeping `files` of them; 0 keeps none: the file starts over), and a new one is
// opened. The logger hands it whole batches of lines, so no line is ever split across
// two files. Writes are asynchronous and one at a time; whatever is still waiting when
// the process exits is written synchronously then. A failing disk costs lines (told
// once on stderr), never the gateway.

import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, open, rename, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { LogOutput } from './log.js';

export class RotatingFile implements LogOutput {
  private pending = '';
  private writing: Promise<void> | undefined;
  private failed = false;
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly maxBytes: number,
    private readonly files: number,
    private handle: FileHandle,
    /** Bytes in the current file. */
    private size: number,
  ) {
    process.once('exit', this.writeLeftSync);
  }

  static async open(path: string, maxBytes: number, files: number): Promise<RotatingFile> {
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(path, 'a', 0o640);
    return new RotatingFile(path, maxBytes, files, handle, (await stat(path)).size);
  }

  write(text: string): void {
    if (this.closed) return;
    this.pending += text;
    this.writing ??= this.drain();
  }

  /** Settles once everything given so far is in the file. */
  async flush(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    process.off('exit', this.writeLeftSync);
    await this.handle.close();
  }

  private async drain(): Promise<void> {
    while (this.pending !== '') {
      const text = this.pending;
      this.pending = '';
      const bytes = Buffer.byteLength(text);
      try {
        if (this.size > 0 && this.size + bytes > this.maxBytes) await this.rotate();
        await this.handle.appendFile(text);
        this.size += bytes;
      } catch (err) {
        this.tell(err);
      }
    }
    this.writing = undefined;
  }

  private async rotate(): Promise<void> {
    await this.handle.close();
    try {
      if (this.files > 0) {
        for (let i = this.files - 1; i >= 1; i--) await renameIfThere(`${this.path}.${i}`, `${this.path}.${i + 1}`);
        await rename(this.path, `${this.path}.1`);
      }
    } finally {
      // Renamed or not, lines go on into a file of this name.
      this.handle = await open(this.path, this.files > 0 ? 'a' : 'w', 0o640);
      this.size = 0;
    }
  }

  private tell(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    process.stderr.write(
      `noderouter: log file ${this.path} cannot be written (${(err as NodeJS.ErrnoException).code ?? String(err)}); lines are lost until it can\n`,
    );
  }

  /** At exit nothing asynchronous runs any more: lines still waiting are written now. */
  private readonly writeLeftSync = (): void => {
    if (this.pending === '' || this.closed) return;
    try {
      const fd = openSync(this.path, 'a', 0o640);
      writeSync(fd, this.pending);
      closeSync(fd);
    } catch {
      // Nothing left to tell it to.
    }
    this.pending = '';
  };
}

async function renameIfThere(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
