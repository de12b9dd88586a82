// Mocha root hooks: the suite must end by itself. Mocha runs without --exit, so a
// server, socket, timer or child process a test (or the product's close()) leaves
// open would keep the process alive silently. After the last test this waits a short
// grace for closes still under way, then fails the run with what is left open, and
// exits so CI never hangs on a leak.

import type { ChildProcess } from 'node:child_process';
import type { Server, Socket } from 'node:net';

/** Closes under way (a child's exit, a socket's FIN) get this long to finish. */
const GRACE_MS = 3_000;
/** Kept-alive sockets some clients pool past their last request (undici's default keep-alive is 4 s). */
const POOLED_MS = 5_000;

const isStdio = (h: unknown): boolean => h === process.stdin || h === process.stdout || h === process.stderr;

/** What holds the event loop, apart from stdio: resource types (timers included) and a line per handle. */
function openHandles(): { resources: string[]; handles: string[] } {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().filter((h) => !isStdio(h));
  const lines = handles.map(describe);
  // Timers and requests have no handle object here: their types tell what they are.
  const resources = process
    .getActiveResourcesInfo()
    .filter((r) => r !== 'TTYWrap' && r !== 'PipeWrap' && r !== 'TCPSocketWrap' && r !== 'TCPServerWrap' && r !== 'ProcessWrap');
  return { resources, handles: lines };
}

function describe(h: unknown): string {
  const name = (h as object).constructor?.name ?? typeof h;
  if (name === 'Server' || name === 'WebSocketServer') {
    const a = (h as Server).address();
    return `server ${typeof a === 'string' ? a : `${a?.address}:${a?.port}`}`;
  }
  if (name === 'Socket' || name === 'TLSSocket') {
    const s = h as Socket;
    return `socket ${s.localAddress}:${s.localPort} -> ${s.remoteAddress}:${s.remotePort}${s.destroyed ? ' (destroyed)' : ''}`;
  }
  if (name === 'ChildProcess') {
    const c = h as ChildProcess;
    return `child process ${c.pid} ${c.spawnargs.join(' ')}`;
  }
  return name;
}

const clean = (o: { resources: string[]; handles: string[] }): boolean => o.resources.length === 0 && o.handles.length === 0;

async function settled(ms: number): Promise<{ resources: string[]; handles: string[] }> {
  const end = Date.now() + ms;
  let open = openHandles();
  while (!clean(open) && Date.now() < end) {
    await new Promise<void>((r) => setTimeout(r, 50).unref());
    open = openHandles();
  }
  return open;
}

export const mochaHooks = {
  async afterAll(this: { timeout(ms: number): void }): Promise<void> {
    this.timeout(GRACE_MS + POOLED_MS + 5_000);
    let open = await settled(GRACE_MS);
    // Only pooled client sockets left: give them their keep-alive to lapse.
    if (!clean(open) && open.resources.length === 0 && open.handles.every((h) => h.startsWith('socket '))) open = await settled(POOLED_MS);
    if (clean(open)) return;
    // The leak keeps the loop alive: exit once mocha has reported, so CI fails instead of hanging.
    setTimeout(() => process.exit(1), 1_000).unref();
    throw new Error(`handles left open after the last test:\n  ${[...open.handles, ...open.resources].join('\n  ')}`);
  },
};
