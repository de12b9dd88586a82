// SIGTERM on a running `noderouter serve`: readiness turns 503, in-flight requests
// finish, usage is flushed to disk, and the process exits 0.

import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileKeyStore } from '../../src/auth/file-key-store.js';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { configYaml, DEFAULT_TIERS, get, rpc } from '../support/harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

async function startServe(file: string): Promise<{ url: string; admin: string; child: ChildProcess; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin.ts', 'serve', '--config', file], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const started = Date.now();
  while (!/serving (http:\/\/\S+) \(admin (http:\/\/\S+)\)/.test(out) && Date.now() - started < 15_000) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const m = /serving (http:\/\/\S+) \(admin (http:\/\/\S+)\)/.exec(out);
  if (m === null) throw new Error(`serve did not start: ${out}`);
  return { url: m[1] as string, admin: m[2] as string, child, exited };
}

describe('graceful shutdown', function () {
  this.timeout(30_000);
  let devnet: Devnet;
  let dir: string;

  before(async () => {
    devnet = await startDevnet([{ network: 'l1', family: 'evm', name: 's-full-1', role: 'full' }], { blockTimeMs: 0, noControl: true });
    dir = await mkdtemp(join(tmpdir(), 'noderouter-shutdown-'));
  });
  after(async () => {
    await devnet.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('drains in-flight requests, flushes usage and exits 0 on SIGTERM', async () => {
    const storePath = join(dir, 'keys.json');
    const file = join(dir, 'gateway.yaml');
    await writeFile(
      file,
      configYaml(
        [{ name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 's-full-1', role: 'full' }] }],
        new Map([['s-full-1', devnet.node('s-full-1').url]]),
        { tiers: DEFAULT_TIERS, storeYaml: `{ kind: file, path: "${storePath}" }`, probeIntervalMs: 60_000 },
      ),
    );
    const store = await FileKeyStore.open(storePath);
    const { record, value } = await store.create({ account: 'a', tier: 'enterprise' });
    await store.close();

    const { url, admin, child, exited } = await startServe(file);
    await devnet.node('s-full-1').setFaults({ hold: true });
    const inflight = rpc(`${url}/l1`, { jsonrpc: '2.0', id: 7, method: 'eth_blockNumber' }, { apikey: value });
    // The call waits at the node while the gateway is told to stop.
    while (!devnet.node('s-full-1').received.some((r) => r.body.includes('"id":7'))) await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGTERM');
    while ((await get(`${admin}/health/ready`)).status !== 503) await new Promise((r) => setTimeout(r, 10));
    await devnet.node('s-full-1').clearFaults();
    const res = await inflight;
    expect(res.status).to.equal(200);
    expect((res.json as { id: number; result: string }).result).to.match(/^0x/);
    expect(await exited).to.equal(0);
    const usage = JSON.parse(await readFile(join(dir, 'keys.usage.json'), 'utf8')) as { usage: Record<string, Array<{ calls: number }>> };
    expect(usage.usage[record.id]?.[0]?.calls).to.equal(1);
    await devnet.node('s-full-1').clearFaults();
  });

  it('reloads when the config file changes and on SIGHUP', async () => {
    const storePath = join(dir, 'keys2.json');
    const file = join(dir, 'watched.yaml');
    const chain = (path: string) => ({
      name: path.slice(1),
      plugin: 'evm' as const,
      path,
      nodes: [{ name: 's-full-1', role: 'full' as const }],
    });
    const yaml = (paths: string[]) =>
      configYaml(paths.map(chain), new Map([['s-full-1', devnet.node('s-full-1').url]]), {
        tiers: DEFAULT_TIERS,
        storeYaml: `{ kind: file, path: "${storePath}" }`,
        probeIntervalMs: 60_000,
      });
    await writeFile(file, yaml(['/a']));
    const store = await FileKeyStore.open(storePath);
    const { value } = await store.create({ account: 'a', tier: 'enterprise' });
    await store.close();
    const { url, child, exited } = await startServe(file);
    const status = async (path: string) =>
      (await rpc(`${url}${path}`, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, { apikey: value })).status;
    const eventually = async (path: string, want: number): Promise<number> => {
      let got = 0;
      for (let i = 0; i < 60 && got !== want; i++) {
        got = await status(path);
        if (got !== want) await new Promise((r) => setTimeout(r, 100));
      }
      return got;
    };
    expect(await status('/b')).to.equal(404);
    await writeFile(file, yaml(['/a', '/b']));
    expect(await eventually('/b', 200)).to.equal(200);
    // Written to a copy and moved in place, which some watchers miss: SIGHUP does not.
    await writeFile(`${file}.new`, yaml(['/a', '/b', '/c']));
    const { rename } = await import('node:fs/promises');
    await rename(`${file}.new`, file);
    child.kill('SIGHUP');
    expect(await eventually('/c', 200)).to.equal(200);
    child.kill('SIGTERM');
    expect(await exited).to.equal(0);
  });
});
