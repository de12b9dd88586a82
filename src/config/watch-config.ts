// Noticing that the config file changed, for hot reload. Editors write the file in
// place or replace it by rename, both seen as events named after it. A Kubernetes
// ConfigMap volume does neither: the file is a symlink through `..data`, and the kubelet
// swaps that link for a new timestamped folder, so the only events are named `..data`
// and its temporaries. An event under another name therefore reloads only when what
// the file's path leads to is no longer the file it was (another inode, size or mtime).

import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/** Editors write in several steps: reload once they are done. */
const SETTLE_MS = 250;

async function identity(file: string): Promise<string | undefined> {
  try {
    const s = await stat(file);
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return undefined;
  }
}

/** Calls `onChange` (debounced) when the config file is written or replaced; returns the stop. */
export function watchConfig(file: string, onChange: () => void): () => void {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  let stopped = false;
  let seen: Promise<string | undefined> = identity(file);
  let named = false;
  const settle = async (): Promise<void> => {
    const was = await seen;
    seen = identity(file);
    const now = await seen;
    const wasNamed = named;
    named = false;
    if (stopped) return;
    if (wasNamed || now !== was) onChange();
  };
  try {
    watcher = watch(dirname(file), (_event, changed) => {
      if (changed === null || changed === name) named = true;
      clearTimeout(timer);
      timer = setTimeout(() => void settle(), SETTLE_MS);
    });
    watcher.on('error', () => undefined);
  } catch {
    // Unwatchable filesystems still reload on SIGHUP.
  }
  return () => {
    stopped = true;
    clearTimeout(timer);
    watcher?.close();
  };
}
