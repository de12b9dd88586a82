// The Kubernetes manifests' config (deploy/kubernetes/gateway.yaml, the ConfigMap) run
// as a pod runs it: `noderouter serve` with the Secret's values as its environment, on
// the test's PostgreSQL and Redis, its nodes simulated (the provider's node requiring
// the Secret's credentials). What the pod's probes read answers where they read it:
// liveness 200, readiness 200 once the nodes are probed, 503 through the drain after
// SIGTERM, and the process exits 0. A key made by the CLI, as the README does in a pod,
// calls a chain. Only the listeners' ports (0), the record's schema, the Redis prefix
// and the nodes' addresses differ from the shipped file.

import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseDocument } from 'yaml';
import { ROOT } from '../../deploy/prometheus-rule.js';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { lastLine, runCli } from '../support/cli.js';
import { get, rpc } from '../support/harness.js';
import { PG_URL, tempSchema, type TempSchema } from '../support/pg.js';
import { REDIS_URL, deleteUnderPrefix, testPrefix } from '../support/redis.js';
import { serve } from '../support/serve.js';
import { until } from '../support/until.js';

const DIR = join(ROOT, 'deploy', 'kubernetes');

interface NodeEntry {
  readonly name: string;
  readonly url: string;
  readonly role: 'full' | 'archive';
}
interface ChainEntry {
  readonly plugin: string;
  readonly network?: string;
  readonly nodes: readonly NodeEntry[];
}

describe('the Kubernetes config, served as a pod serves it', function () {
  this.timeout(90_000);
  let devnet: Devnet | undefined;
  let pg: TempSchema;
  let dir: string;
  const prefix = testPrefix();

  before(async () => {
    pg = await tempSchema();
    dir = await mkdtemp(join(tmpdir(), 'noderouter-k8s-'));
  });
  after(async () => {
    await devnet?.close();
    await pg.cleanup();
    await deleteUnderPrefix(prefix);
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the probes where the Deployment reads them, through start, service and drain', async () => {
    const secret = parse(await readFile(join(DIR, 'secret.yaml'), 'utf8')) as { stringData: Record<string, string> };
    const deployment = parse(await readFile(join(DIR, 'deployment.yaml'), 'utf8')) as {
      spec: {
        template: {
          spec: { containers: { readinessProbe: { httpGet: { path: string } }; livenessProbe: { httpGet: { path: string } } }[] };
        };
      };
    };
    const container = deployment.spec.template.spec.containers[0];
    const env: Record<string, string> = {
      ...secret.stringData,
      NODEROUTER_DATABASE_URL: PG_URL,
      NODEROUTER_REDIS_URL: REDIS_URL,
      PORT: '0',
      ADMIN_PORT: '0',
    };

    // One simulated node per node of the config; the provider's requires the Secret's credentials.
    const doc = parseDocument(await readFile(join(DIR, 'gateway.yaml'), 'utf8'));
    const chains = doc.toJS() as { chains: Record<string, ChainEntry> };
    const specs = Object.entries(chains.chains).flatMap(([chain, c]) =>
      c.nodes.map((n) => {
        const path = new URL(n.url.replace(/\$\{(\w+)\}/g, (_m, v: string) => env[v] ?? '')).pathname;
        return {
          network: c.network ?? chain,
          family: c.plugin,
          name: n.name,
          role: n.role,
          credentials: path === '/' ? undefined : { basePath: path, headers: { Authorization: `Bearer ${env.PROVIDER_TOKEN ?? ''}` } },
        };
      }),
    );
    expect(
      specs.filter((s) => s.credentials !== undefined),
      'a provider node',
    ).to.have.length(1);
    devnet = await startDevnet(specs, { blockTimeMs: 0, noControl: true, chainIds: { eth: 1 } });
    for (const [chain, c] of Object.entries(chains.chains)) {
      c.nodes.forEach((n, i) => {
        const url = new URL(n.url.replace(/^https:/, 'http:'));
        const sim = new URL(devnet?.node(n.name).url ?? '');
        // The host and port move to the simulated node; the path (with its ${ENV}) stays.
        doc.setIn(
          ['chains', chain, 'nodes', i, 'url'],
          n.url.replace(`${new URL(n.url).protocol}//${url.host}`, `${sim.protocol}//${sim.host}`),
        );
      });
    }
    doc.setIn(['server', 'grpcPort'], 0);
    doc.setIn(['store', 'record', 'schema'], pg.schema);
    doc.setIn(['store', 'hot', 'prefix'], prefix);
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, doc.toString());

    const served = await serve(['--config', file], { env, timeoutMs: 60_000 });
    try {
      const live = `${served.admin}${container?.livenessProbe.httpGet.path}`;
      const ready = `${served.admin}${container?.readinessProbe.httpGet.path}`;
      expect((await get(live)).status).to.equal(200);
      await until(async () => (await get(ready)).status === 200, { what: 'readiness says 200', timeoutMs: 20_000, everyMs: 100 });

      // The README's key, made with the pod's config and environment, calls a chain.
      const made = await runCli(['keys', 'create', '--account', 'acme', '--tier', 'growth', '--config', file], env);
      expect(made.code, made.stderr).to.equal(0);
      const answer = await rpc(
        `${served.url}/eth`,
        { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
        { apikey: lastLine(made.stdout) },
      );
      expect(answer.status, answer.text).to.equal(200);
      expect((answer.json as { result?: unknown }).result).to.match(/^0x[0-9a-f]+$/);
      // Every node in rotation: the provider's too, so the Secret's credentials reached it.
      const pools = (await get(`${served.admin}/health/chains`)).json as { chains: { nodes: { name: string; inRotation: boolean }[] }[] };
      const nodes = pools.chains.flatMap((c) => c.nodes.map((n) => [n.name, n.inRotation]));
      expect(Object.fromEntries(nodes)).to.deep.equal(Object.fromEntries(specs.map((s) => [s.name, true])));

      served.child.kill('SIGTERM');
      await until(async () => (await get(ready)).status === 503, { what: 'readiness says 503 on SIGTERM' });
      const draining = await get(ready);
      expect((draining.json as { lifecycle?: string }).lifecycle).to.equal('draining');
      expect((await get(live)).status, 'liveness holds through the drain').to.equal(200);
      expect(await served.exited).to.equal(0);
    } finally {
      if (served.child.exitCode === null) served.child.kill('SIGKILL');
    }
  });
});
