// A third-party plugin installed as an npm package (test/fixtures/noderouter-plugin-fixture,
// a devDependency) is loaded by its package name from a config file, through the
// public SDK only, and serves a chain endpoint of the real gateway in front of real
// nodes: its options are validated, its routing applies (cost, cache), its probes run,
// and the errors its SDK calls throw are the core's own.

import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { Gateway } from '../../src/app/gateway.js';
import { silentLogger } from '../../src/ops/log.js';
import { rpc } from '../support/harness.js';
import { jsonRpcHandler, startRpcNode, type RpcNode } from '../support/rpc-node.js';
import { until } from '../support/until.js';

const PLUGIN = 'noderouter-plugin-fixture';

describe('a third-party plugin loaded by package name', function () {
  this.timeout(30_000);
  let dir: string;
  let nodes: RpcNode[];
  let gateway: Gateway;
  let key: string;

  const node = (name: string): Promise<RpcNode> =>
    startRpcNode(
      jsonRpcHandler((method) =>
        method === 'fixture_height'
          ? { result: 77 }
          : method === 'fixture_hello'
            ? { result: `hello from ${name}` }
            : { error: { code: -32601, message: 'no such method' } },
      ),
    );

  const configText = (options: string): string => `
server: { host: 127.0.0.1, port: 0, adminHost: 127.0.0.1, adminPort: 0 }
log: { level: silent }
store: { record: { kind: sqlite, path: "${join(dir, 'noderouter.db')}" } }
tiers:
  t: { rate: unlimited, burst: unlimited, daily: 100 }
chains:
  fx:
    plugin: ${PLUGIN}
    route: { path: /fx }
    options: ${options}
    health: { intervalMs: 60000, timeoutMs: 1000 }
    nodes:
${nodes.map((n, i) => `      - { name: fx-${i + 1}, url: "${n.url}", role: full }`).join('\n')}
`;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'noderouter-plugin-'));
    nodes = [await node('fx-1'), await node('fx-2')];
    await writeFile(join(dir, 'gateway.yaml'), configText('{ helloCost: 7 }'));
    gateway = await Gateway.start(await loadConfig(join(dir, 'gateway.yaml')), { logger: silentLogger });
    key = (await gateway.keys.create({ account: 'a', tier: 't' })).value;
  });

  after(async () => {
    await gateway.close();
    for (const n of nodes) await n.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the chain endpoint through the package’s codec, routing and probes', async () => {
    const rt = gateway.runtimes().find((c) => c.name === 'fx');
    expect(rt?.config.plugin).to.equal(PLUGIN);
    await until(() => nodes.every((n) => n.methods().includes('fixture_height')), { what: 'the plugin’s probes reached the nodes' });
    await until(() => rt?.pool.view.head === 77, { what: 'the probes were read' });

    const first = await rpc(`${gateway.url}/fx`, { jsonrpc: '2.0', id: 'a', method: 'fixture_hello' }, { apikey: key });
    expect(first.status).to.equal(200);
    expect(first.json).to.deep.equal({ jsonrpc: '2.0', id: 'a', result: 'hello from fx-1' });
    expect(first.headers.get('x-cache')).to.equal('MISS');
    // The plugin's cost: 7 of the daily 100.
    expect(first.headers.get('ratelimit-remaining')).to.equal('93');
    // The plugin's cache lifetime: the second greeting comes from the cache.
    const second = await rpc(`${gateway.url}/fx`, { jsonrpc: '2.0', id: 2, method: 'fixture_hello' }, { apikey: key });
    expect(second.json).to.deep.equal({ jsonrpc: '2.0', id: 2, result: 'hello from fx-1' });
    expect(second.headers.get('x-cache')).to.equal('HIT');
    expect(nodes.flatMap((n) => n.methods()).filter((m) => m === 'fixture_hello')).to.have.length(1);
  });

  it('answers with the core’s errors for what the package’s SDK calls refuse', async () => {
    const bad = await rpc(`${gateway.url}/fx`, '{not json', { apikey: key });
    expect(bad.status).to.equal(400);
    // A GatewayError from the package's SDK is the core's own class: its code survives (else INVALID_REQUEST).
    expect(bad.json).to.deep.include({ error: { code: -32700, message: 'Parse error: body is not valid JSON' } });
    const get = await fetch(`${gateway.url}/fx`, { headers: { apikey: key } });
    expect(get.status).to.equal(405);
  });

  it('has the package validate its options in the config', async () => {
    await writeFile(join(dir, 'bad.yaml'), configText('{ helloCost: -1, colour: red }'));
    let problems: readonly string[] = [];
    try {
      await loadConfig(join(dir, 'bad.yaml'));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems;
    }
    expect(problems).to.deep.equal([
      'chains.fx.options.colour is not a known option (known: helloCost)',
      'chains.fx.options.helloCost must be a positive integer',
    ]);
  });
});
