// Redis deployments that survive a failover, made of the test's own redis-server
// processes on free loopback ports: a master with a replica watched by three sentinels
// (quorum two, a master declared down after 300 ms), and a cluster of three masters
// (no replicas) with the slots spread by `redis-cli --cluster create`.

import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './ports.js';
import { OwnRedis } from './redis-server.js';
import { until } from './until.js';

const run = promisify(execFile);

async function ask(port: number, ...command: string[]): Promise<unknown> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: true });
  try {
    return await r.call(command[0] as string, ...command.slice(1));
  } finally {
    r.disconnect();
  }
}

export class SentinelGroup {
  private constructor(
    readonly name: string,
    readonly master: OwnRedis,
    readonly replica: OwnRedis,
    readonly sentinels: readonly OwnRedis[],
    private readonly dir: string,
  ) {}

  static async start(name = 'nrmaster'): Promise<SentinelGroup> {
    const dir = await mkdtemp(join(tmpdir(), 'noderouter-sentinel-'));
    const master = await OwnRedis.start();
    const replica = await OwnRedis.start({ args: () => ['--replicaof', '127.0.0.1', String(master.port)] });
    await until(async () => String(await ask(master.port, 'INFO', 'replication')).includes('connected_slaves:1'), {
      what: 'the replica is attached',
    });
    const sentinels: OwnRedis[] = [];
    for (let i = 0; i < 3; i++) {
      sentinels.push(
        await OwnRedis.start({
          sentinelConfig: {
            path: join(dir, `sentinel-${i}.conf`),
            text: (port) =>
              [
                `port ${port}`,
                'bind 127.0.0.1',
                `dir ${dir}`,
                `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
                `sentinel down-after-milliseconds ${name} 300`,
                `sentinel failover-timeout ${name} 3000`,
                `sentinel parallel-syncs ${name} 1`,
                '',
              ].join('\n'),
          },
        }),
      );
    }
    const group = new SentinelGroup(name, master, replica, sentinels, dir);
    // A failover needs the sentinels to know each other and the replica.
    await until(
      async () => {
        const m = (await ask(sentinels[0]?.port ?? 0, 'SENTINEL', 'MASTER', name)) as string[];
        const field = (k: string): number => Number(m[m.indexOf(k) + 1]);
        return field('num-other-sentinels') === 2 && field('num-slaves') === 1;
      },
      { what: 'the sentinels know each other and the replica', timeoutMs: 15_000, everyMs: 100 },
    );
    return group;
  }

  /** `sentinels:` as the config writes it (flow YAML). */
  get sentinelsYaml(): string {
    return `[${this.sentinels.map((s) => `"${s.address}"`).join(', ')}]`;
  }

  /** The master's port as the sentinels name it now. */
  async masterPort(): Promise<number> {
    for (const s of this.sentinels) {
      const addr = (await ask(s.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name).catch(() => null)) as string[] | null;
      if (addr !== null) return Number(addr[1]);
    }
    throw new Error('no sentinel names a master');
  }

  async close(): Promise<void> {
    for (const s of this.sentinels) await s.kill();
    await this.replica.kill();
    await this.master.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}

export class OwnCluster {
  private constructor(
    readonly nodes: readonly OwnRedis[],
    private readonly dir: string,
  ) {}

  /** Three masters, every slot assigned, the cluster state ok on each. */
  static async start(): Promise<OwnCluster> {
    const dir = await mkdtemp(join(tmpdir(), 'noderouter-cluster-'));
    const nodes: OwnRedis[] = [];
    for (let i = 0; i < 3; i++) {
      // The bus port is named: the default (port + 10000) may be past 65535.
      const bus = await freePort();
      nodes.push(
        await OwnRedis.start({
          args: (port) => [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, `nodes-${port}.conf`),
            '--cluster-port',
            String(bus),
            '--cluster-node-timeout',
            '2000',
          ],
        }),
      );
    }
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', '0', '--cluster-yes']);
    const cluster = new OwnCluster(nodes, dir);
    await until(
      async () => {
        for (const n of nodes) if (!String(await ask(n.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
        return true;
      },
      { what: 'the cluster is ok on every node', timeoutMs: 15_000, everyMs: 100 },
    );
    return cluster;
  }

  /** `cluster:` as the config writes it (flow YAML). */
  get yaml(): string {
    return `[${this.nodes.map((n) => `"${n.address}"`).join(', ')}]`;
  }

  /** How many keys each node holds under `prefix` (SCAN on each). */
  async keysPerNode(prefix: string): Promise<number[]> {
    const counts: number[] = [];
    for (const n of this.nodes) {
      const r = new Redis({ host: '127.0.0.1', port: n.port });
      let cursor = '0';
      let count = 0;
      try {
        do {
          const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          count += keys.length;
          cursor = next;
        } while (cursor !== '0');
      } finally {
        r.disconnect();
      }
      counts.push(count);
    }
    return counts;
  }

  async close(): Promise<void> {
    for (const n of this.nodes) await n.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}
