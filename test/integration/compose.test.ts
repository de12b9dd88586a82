// compose.yaml as `docker compose up` runs it, with podman-compose and the image .ci/run
// built (NODEROUTER_IMAGE): the gateway, the devnet, PostgreSQL, Redis and Prometheus
// (Grafana has no local stand-in image, and podman-compose ignores profiles, so the
// services are named), under a project name and free ports of the test's own. The
// gateway comes up on PostgreSQL and Redis, the README's curl lines work through it with
// a key made by the CLI inside it, and Prometheus scrapes it and loaded the alert rules.

import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { command, IMAGE, logsOf, podman, requireContainers } from '../support/podman.js';
import { freePort } from '../support/ports.js';
import { until } from '../support/until.js';

const SERVICES = ['noderouter', 'devnet', 'postgres', 'redis', 'prometheus'];

describe('compose stack', function () {
  // Five containers, PostgreSQL's first start among them.
  this.timeout(180_000);
  const project = `nrtest${process.pid}${Date.now().toString(36)}`;
  const env: Record<string, string> = { NODEROUTER_IMAGE: IMAGE };
  let started = false;
  let traffic = '';
  let admin = '';
  let prometheus = '';

  const compose = (...args: string[]) => command('podman-compose', ['-p', project, ...args], env, 150_000);
  const containerOf = async (service: string): Promise<string> =>
    podman('ps', '-q', '--filter', `label=io.podman.compose.project=${project}`, '--filter', `label=com.docker.compose.service=${service}`);

  before(async function () {
    await requireContainers(this, ['podman', 'podman-compose']);
    for (const name of ['NODEROUTER_PORT', 'NODEROUTER_ADMIN_PORT', 'NODEROUTER_GRPC_PORT', 'DEVNET_CONTROL_PORT', 'PROMETHEUS_PORT']) {
      env[name] = String(await freePort());
    }
    traffic = `http://127.0.0.1:${env.NODEROUTER_PORT}`;
    admin = `http://127.0.0.1:${env.NODEROUTER_ADMIN_PORT}`;
    prometheus = `http://127.0.0.1:${env.PROMETHEUS_PORT}`;
    started = true;
    const up = await compose('up', '-d', ...SERVICES);
    if (up.code !== 0) throw new Error(`podman-compose up exited ${up.code}: ${up.stderr.slice(-2000)}`);
    // podman-compose starts services in order without waiting for health: the gateway
    // may start before PostgreSQL takes connections, and its restart policy retries.
    await until(async () => (await fetch(`${admin}/health/ready`).catch(() => undefined))?.status === 200, {
      what: 'the gateway answers /health/ready 200',
      timeoutMs: 120_000,
      everyMs: 250,
    }).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await logsOf(await containerOf('noderouter'))}`);
    });
  });

  after(async () => {
    if (!started) return;
    // down leaves the network and the volumes (named and anonymous): collected first.
    const ids = (await podman('ps', '-aq', '--filter', `label=io.podman.compose.project=${project}`)).split('\n').filter((s) => s !== '');
    const volumes =
      ids.length === 0
        ? []
        : (await podman('inspect', '--format', '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}', ...ids)).split(/\s+/);
    await compose('down', '-t', '10');
    await command('podman', ['rm', '-f', '-t', '0', ...ids]);
    const named = volumes.filter((v) => v !== '');
    if (named.length > 0) await command('podman', ['volume', 'rm', '-f', ...named]);
    await command('podman', ['network', 'rm', '-f', `${project}_default`]);
  });

  it('the gateway keeps its record in PostgreSQL and its hot state in Redis', async () => {
    const ready = (await (await fetch(`${admin}/health/ready`)).json()) as { store: { record: string; hot: string; up: boolean } };
    expect(ready.store).to.deep.include({ record: 'postgres', hot: 'redis', up: true });
  });

  it('the README’s curl lines answer through the stack with a key made by the CLI in the container', async () => {
    const gateway = await containerOf('noderouter');
    const out = await podman('exec', gateway, 'noderouter', 'keys', 'create', '--account', 'compose-test', '--tier', 'growth');
    const key = out.split('\n').at(-1) ?? '';
    expect(key).to.match(/^nrk_/);
    const post = (path: string, body: string) =>
      fetch(`${traffic}${path}`, { method: 'POST', headers: { apikey: key, 'content-type': 'application/json' }, body });
    await until(async () => (await post('/l1', '{"jsonrpc":"2.0","id":0,"method":"eth_chainId"}')).status === 200, {
      what: 'the new key is served',
      timeoutMs: 10_000,
      everyMs: 100,
    });
    // Every curl line of the README's endpoints, as written, on the stack's ports.
    const readme = await readFile('README.md', 'utf8');
    const lines = readme.split('\n').filter((l) => l.startsWith('curl ') && l.includes('http://127.0.0.1:8080/'));
    for (const path of ['/l1', '/objectx', '/hub/rpc/abci_info', '/hub/rest/sdk/auth/v1beta1/params', '/hub/rest-archive/']) {
      expect(
        lines.some((l) => l.includes(`http://127.0.0.1:8080${path}`)),
        path,
      ).to.equal(true);
    }
    for (const line of lines) {
      const r = await command('bash', ['-c', line.replaceAll('http://127.0.0.1:8080', traffic)], { KEY: key });
      expect(r.code, `${line}: ${r.stderr}`).to.equal(0);
      const body = JSON.parse(r.stdout) as unknown;
      for (const item of (Array.isArray(body) ? body : [body]) as Record<string, unknown>[]) {
        expect(item, line).to.not.have.property('error');
        expect(item.result ?? item.params, line).to.not.equal(undefined);
      }
    }
  });

  it('Prometheus scrapes the gateway’s /metrics and loaded the shipped alert rules', async () => {
    let target: { health: string; scrapeUrl: string; lastError: string } | undefined;
    await until(
      async () => {
        const res = (await (await fetch(`${prometheus}/api/v1/targets`)).json()) as { data: { activeTargets: (typeof target & object)[] } };
        target = res.data.activeTargets.find((t) => t.scrapeUrl.endsWith('/metrics'));
        return target?.health === 'up';
      },
      { what: 'Prometheus reports the noderouter target up', timeoutMs: 60_000, everyMs: 500 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(target)}`);
    });
    expect(target?.scrapeUrl).to.equal('http://noderouter:8081/metrics');
    const config = parse(await readFile('config/compose.yaml', 'utf8')) as { chains: Record<string, { nodes: unknown[] }> };
    const nodes = Object.values(config.chains).reduce((n, c) => n + c.nodes.length, 0);
    const shipped = parse(await readFile('grafana/alerts.yml', 'utf8')) as { groups: { name: string; rules: { alert: string }[] }[] };
    const rules = (await (await fetch(`${prometheus}/api/v1/rules`)).json()) as {
      data: { groups: { name: string; rules: { name: string }[] }[] };
    };
    expect(rules.data.groups.map((g) => [g.name, g.rules.map((r) => r.name)])).to.deep.equal(
      shipped.groups.map((g) => [g.name, g.rules.map((r) => r.alert)]),
    );
    // Series the gateway exports, as Prometheus stored them: every devnet node's health.
    await until(
      async () => {
        const q = (await (
          await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent('count(noderouter_node_up == 1)')}`)
        ).json()) as {
          data: { result: { value: [number, string] }[] };
        };
        return q.data.result[0]?.value[1] === String(nodes);
      },
      { what: `Prometheus holds noderouter_node_up == 1 for the config's ${nodes} nodes`, timeoutMs: 30_000, everyMs: 500 },
    );
  });
});
