// SIGTERM on a running `noderouter serve`: readiness turns 503 while requests are still
// served for server.shutdownDelayMs, then the listener stops accepting, idle kept-alive
// connections close cleanly, in-flight requests finish (answered with connection:
// close), usage is flushed to disk, and the process exits 0. Under steady keep-alive
// load no request goes unanswered and no connection is reset.

import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { configYaml, DEFAULT_TIERS, get, rpc, storeYaml } from '../support/harness.js';
import { recordKeys, recordUsage } from '../support/record.js';
import { KeepAliveConnection, type KeptAnswer } from '../support/keep-alive.js';
import { serve } from '../support/serve.js';
import { until } from '../support/until.js';

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
    const storePath = join(dir, 'keys.db');
    const file = join(dir, 'gateway.yaml');
    await writeFile(
      file,
      configYaml(
        [{ name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 's-full-1', role: 'full' }] }],
        new Map([['s-full-1', devnet.node('s-full-1').url]]),
        {
          tiers: DEFAULT_TIERS,
          storeYaml: storeYaml(storePath),
          probeIntervalMs: 60_000,
          serverYaml: 'shutdownDelayMs: 50',
        },
      ),
    );
    const store = recordKeys(storePath);
    const { record, value } = await store.create({ account: 'a', tier: 'enterprise' });
    await store.close();

    const { url, admin, child, exited } = await serve(['--config', file], { timeoutMs: 15_000 });
    await devnet.node('s-full-1').setFaults({ hold: true });
    const inflight = rpc(`${url}/l1`, { jsonrpc: '2.0', id: 7, method: 'eth_blockNumber' }, { apikey: value });
    // The call waits at the node while the gateway is told to stop.
    await until(() => devnet.node('s-full-1').received.some((r) => r.body.includes('"id":7')), { what: 'the node has the call' });
    child.kill('SIGTERM');
    await until(async () => (await get(`${admin}/health/ready`)).status === 503, { what: 'readiness says 503' });
    await devnet.node('s-full-1').clearFaults();
    const res = await inflight;
    expect(res.status).to.equal(200);
    expect((res.json as { id: number; result: string }).result).to.match(/^0x/);
    expect(await exited).to.equal(0);
    expect(recordUsage(storePath)[record.id]?.[0]?.calls).to.equal(1);
    await devnet.node('s-full-1').clearFaults();
  });

  it('loses nothing under keep-alive load: serves through the delay, then closes idle connections cleanly and answers in-flight ones with connection: close', async () => {
    const load = await startDevnet(
      [
        { network: 'a', family: 'evm', name: 'k-a-1', role: 'full' },
        { network: 'b', family: 'evm', name: 'k-b-1', role: 'full' },
      ],
      { blockTimeMs: 0, noControl: true },
    );
    const storePath = join(dir, 'keys-load.db');
    const file = join(dir, 'load.yaml');
    await writeFile(
      file,
      configYaml(
        [
          { name: 'a', plugin: 'evm', path: '/a', nodes: [{ name: 'k-a-1', role: 'full' }] },
          { name: 'b', plugin: 'evm', path: '/b', nodes: [{ name: 'k-b-1', role: 'full' }] },
        ],
        new Map([...load.nodes.values()].map((n) => [n.name, n.url])),
        {
          tiers: DEFAULT_TIERS,
          storeYaml: storeYaml(storePath),
          probeIntervalMs: 60_000,
          serverYaml: 'shutdownDelayMs: 2500, shutdownTimeoutMs: 20000',
        },
      ),
    );
    const store = recordKeys(storePath);
    const { value } = await store.create({ account: 'a', tier: 'enterprise' });
    await store.close();
    const { url, admin, child, exited } = await serve(['--config', file], { timeoutMs: 15_000 });
    const port = Number(new URL(url).port);
    const headers = { apikey: value };
    let sent = 0;
    const answers: KeptAnswer[] = [];
    const post = async (c: KeepAliveConnection, path: string): Promise<KeptAnswer> => {
      sent++;
      const a = await c.post(path, `{"jsonrpc":"2.0","id":${sent},"method":"eth_blockNumber"}`, headers);
      answers.push(a);
      return a;
    };
    try {
      await load.node('k-a-1').setFaults({ latencyMs: 5 });
      // 28 connections of steady load on /a; 4 more whose next request waits at /b's node.
      const steady = await Promise.all(Array.from({ length: 28 }, () => KeepAliveConnection.open(port)));
      const held = await Promise.all(Array.from({ length: 4 }, () => KeepAliveConnection.open(port)));
      for (const c of held) await post(c, '/b');
      let lbSending = true;
      const loops = steady.map(async (c) => {
        while (lbSending) await post(c, '/a');
      });
      await until(() => answers.length >= 28 * 5, { what: 'the steady load runs' });
      await load.node('k-b-1').setFaults({ hold: true });
      const inFlight = held.map((c) => post(c, '/b'));
      await until(() => load.node('k-b-1').received.filter((r) => r.body.includes('eth_blockNumber')).length >= 8, {
        what: "/b's node has the held calls",
      });

      child.kill('SIGTERM');
      await until(async () => (await get(`${admin}/health/ready`)).status === 503, { what: 'readiness says 503' });
      // The load balancer sees readiness 503 and stops sending; what it still sends meanwhile is served.
      lbSending = false;
      await Promise.all(loops);
      const during = await Promise.all(steady.slice(0, 8).map((c) => post(c, '/a')));
      expect(during.map((a) => a.status)).to.deep.equal(Array(8).fill(200));
      expect(during.every((a) => a.headers.connection !== 'close')).to.equal(true);
      const fresh = await KeepAliveConnection.open(port);
      expect((await post(fresh, '/a')).status).to.equal(200);

      // Then the listener stops accepting and every idle connection is closed.
      await until(async () => !(await accepts(port)), { what: 'the listener stops accepting', timeoutMs: 10_000 });
      await Promise.all([...steady, fresh].map((c) => c.closed));
      await load.node('k-b-1').clearFaults();
      const last = await Promise.all(inFlight);
      expect(last.map((a) => a.status)).to.deep.equal([200, 200, 200, 200]);
      expect(last.every((a) => a.headers.connection === 'close')).to.equal(true);
      await Promise.all(held.map((c) => c.closed));
      expect(await exited).to.equal(0);

      expect(answers.length).to.equal(sent);
      expect(answers.every((a) => a.status === 200)).to.equal(true);
      for (const c of [...steady, ...held, fresh]) {
        expect(c.error?.message).to.equal(undefined);
        expect(c.ended, 'closed by the server with a FIN').to.equal(true);
      }
    } finally {
      child.kill('SIGKILL');
      await load.close();
    }
  });

  it('reloads when the config file changes and on SIGHUP', async () => {
    const storePath = join(dir, 'keys2.db');
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
        storeYaml: storeYaml(storePath),
        probeIntervalMs: 60_000,
        serverYaml: 'shutdownDelayMs: 50',
      });
    await writeFile(file, yaml(['/a']));
    const store = recordKeys(storePath);
    const { value } = await store.create({ account: 'a', tier: 'enterprise' });
    await store.close();
    const { url, child, exited } = await serve(['--config', file], { timeoutMs: 15_000 });
    const status = async (path: string) =>
      (await rpc(`${url}${path}`, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, { apikey: value })).status;
    const eventually = async (path: string, want: number): Promise<number> => {
      let got = 0;
      await until(async () => (got = await status(path)) === want, {
        what: `${path} answers ${want}`,
        timeoutMs: 6_000,
        everyMs: 50,
      }).catch(() => undefined);
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

/** Does the listener still take connections? */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
