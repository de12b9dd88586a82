// Devnet families are found, not listed: every plugin folder with a devnet module has
// one of the folder's name, an installed plugin package may bring one as its `devnet`
// export, and the devnet behind a config simulates exactly the chains whose plugin has
// one.

import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { parseConfig } from '../../../src/config/load.js';
import type { GatewayConfig } from '../../../src/config/types.js';
import { devnetSpecs, startConfigDevnet } from '../../../src/devnet/from-config.js';
import { devnetFamilyNames, startDevnet } from '../../../src/devnet/index.js';
import { freePort } from '../../support/ports.js';

const FIXTURE = 'noderouter-plugin-fixture';

describe('devnet families', () => {
  let shipped: GatewayConfig;
  const withL1Plugin = (plugin: string): GatewayConfig => ({
    ...shipped,
    chains: { ...shipped.chains, l1: { ...shipped.chains.l1!, plugin } },
  });

  before(async () => {
    shipped = await parseConfig(await readFile('config/gateway.yaml', 'utf8'), 'config/gateway.yaml', {});
  });

  it('are the plugin folders with a devnet module', () => {
    expect([...devnetFamilyNames()].sort()).to.deep.equal(['evm', 'objectx', 'sdk-grpc', 'sdk-rest', 'sdk-rpc']);
  });

  it('a node of a family nothing simulates is refused with the families there are', async () => {
    for (const family of ['cardano', 'chai']) {
      let message = '';
      await startDevnet([{ network: 'x', family, name: 'n', role: 'full' }], { blockTimeMs: 0, noControl: true }).catch(
        (err: Error) => (message = err.message),
      );
      expect(message).to.equal(
        `no devnet family "${family}" (a plugin folder with a devnet module, or an installed plugin package with a devnet export; found: evm, objectx, sdk-grpc, sdk-rest, sdk-rpc)`,
      );
    }
  });

  it('an installed plugin package’s devnet export simulates its nodes', async () => {
    const devnet = await startDevnet([{ network: 'fx', family: FIXTURE, name: 'fx-1', role: 'full' }], {
      blockTimeMs: 0,
      startHeight: 40,
      noControl: true,
    });
    try {
      const call = async (method: string): Promise<unknown> => {
        const res = await fetch(devnet.node('fx-1').url, { method: 'POST', body: `{"jsonrpc":"2.0","id":1,"method":"${method}"}` });
        return ((await res.json()) as { result?: unknown }).result;
      };
      expect(devnet.node('fx-1').family).to.equal(FIXTURE);
      expect(await call('fixture_height')).to.equal(40);
      devnet.chains.get('fx')?.advance(2);
      expect(await call('fixture_height')).to.equal(42);
      expect(await call('fixture_hello')).to.equal('hello from fx-1');
    } finally {
      await devnet.close();
    }
  });

  it('the devnet of a config simulates every node of a chain whose plugin has a family, and skips the others', async () => {
    const { specs, skipped } = await devnetSpecs(shipped);
    expect(skipped).to.deep.equal([]);
    expect(new Set(specs.map((s) => s.family))).to.deep.equal(devnetFamilyNames());
    const names = shipped.chains.l1!.nodes.map((n) => `l1/${n.name}`);
    expect((await devnetSpecs(withL1Plugin('chai'))).skipped).to.deep.equal(names);
    const fixture = await devnetSpecs(withL1Plugin(FIXTURE));
    expect(fixture.skipped).to.deep.equal([]);
    expect(fixture.specs.filter((s) => s.family === FIXTURE).map((s) => s.name)).to.deep.equal(shipped.chains.l1!.nodes.map((n) => n.name));
  });

  it('the devnet of a config takes its filter lifetime and getLogs range from the config', async () => {
    const port = await freePort();
    const base = await parseConfig(
      `tiers: { free: { rate: 5 } }
devnet: { blockTimeMs: 0, filterTimeoutMs: 1000, maxLogsRange: 20 }
chains:
  l1:
    plugin: evm
    route: { path: /l1 }
    nodes: [{ name: n, url: "http://127.0.0.1:${port}", role: archive }]
`,
      '/x.yaml',
      {},
    );
    for (const [config, settings] of [
      [base, { fullRetention: 128, filterTimeoutMs: 1000, maxLogsRange: 20 }],
      [
        { ...base, devnet: { ...base.devnet, maxLogsRange: 0 } },
        { fullRetention: 128, filterTimeoutMs: 1000, maxLogsRange: null },
      ],
    ] as const) {
      const devnet = await startConfigDevnet(config);
      try {
        const list = (await (await fetch(`${devnet.controlUrl}/nodes`)).json()) as { settings: unknown };
        expect(list.settings).to.deep.equal(settings);
      } finally {
        await devnet.close();
      }
    }
  });

  it('the devnet of a config simulates a provider node where a node URL has a path or query, or the node has headers', async () => {
    const port = await freePort();
    const config = await parseConfig(
      `tiers: { free: { rate: 5 } }
devnet: { blockTimeMs: 0 }
chains:
  l1:
    plugin: evm
    route: { path: /l1 }
    nodes: [{ name: n, url: "http://127.0.0.1:${port}/v2/tok?key=q", role: full, headers: { Authorization: "Bearer h" } }]
`,
      '/x.yaml',
      {},
    );
    const { specs } = await devnetSpecs(config);
    expect(specs[0]?.credentials).to.deep.equal({ headers: { authorization: 'Bearer h' }, basePath: '/v2/tok', query: { key: 'q' } });
    const devnet = await startConfigDevnet(config);
    try {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' });
      const post = (url: string, headers: Record<string, string> = {}) =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      expect((await post(`http://127.0.0.1:${port}/`)).status).to.equal(401);
      expect((await post(`http://127.0.0.1:${port}/v2/tok?key=q`)).status).to.equal(401);
      expect((await post(`http://127.0.0.1:${port}/v2/tok?key=wrong`, { authorization: 'Bearer h' })).status).to.equal(401);
      expect((await post(`http://127.0.0.1:${port}/v2/other?key=q`, { authorization: 'Bearer h' })).status).to.equal(401);
      const ok = await post(`http://127.0.0.1:${port}/v2/tok?key=q`, { authorization: 'Bearer h' });
      expect(ok.status).to.equal(200);
      expect(((await ok.json()) as { result: string }).result).to.equal('0x1');
    } finally {
      await devnet.close();
    }
  });

  it('a devnet in a container of its own: node URLs on a host of devnet.hosts are simulated, listening on devnet.listen', async () => {
    const port = await freePort();
    const yaml = (devnet: string): string => `tiers: { free: { rate: 5 } }
devnet: { blockTimeMs: 0, controlPort: 0${devnet} }
chains:
  l1:
    plugin: evm
    route: { path: /l1 }
    nodes: [{ name: n, url: "http://devnet:${port}", role: full }]
`;
    expect((await devnetSpecs(await parseConfig(yaml(''), '/x.yaml', {}))).skipped).to.deep.equal(['l1/n']);
    const config = await parseConfig(yaml(', hosts: [devnet], listen: 0.0.0.0'), '/x.yaml', {});
    const devnet = await startConfigDevnet(config);
    try {
      // Another interface than loopback reaches it, as another container would.
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
      for (const host of ['127.0.0.1', ...(outside === undefined ? [] : [outside])]) {
        const res = await fetch(`http://${host}:${port}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
        });
        expect(((await res.json()) as { result: string }).result).to.equal('0x1');
      }
      expect(devnet.controlUrl).to.match(/^http:\/\/0\.0\.0\.0:\d+$/);
      const control = new URL(devnet.controlUrl ?? '');
      const list = (await (await fetch(`http://127.0.0.1:${control.port}/nodes`)).json()) as { nodes: { name: string }[] };
      expect(list.nodes.map((n) => n.name)).to.deep.equal(['n']);
    } finally {
      await devnet.close();
    }
  });
});
