// The suite must end by itself: mocha runs without --exit, so a server, socket, timer
// or child process left open by a test (or by a close() that forgets something) would
// keep the process alive. Once the run has ended, an unref'd watchdog waits a grace
// (closes still under way, kept-alive client sockets lapsing); if the process is still
// alive then, it prints what holds it, counts one more failure and exits non-zero, so
// CI fails loudly instead of hanging.
'use strict';
const { setTimeout } = require('node:timers');

/** undici keeps idle client sockets 4 s: a process held only by those exits within this. */
const GRACE_MS = 10_000;
/** Resource types that _getActiveHandles() describes one by one. */
const HANDLE_TYPES = new Set(['TTYWrap', 'PipeWrap', 'TCPSocketWrap', 'TCPServerWrap', 'ProcessWrap']);

function describe(h) {
  const name = (h && h.constructor && h.constructor.name) || typeof h;
  if (name === 'Server' && typeof h.address === 'function') {
    const a = h.address();
    return `server ${typeof a === 'string' ? a : a ? `${a.address}:${a.port}` : '(not listening)'}`;
  }
  if (name === 'Socket' || name === 'TLSSocket') return `socket ${h.localAddress}:${h.localPort} -> ${h.remoteAddress}:${h.remotePort}`;
  if (name === 'ChildProcess') return `child process ${h.pid}: ${h.spawnargs.join(' ')}`;
  return name;
}

/** What keeps the event loop alive, apart from stdio: a line per handle, then other resources by type (timers). */
function openHandles() {
  const std = new Set([process.stdin, process.stdout, process.stderr]);
  const handles = process
    ._getActiveHandles()
    .filter((h) => !std.has(h))
    .map(describe);
  const resources = process.getActiveResourcesInfo().filter((r) => !HANDLE_TYPES.has(r));
  return [...handles, ...resources];
}

/** Arm the watchdog; `totals()` gives the run's passes and failures for the closing line CI reads. */
function watchExit(totals) {
  setTimeout(() => {
    const open = openHandles();
    console.log(
      `\nThe run ended ${GRACE_MS / 1000} s ago and the process is still held open by:\n  ${open.join('\n  ') || '(nothing named)'}`,
    );
    const { passes, failures } = totals();
    console.log(`${passes} passed, ${failures + 1} failed`);
    process.exit(1);
  }, GRACE_MS).unref();
}

module.exports = { watchExit, openHandles };
