// A Redis server of a test's own (redis-server on PATH), on a free loopback port, with
// nothing saved to disk: a test may kill it and start it again empty on the same port.
// The shared test Redis (redis.ts) is for tests that only need one to be there.

import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './ports.js';

export class OwnRedis {
  private child: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  static async start(): Promise<OwnRedis> {
    const r = new OwnRedis(await freePort());
    await r.restart();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server (empty: nothing is saved) and resolves once it accepts connections. */
  async restart(): Promise<void> {
    if (this.child !== undefined) throw new Error('redis-server is already running');
    const child = spawn('redis-server', ['--port', String(this.port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`redis-server did not start on ${this.port}: ${out}`)), 5_000);
      const done = (err?: Error): void => {
        clearTimeout(timer);
        if (err === undefined) resolve();
        else reject(err);
      };
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) done();
      });
      child.once('exit', (code) => done(new Error(`redis-server exited (${code}) on ${this.port}: ${out}`)));
    });
  }

  /** Kills the server at once (SIGKILL: no save, no goodbye to its clients) and waits until it is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }
}
