// A Redis server of a test's own (redis-server on PATH), on a free loopback port, with
// nothing saved to disk: a test may kill it and start it again empty on the same port.
// The same binary serves as a replica, a cluster node or (with --sentinel) a sentinel:
// redis-ha.ts assembles those. The shared test Redis (redis.ts) is for tests that only
// need one to be there.

import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { freePort } from './ports.js';

export interface OwnRedisOptions {
  /** More redis-server arguments (`--replicaof 127.0.0.1 6379`, `--cluster-enabled yes` …). */
  readonly args?: (port: number) => string[];
  /** A sentinel: this config file is written (a sentinel rewrites it) and run with --sentinel. */
  readonly sentinelConfig?: { readonly path: string; readonly text: (port: number) => string };
}

export class OwnRedis {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly options: OwnRedisOptions,
  ) {}

  static async start(options: OwnRedisOptions = {}): Promise<OwnRedis> {
    const r = new OwnRedis(await freePort(), options);
    await r.restart();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts the server (empty: nothing is saved) and resolves once it accepts connections. */
  async restart(): Promise<void> {
    if (this.child !== undefined) throw new Error('redis-server is already running');
    const sentinel = this.options.sentinelConfig;
    let args: string[];
    let ready: string;
    if (sentinel !== undefined) {
      await writeFile(sentinel.path, sentinel.text(this.port));
      args = [sentinel.path, '--sentinel'];
      ready = '+monitor';
    } else {
      args = [
        '--port',
        String(this.port),
        '--save',
        '',
        '--appendonly',
        'no',
        '--bind',
        '127.0.0.1',
        ...(this.options.args?.(this.port) ?? []),
      ];
      ready = 'Ready to accept connections';
    }
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
        if (out.includes(ready)) done();
      });
      child.once('exit', (code) => done(new Error(`redis-server exited (${code}) on ${this.port}: ${out}`)));
    });
    // Past start-up only the exit matters; the output is not kept.
    child.stdout?.removeAllListeners('data');
    child.stdout?.resume();
    child.stderr?.resume();
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
