// `npm run bench:hang`: a hung node at full load, as an operator would try it. The
// default config's gateway with its devnet (`noderouter serve --devnet`, built first)
// takes wrk's load of eth_getTransactionCount(addr, "pending") on /l1 over
// HANG_CONNECTIONS (16) keep-alive connections, wrk's --timeout 2s (a call over 2 s
// counts as a wrk timeout): HANG_WARMUP_SECONDS (4) before, then `{"hang": true}` on
// l1-full-1 through the devnet control server for HANG_SECONDS (6), then the fault
// cleared and HANG_AFTER_SECONDS (4) more, all in one wrk run (a call still out when wrk
// stops is not counted by it, so the fault's edges are inside the run). Then, with the
// node back, the same again as separate wrk runs (each its own 16 connections), so the
// hang's percentiles are the hang's alone. Prints each run's calls, calls over 2 s,
// non-2xx answers and latency percentiles, and what /metrics says of hedges and ejections.
// `-- --config FILE` runs another config's gateway (its l1 chain and devnet control server).
// Hold the machine-wide lock while it runs: `flock /tmp/noderouter-load.lock npm run bench:hang`.

import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureWrk, runWrk, type WrkResult } from './wrk.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONNECTIONS = Number(process.env.HANG_CONNECTIONS ?? 16);
const WARMUP = Number(process.env.HANG_WARMUP_SECONDS ?? 4);
const HANG = Number(process.env.HANG_SECONDS ?? 6);
const AFTER = Number(process.env.HANG_AFTER_SECONDS ?? 4);
const NODE = process.env.HANG_NODE ?? 'l1-full-1';
const BODY =
  '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionCount","params":["0x00000000000000000000000000000000000000aa","pending"]}';

/** One wrk run over a window of the fault; its timeouts are calls wrk gave up on after 2 s. */
interface Window extends WrkResult {
  readonly name: string;
}

interface Started {
  readonly child: ChildProcess;
  readonly key: string;
  readonly url: string;
  readonly admin: string;
  readonly control: string;
}

/** The gateway on the default config with its devnet; resolves once it printed its demo key. */
function startGateway(): Promise<Started> {
  const at = process.argv.indexOf('--config');
  const config = at < 0 ? [] : ['--config', process.argv[at + 1] as string];
  const child = spawn(process.execPath, ['bin/noderouter.js', 'serve', '--devnet', ...config], {
    cwd: ROOT,
    // Its request logs (info, as the default config has it) are read and dropped, as a terminal would show them.
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not start:\n${text.slice(0, 3000)}`)), 60_000);
    child.on('exit', (code) => reject(new Error(`the gateway exited (${code}):\n${text.slice(0, 3000)}`)));
    const look = (d: Buffer): void => {
      if (text.length < 100_000) text += d.toString();
      const key = /demo key \(shown once[^)]*\): (\S+)/.exec(text)?.[1];
      const serving = /noderouter is serving (\S+) \(admin (\S+)\)/.exec(text);
      const control = /devnet control: (\S+)/.exec(text)?.[1];
      if (key === undefined || serving === null || control === undefined) return;
      clearTimeout(timer);
      child.stdout?.removeAllListeners('data');
      child.stdout?.resume();
      resolve({ child, key, url: `${serving[1]}/l1`, admin: serving[2] as string, control });
    };
    child.stdout?.on('data', look);
    child.stderr?.on('data', (d: Buffer) => (text += d.toString()));
  });
}

async function wrk(name: string, url: string, key: string, seconds: number): Promise<Window> {
  const r = await runWrk(
    { url, method: 'POST', body: BODY, headers: { apikey: key } },
    { connections: CONNECTIONS, seconds, timeout: '2s' },
  );
  return { ...r, name };
}

async function fault(control: string, body: object | undefined): Promise<void> {
  const res = await fetch(`${control}/nodes/${NODE}/faults`, {
    method: body === undefined ? 'DELETE' : 'PUT',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`devnet control answered ${res.status}: ${await res.text()}`);
}

/** Series of `name` with chain="l1" in the exposition text, as `labels value` lines. */
function series(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes('chain="l1"'))
    .map((l) => l.slice(name.length));
}

async function waitInRotation(admin: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const { chains } = (await (await fetch(`${admin}/health/chains`)).json()) as {
      chains: Array<{ chain: string; nodes: Array<{ name: string; inRotation: boolean }> }>;
    };
    if (chains.find((c) => c.chain === 'l1')?.nodes.find((n) => n.name === NODE)?.inRotation === true) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${NODE} did not come back into rotation within 30 s`);
}

async function main(): Promise<void> {
  if (!ensureWrk()) throw new Error('wrk is needed (apt-get install wrk)');
  const gw = await startGateway();
  try {
    // Probes have run and every node is in rotation before the load starts.
    await new Promise((r) => setTimeout(r, 2_500));
    const windows: Window[] = [];
    // One run through it all: a call still out when a window's wrk stops would not be
    // counted by that wrk, so the calls over 2 s are counted across the fault's edges here.
    const whole = wrk(`whole run (${WARMUP}+${HANG}+${AFTER} s)`, gw.url, gw.key, WARMUP + HANG + AFTER);
    await new Promise((r) => setTimeout(r, WARMUP * 1000));
    await fault(gw.control, { hang: true });
    await new Promise((r) => setTimeout(r, HANG * 1000));
    await fault(gw.control, undefined);
    windows.push(await whole);
    // The node back in rotation (a probe round after the fault), then the hang's window alone, for its percentiles.
    await waitInRotation(gw.admin);
    windows.push(await wrk('before', gw.url, gw.key, WARMUP));
    await fault(gw.control, { hang: true });
    windows.push(await wrk(`${NODE} hung`, gw.url, gw.key, HANG));
    await fault(gw.control, undefined);
    const metrics = await (await fetch(`${gw.admin}/metrics`)).text();
    const chains = (await (await fetch(`${gw.admin}/health/chains`)).json()) as {
      chains: Array<{ chain: string; nodes: Array<{ name: string; inRotation: boolean; reason: string | null; ejections: number }> }>;
    };
    console.log(`\n${new Date().toISOString()}  wrk -t1 -c${CONNECTIONS} --timeout 2s, eth_getTransactionCount(addr, "pending") on /l1`);
    console.log('window              calls    calls/s  over 2 s  non-2xx     p50 ms     p90 ms     p99 ms     max ms');
    for (const w of windows) {
      console.log(
        `${w.name.padEnd(18)}${String(w.requests).padStart(7)}${w.rps.toFixed(0).padStart(11)}${String(w.timeouts).padStart(10)}${String(w.non2xx).padStart(9)}` +
          `${w.p50.toFixed(1).padStart(11)}${w.p90.toFixed(1).padStart(11)}${w.p99.toFixed(1).padStart(11)}${w.maxMs.toFixed(1).padStart(11)}`,
      );
    }
    for (const name of [
      'noderouter_hedges_total',
      'noderouter_node_ejections_total',
      'noderouter_node_transitions_total',
      'noderouter_breaker_transitions_total',
    ]) {
      for (const s of series(metrics, name)) console.log(`${name}${s}`);
    }
    for (const n of chains.chains.find((c) => c.chain === 'l1')?.nodes ?? []) {
      console.log(`${n.name}: ${n.inRotation ? 'in rotation' : `out (${n.reason})`}, ejections ${n.ejections}`);
    }
  } finally {
    gw.child.kill('SIGINT');
    await new Promise((r) => gw.child.once('exit', r));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
