import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../../src/config/load.js';

const BASE = `
tiers:
  free: { rate: 5 }
chains:
  hub:
    plugin: sdk-rpc
    route: { path: /hub/rpc }
    nodes:
      - { name: a, url: "http://127.0.0.1:1", role: full }
      - { name: b, url: "http://127.0.0.1:2", role: archive }
`;

async function problems(text: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  try {
    await parseConfig(text, '/etc/nr.yaml', env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('config validation', () => {
  it('accepts a minimal file and fills defaults', async () => {
    const c = await parseConfig(BASE, '/etc/nr.yaml', {});
    expect(c.server.port).to.equal(8080);
    expect(c.server.adminPort).to.equal(8081);
    expect(c.chains.hub?.strategy).to.equal('round-robin');
    expect(c.tiers.free?.burst).to.equal(10);
    expect(c.store.path).to.equal('/etc/data/keys.json');
    expect(Object.isFrozen(c.chains.hub)).to.equal(true);
  });

  it('names the path and the fix for a bad enum', async () => {
    const p = await problems(BASE.replace('role: archive', 'role: archival'));
    expect(p).to.deep.equal(['chains.hub.nodes[1].role must be "full" or "archive"']);
  });

  it('refuses unknown keys at every level, with the known ones listed', async () => {
    const p = await problems(BASE.replace('route: { path: /hub/rpc }', 'route: { path: /hub/rpc, prefix: /x }') + 'extra: 1\n');
    expect(p).to.include('extra is not a known setting (known: server, log, admin, dashboard, store, keys, cache, tiers, devnet, chains)');
    expect(p.some((x) => x.startsWith('chains.hub.route.prefix is not a known setting'))).to.equal(true);
  });

  it('refuses unknown plugins, bad URLs, duplicate node names and missing nodes', async () => {
    const p = await problems(`
tiers: { free: {} }
chains:
  a:
    plugin: nosuch-plugin-xyz
    route: { path: /a }
    nodes:
      - { name: n1, url: "ftp://x", role: full }
  b:
    plugin: evm
    route: { path: /b }
    nodes:
      - { name: n1, url: "http://127.0.0.1:1", role: full }
      - { name: n1, url: "http://127.0.0.1:2", role: full }
  c:
    plugin: evm
    route: { path: /c }
`);
    expect(p.some((x) => x.startsWith('chains.a.plugin names no plugin'))).to.equal(true);
    expect(p).to.include('chains.a.nodes[0].url must be an http:// or https:// URL without credentials or query');
    expect(p).to.include('chains.b.nodes[1].name "n1" is already used by nodes[0]: node names must be unique in a chain');
    expect(p).to.include('chains.c.nodes is required (a list)');
  });

  it('passes plugin options to the plugin to judge', async () => {
    const p = await problems(BASE.replace('plugin: sdk-rpc', 'plugin: evm\n    options: { fullHistory: -3, colour: red }'));
    expect(p.some((x) => x.startsWith('chains.hub.options.fullHistory'))).to.equal(true);
    expect(p.some((x) => x.startsWith('chains.hub.options.colour'))).to.equal(true);
  });

  it('interpolates ${ENV} and ${ENV:-default}, and names unset variables', async () => {
    const text = BASE + 'server: { port: "${P}", host: "${H:-0.0.0.0}" }\n';
    const c = await parseConfig(text, '/etc/nr.yaml', { P: '9999' });
    expect(c.server.port).to.equal(9999);
    expect(c.server.host).to.equal('0.0.0.0');
    expect(await problems(text, {})).to.deep.equal(['server.port uses ${P}, which is not set: export P or write ${P:-default}']);
  });

  it('lets PORT and ADMIN_PORT override the file', async () => {
    const c = await parseConfig(BASE, '/etc/nr.yaml', { PORT: '7000', ADMIN_PORT: '7001' });
    expect([c.server.port, c.server.adminPort]).to.deep.equal([7000, 7001]);
    expect(await problems(BASE, { PORT: 'eighty' })).to.deep.equal(['PORT=eighty must be a port number from 0 to 65535']);
  });

  it('reads unlimited tier limits', async () => {
    const c = await parseConfig(
      BASE.replace('free: { rate: 5 }', 'free: { rate: unlimited, daily: unlimited, maxBatch: 5 }'),
      '/x.yaml',
      {},
    );
    expect(c.tiers.free?.rate).to.equal(Infinity);
    expect(c.tiers.free?.burst).to.equal(Infinity);
    expect(c.tiers.free?.maxBatch).to.equal(5);
  });

  describe('gRPC chain endpoints', () => {
    const grpcChain = (name: string, route: string, url = 'http://127.0.0.1:9') =>
      `  ${name}:\n    plugin: sdk-grpc\n${route}    nodes:\n      - { name: g, url: "${url}", role: full }\n`;

    it("defaults the listener to 127.0.0.1:9090; a gRPC chain needs no route, and may share an HTTP chain's route key", async () => {
      const c = await parseConfig(`${BASE}${grpcChain('hub-grpc', '')}`, '/etc/nr.yaml', {});
      expect([c.server.grpcHost, c.server.grpcPort]).to.deep.equal(['127.0.0.1', 9090]);
      expect(c.chains['hub-grpc']?.transport).to.equal('grpc');
      expect(c.chains.hub?.transport).to.equal('http');
      expect(c.chains['hub-grpc']?.route).to.deep.equal({ path: undefined, host: undefined });
    });

    it('refuses route.path on a gRPC chain, naming the path and the fix', async () => {
      const p = await problems(`${BASE}${grpcChain('hub-grpc', '    route: { path: /hub/grpc }\n')}`);
      expect(p).to.have.length(1);
      expect(p[0]).to.match(/^chains\.hub-grpc\.route\.path \("\/hub\/grpc"\) cannot route gRPC calls.*set route\.host/);
    });

    it('allows one default gRPC chain (without route.host)', async () => {
      const two = await problems(`${BASE}${grpcChain('a-grpc', '')}${grpcChain('b-grpc', '')}`);
      expect(two).to.deep.equal([
        'chains.b-grpc.route needs a host: chains.a-grpc is already the default gRPC chain (the one without route.host)',
      ]);
      const hosted = await problems(`${BASE}${grpcChain('a-grpc', '')}${grpcChain('b-grpc', '    route: { host: b.grpc.example }\n')}`);
      expect(hosted).to.deep.equal([]);
    });

    it('refuses https:// and paths in gRPC node URLs (cleartext HTTP/2 only)', async () => {
      for (const url of ['https://node.example:9090', 'http://127.0.0.1:9090/grpc']) {
        const p = await problems(`${BASE}${grpcChain('hub-grpc', '', url)}`);
        expect(p, url).to.have.length(1);
        expect(p[0]).to.match(/^chains\.hub-grpc\.nodes\[0\]\.url of a gRPC node must be http:\/\/host:port/);
      }
    });
  });

  it('reads the dashboard block: off by default, durations, its own port, and path-naming problems', async () => {
    const off = await parseConfig(BASE, '/x.yaml', {});
    expect(off.dashboard).to.deep.include({ enabled: false, port: undefined, sessionTtlMs: 43_200_000, signinTokenTtlMs: 900_000 });
    const c = await parseConfig(
      BASE +
        'dashboard: { enabled: true, port: 8082, host: 0.0.0.0, publicUrl: "https://dash.example.com/", sessionTtl: 2h, signinTokenTtl: 90 }\n',
      '/x.yaml',
      {},
    );
    expect(c.dashboard).to.deep.include({
      enabled: true,
      port: 8082,
      host: '0.0.0.0',
      publicUrl: 'https://dash.example.com',
      sessionTtlMs: 7_200_000,
      signinTokenTtlMs: 90_000,
    });
    const p = await problems(
      BASE + 'dashboard: { enabled: yes, publicUrl: "https://x.example/dash", sessionTtl: 31d, signinTokenTtl: soon, colour: red }\n',
    );
    expect(p).to.include('dashboard.enabled must be true or false');
    expect(p).to.include('dashboard.publicUrl must be an origin like "https://dash.example.com" (no path, query or credentials)');
    expect(p).to.include('dashboard.sessionTtl must be a duration like "90s", "15m", "12h" or "7d", from 1 minute to 30 days');
    expect(p).to.include('dashboard.signinTokenTtl must be a duration like "90s", "15m", "12h" or "7d", from 1 minute to 7 days');
    expect(p.some((x) => x.startsWith('dashboard.colour is not a known setting'))).to.equal(true);
  });
});
