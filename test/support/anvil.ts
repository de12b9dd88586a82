// Real EVM nodes for tests: anvil from @foundry-rs/anvil-linux-amd64, the binary the
// @foundry-rs/anvil wrapper would pick here (the registry this project reaches holds
// only this platform's package, so the wrapper's lockfile cannot be complete). On
// loopback, mining only when told, with a fixed genesis time, so several anvils given
// the same transactions and timestamps hold the same chain. Each sits behind a
// recording proxy, so a test can see exactly what reached it.

import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const GENESIS_TIME = 1_700_000_000;

export interface Recorded {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly url: string;
  readonly body: string;
}

export class Anvil {
  private constructor(
    /** Every request that reached this node through its proxy. */
    readonly received: Recorded[],
    private readonly proc: ChildProcess,
    /** anvil's own address. */
    readonly direct: string,
    private readonly proxy: Server,
    /** The recording proxy in front of it: what the gateway is given. */
    readonly url: string,
  ) {}

  static async start(args: readonly string[] = []): Promise<Anvil> {
    const bin = join(dirname(require.resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin', 'anvil');
    const proc = spawn(bin, ['--port', '0', '--no-mining', '--timestamp', String(GENESIS_TIME), '--chain-id', '31337', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const direct = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`anvil did not start: ${out}`)), 15_000);
      proc.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /Listening on (\S+)/.exec(out);
        if (m !== null) {
          clearTimeout(timer);
          resolve(`http://${m[1]}`);
        }
      });
      proc.on('exit', (code) => reject(new Error(`anvil exited ${code}: ${out}`)));
    });
    const received: Recorded[] = [];
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        received.push({ headers: { ...req.headers }, url: req.url ?? '/', body });
        fetch(direct, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
          async (r) => {
            const text = await r.text();
            res.writeHead(r.status, { 'content-type': 'application/json' });
            res.end(text);
          },
          () => {
            res.writeHead(502);
            res.end();
          },
        );
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
    return new Anvil(received, proc, direct, proxy, `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
  }

  async rpc(method: string, params: unknown[] = []): Promise<unknown> {
    const res = await fetch(this.direct, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await res.json()) as { result?: unknown; error?: { message: string } };
    if (body.error !== undefined) throw new Error(body.error.message);
    return body.result;
  }

  async stop(): Promise<void> {
    this.proc.kill('SIGKILL');
    this.proxy.closeAllConnections();
    await new Promise<void>((resolve) => this.proxy.close(() => resolve()));
  }
}

/** Mine one block on every anvil at the same timestamp, so they stay one chain. */
export async function mineAll(nodes: readonly Anvil[], index: number): Promise<void> {
  for (const n of nodes) await n.rpc('evm_mine', [GENESIS_TIME + index * 12]);
}

/** Give every anvil a raw transaction (the network's gossip, done by hand). */
export async function broadcast(nodes: readonly Anvil[], raw: string): Promise<void> {
  for (const n of nodes) await n.rpc('eth_sendRawTransaction', [raw]).catch(() => undefined);
}
