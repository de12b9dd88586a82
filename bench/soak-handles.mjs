// Preloaded by the soak into the gateway's processes (`--import`; cluster workers inherit
// it): counts the live timers, sockets and other async resources by type, unref'd
// ones included (process.getActiveResourcesInfo() and prom-client's
// nodejs_active_resources see only what keeps the loop alive, and the gateway unrefs
// its timers). On SIGUSR2 it writes the counts to $NODEROUTER_SOAK_HANDLES/<pid>.json.
// Nothing here runs without that variable.

import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.NODEROUTER_SOAK_HANDLES;
if (dir) {
  /** asyncId → type, for every live resource but promises (countless, and collected). */
  const live = new Map();
  createHook({
    init(id, type) {
      if (type !== 'PROMISE') live.set(id, type);
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
  process.on('SIGUSR2', () => {
    const counts = {};
    for (const type of live.values()) counts[type] = (counts[type] ?? 0) + 1;
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ pid: process.pid, at: Date.now(), counts }));
  });
}
