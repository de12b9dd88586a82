// npm run soak — minutes of mixed traffic against a real `noderouter serve` process:
// valid calls, batches, REST reads, archive reads, bad JSON, unknown keys and a key
// driven over its rate limit, while devnet nodes fail and recover one at a time and
// the config is reloaded half way. Reports requests by kind and status, the
// gateway's RSS over time, and exits non-zero on a crash, a leak trend or any
// status a kind should never get (a 5xx for a valid call means failover failed).
// SOAK_SECONDS (default 180) and SOAK_CONCURRENCY (default 16) tune it.

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openFileKeyStore } from '../src/auth/file-key-store.js';
import { startDevnet } from '../src/devnet/index.js';
import { configYaml, type ChainSpec } from '../test/support/harness.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.SOAK_SECONDS ?? 180);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16);

const CHAINS: ChainSpec[] = [
  {
    name: 'l1',
    plugin: 'evm',
    path: '/l1',
    nodes: [
      { name: 'l1-a', role: 'full' },
      { name: 'l1-b', role: 'full' },
      { name: 'l1-c', role: 'full' },
      { name: 'l1-arch', role: 'archive' },
    ],
  },
  {
    name: 'hub-rest',
    plugin: 'sdk-rest',
    path: '/hub/rest',
    network: 'hub',
    nodes: [
      { name: 'hr-a', role: 'full' },
      { name: 'hr-b', role: 'full' },
      { name: 'hr-arch', role: 'archive' },
    ],
  },
];
const TIERS = `
  tiny: { rate: 5, burst: 5 }
  enterprise: { rate: unlimited, maxBatch: 1000, archive: true }
`;

/** Statuses each kind of request may get; anything else is a finding. */
const ALLOWED: Record<string, readonly number[]> = {
  single: [200],
  batch: [200],
  rest: [200],
  archive: [200],
  badJson: [400],
  unknownKey: [401],
  overLimit: [200, 429],
};

async function main(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-soak-'));
  const specs = CHAINS.flatMap((c) =>
    c.nodes.map((n) => ({ network: c.network ?? c.name, family: c.plugin, name: n.name, role: n.role ?? ('full' as const) })),
  );
  const devnet = await startDevnet(specs, { blockTimeMs: 500, noControl: true, fullRetention: 64 });
  const storePath = join(dir, 'keys.json');
  const file = join(dir, 'gateway.yaml');
  const urls = new Map([...devnet.nodes.values()].map((n) => [n.name, n.url]));
  const yaml = configYaml(CHAINS, urls, { tiers: TIERS, storeYaml: `{ kind: file, path: "${storePath}" }`, probeIntervalMs: 500 });
  await writeFile(file, yaml.replace('log: { level: silent }', 'log: { level: warn }'));
  const store = await openFileKeyStore(storePath);
  const key = (await store.create({ account: 'soak', tier: 'enterprise' })).value;
  const tiny = (await store.create({ account: 'soak', tier: 'tiny' })).value;
  await store.close();

  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin.ts', 'serve', '--config', file], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  let crashed = false;
  child.on('exit', (code) => {
    if (!stopping) {
      crashed = true;
      console.error(`gateway exited unexpectedly with code ${code}`);
    }
  });
  let stopping = false;
  const t0 = Date.now();
  while (!/serving (\S+) \(admin (\S+)\)/.test(out) && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
  const m = /serving (\S+) \(admin (\S+)\)/.exec(out);
  if (m === null) throw new Error(`gateway did not start:\n${out}`);
  const [, url, admin] = m;

  const rss = async (): Promise<number> => {
    const text = await (await fetch(`${admin}/metrics`)).text();
    return Number(/noderouter_process_resident_memory_bytes (\d+)/.exec(text)?.[1] ?? 0);
  };
  const samples: number[] = [await rss()];
  const counts = new Map<string, number>();
  const findings: string[] = [];
  const json = { 'content-type': 'application/json' };
  const kinds: Array<[string, () => Promise<Response>]> = [
    [
      'single',
      () =>
        fetch(`${url}/l1`, {
          method: 'POST',
          headers: { ...json, apikey: key },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}',
        }),
    ],
    [
      'batch',
      () =>
        fetch(`${url}/l1`, {
          method: 'POST',
          headers: { ...json, apikey: key },
          body: JSON.stringify([1, 2, 3, 4, 5].map((id) => ({ jsonrpc: '2.0', id, method: 'eth_chainId' }))),
        }),
    ],
    ['rest', () => fetch(`${url}/hub/rest/cosmos/auth/v1beta1/params`, { headers: { apikey: key } })],
    [
      'archive',
      () =>
        fetch(`${url}/l1`, {
          method: 'POST',
          headers: { ...json, apikey: key },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x00000000000000000000000000000000000000aa","0x5"]}',
        }),
    ],
    ['badJson', () => fetch(`${url}/l1`, { method: 'POST', headers: { ...json, apikey: key }, body: '{"jsonrpc":' })],
    [
      'unknownKey',
      () =>
        fetch(`${url}/l1`, {
          method: 'POST',
          headers: { ...json, apikey: `nrk_${'0'.repeat(32)}` },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
        }),
    ],
    [
      'overLimit',
      () =>
        fetch(`${url}/l1`, { method: 'POST', headers: { ...json, apikey: tiny }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' }),
    ],
  ];
  const end = Date.now() + SECONDS * 1000;
  const worker = async (w: number): Promise<void> => {
    for (let i = w; Date.now() < end && !crashed; i++) {
      const [kind, send] = kinds[i % kinds.length] as [string, () => Promise<Response>];
      let status = 0;
      try {
        const res = await send();
        await res.arrayBuffer();
        status = res.status;
      } catch (err) {
        findings.push(`${kind}: request failed (${(err as Error).message})`);
      }
      counts.set(`${kind} ${status}`, (counts.get(`${kind} ${status}`) ?? 0) + 1);
      if (!(ALLOWED[kind] ?? []).includes(status) && findings.length < 50) findings.push(`${kind}: unexpected status ${status}`);
    }
  };
  // One node at a time fails and recovers, so every chain always has a healthy node.
  const faults = [{ down: true }, { hang: true }, { html: true }, { status: 503 }, { truncated: true }, { latencyMs: 300 }];
  const victims = ['l1-a', 'l1-b', 'l1-c', 'hr-a', 'hr-b'];
  let f = 0;
  const chaos = setInterval(() => {
    void (async () => {
      for (const v of victims) await devnet.node(v).clearFaults();
      await devnet.node(victims[f % victims.length] as string).setFaults(faults[f % faults.length] as object);
      f++;
    })();
  }, 5_000);
  const sampler = setInterval(
    () =>
      void rss()
        .then((r) => samples.push(r))
        .catch(() => undefined),
    5_000,
  );
  const reload = setTimeout(
    () => {
      void readFile(file, 'utf8').then(async (text) => {
        await writeFile(file, text.replace('    network: l1\n', '    network: l1\n    strategy: least-latency\n'));
        child.kill('SIGHUP');
        console.log('config reloaded (l1 strategy → least-latency)');
      });
    },
    (SECONDS * 1000) / 2,
  );
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  clearInterval(chaos);
  clearInterval(sampler);
  clearTimeout(reload);
  samples.push(await rss().catch(() => 0));
  stopping = true;
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', resolve),
  );
  await devnet.close();
  await rm(dir, { recursive: true, force: true });

  console.log('\nrequests by kind and status:');
  for (const [k, n] of [...counts].sort()) console.log(`  ${k.padEnd(18)} ${n}`);
  const mb = (b: number): string => `${(b / 1048576).toFixed(1)} MB`;
  console.log(`\ngateway RSS: start ${mb(samples[0] ?? 0)}, end ${mb(samples[samples.length - 1] ?? 0)} (${samples.length} samples)`);
  const third = Math.max(1, Math.floor(samples.length / 3));
  const avg = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const early = avg(samples.slice(1, 1 + third));
  const late = avg(samples.slice(-third));
  const leak = late > early * 1.5 && late - early > 50 * 1048576;
  if (leak) findings.push(`RSS grew from ${mb(early)} to ${mb(late)}: a leak trend`);
  if (crashed) findings.push('the gateway crashed');
  if (code !== 0) findings.push(`the gateway exited ${code} on SIGTERM`);
  if (findings.length > 0) {
    console.log(`\nFAILED:\n${[...new Set(findings)].map((x) => `  - ${x}`).join('\n')}`);
    return 1;
  }
  console.log('\nsoak passed: no crash, no leak trend, no unexpected status');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
