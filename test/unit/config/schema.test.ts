import { expect } from 'chai';
import { parseConfig } from '../../../src/config/load.js';
import type { GatewayConfig } from '../../../src/config/types.js';
import { configProblems } from '../../support/config-problems.js';

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

describe('config validation', () => {
  it('accepts a minimal file and fills defaults', async () => {
    const c = await parseConfig(BASE, '/etc/nr.yaml', {});
    expect(c.server.port).to.equal(8080);
    expect(c.server.adminPort).to.equal(8081);
    expect(c.chains.hub?.strategy).to.equal('round-robin');
    expect(c.tiers.free?.burst).to.equal(10);
    expect(c.store).to.deep.equal({ record: { kind: 'sqlite', path: '/etc/data/noderouter.db' }, hot: { kind: 'memory' } });
    expect(Object.isFrozen(c.chains.hub)).to.equal(true);
  });

  it('gives accounts the tier’s own limits unless told otherwise, and key rules their defaults', async () => {
    const c = await parseConfig(
      BASE.replace(
        'free: { rate: 5 }',
        'free: { rate: 5, daily: 100 }\n  team: { rate: 5, daily: 100, account: { daily: 300, rate: unlimited } }',
      ),
      '/etc/nr.yaml',
      {},
    );
    // WebSocket caps: one key's connections, and what they may all hold in subscriptions.
    const ws = { wsConnections: 10, wsSubscriptions: 1000 };
    expect(c.tiers.free?.account).to.deep.equal({ rate: 5, burst: 10, daily: 100, monthly: Infinity, ...ws });
    expect(c.tiers.team?.account).to.deep.equal({ rate: Infinity, burst: 10, daily: 300, monthly: Infinity, ...ws });
    expect(c.keys).to.deep.include({ negativeMaxEntries: 10_000, maxActivePerAccount: 100, changesPerHour: 60, changesBurst: 10 });
    const p = await configProblems(
      BASE.replace('free: { rate: 5 }', 'free: { rate: 5, account: { daily: -1, weekly: 3 } }') + 'keys: { changesPerHour: 0 }\n',
    );
    expect(p).to.include.members([
      'tiers.free.account.daily must be a number of 0 or more, or "unlimited"',
      'tiers.free.account.weekly is not a known setting (known: rate, burst, daily, monthly, wsConnections, wsSubscriptions)',
      'keys.changesPerHour must be an integer from 1 to 1000000',
    ]);
  });

  it('names the path and the fix for a bad enum', async () => {
    const p = await configProblems(BASE.replace('role: archive', 'role: archival'));
    expect(p).to.deep.equal(['chains.hub.nodes[1].role must be "full" or "archive"']);
  });

  it('refuses unknown keys at every level, with the known ones listed', async () => {
    const p = await configProblems(BASE.replace('route: { path: /hub/rpc }', 'route: { path: /hub/rpc, prefix: /x }') + 'extra: 1\n');
    expect(p).to.include(
      'extra is not a known setting (known: server, log, tracing, admin, dashboard, store, keys, cache, usage, tiers, devnet, chains)',
    );
    expect(p.some((x) => x.startsWith('chains.hub.route.prefix is not a known setting'))).to.equal(true);
  });

  it('refuses unknown plugins, bad URLs, duplicate node names and missing nodes', async () => {
    const p = await configProblems(`
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
    expect(p).to.include('chains.a.nodes[0].url must be an http:// or https:// URL (a path and a query are kept; no #fragment)');
    expect(p).to.include('chains.b.nodes[1].name "n1" is already used by nodes[0]: node names must be unique in a chain');
    expect(p).to.include('chains.c.nodes is required (a list)');
  });

  it('refuses node URLs with credentials in the user or password part, never repeating them', async () => {
    const p = await configProblems(
      BASE.replace('url: "http://127.0.0.1:1"', 'url: "https://:s3cret-pass@rpc.example.com/v1"').replace(
        'url: "http://127.0.0.1:2", role: archive',
        'url: "http://127.0.0.1:2", ws: "wss://user:pw-ws@rpc.example.com", role: archive',
      ),
    );
    expect(p).to.have.length(2);
    expect(p[0]).to.match(
      /^chains\.hub\.nodes\[0\]\.url must not carry credentials \("user:password@host"\): give them in the node's headers instead/,
    );
    expect(p[1]).to.match(/^chains\.hub\.nodes\[1\]\.ws must not carry credentials/);
    expect(p.join('\n')).not.to.match(/s3cret|pw-ws/);
    const user = await configProblems(BASE.replace('url: "http://127.0.0.1:1"', 'url: "http://alice@127.0.0.1:1"'));
    expect(user[0]).to.match(/^chains\.hub\.nodes\[0\]\.url must not carry credentials/);
  });

  it('takes node headers (lower-cased, from ${ENV}) and URLs with a path and query, never repeating a value in a problem', async () => {
    const c = await parseConfig(
      BASE.replace(
        'url: "http://127.0.0.1:1", role: full',
        'url: "https://rpc.example.com/v2/${PATH_TOKEN}/?key=${Q}", role: full, headers: { Authorization: "Bearer ${TOKEN}", x-api-version: 2 }',
      ),
      '/etc/nr.yaml',
      { PATH_TOKEN: 'p-tok', Q: 'q-tok', TOKEN: 'h-tok' },
    );
    const a = c.chains.hub?.nodes[0];
    expect(a?.url).to.equal('https://rpc.example.com/v2/p-tok?key=q-tok');
    expect(a?.ws).to.equal('wss://rpc.example.com/v2/p-tok?key=q-tok');
    expect(a?.headers).to.deep.equal({ authorization: 'Bearer h-tok', 'x-api-version': '2' });
    expect(c.chains.hub?.nodes[1]?.headers).to.deep.equal({});
    const p = await configProblems(
      BASE.replace(
        'url: "http://127.0.0.1:1", role: full',
        'url: "http://127.0.0.1:1", role: full, headers: { Host: evil.example, "bad name": x, X-Token: "a\\r\\nInjected: sec-1", x-token: dup, Empty: "", Sec-WebSocket-Key: k }',
      ),
    );
    expect(p).to.have.members([
      'chains.hub.nodes[0].headers.Host cannot be set: the gateway writes host itself',
      "chains.hub.nodes[0].headers.bad name is not a valid header name (letters, digits and !#$%&'*+.^_`|~- only)",
      'chains.hub.nodes[0].headers.X-Token must be a non-empty string of printable ASCII, e.g. "Bearer ${NODE_TOKEN}" (no line breaks or control characters; the value is not repeated here)',
      'chains.hub.nodes[0].headers.x-token is given twice (header names are the same in any case)',
      'chains.hub.nodes[0].headers.Empty must be a non-empty string of printable ASCII, e.g. "Bearer ${NODE_TOKEN}" (no line breaks or control characters; the value is not repeated here)',
      'chains.hub.nodes[0].headers.Sec-WebSocket-Key cannot be set: the gateway writes sec-websocket-key itself',
    ]);
    expect(p.join('\n')).not.to.contain('sec-1');
  });

  it('refuses a path or query on gRPC node URLs, and grpc-* headers there', async () => {
    const grpcBase = `
tiers: { free: {} }
chains:
  g:
    plugin: sdk-grpc
    nodes:
      - { name: a, url: "http://127.0.0.1:1?key=x", role: full, headers: { grpc-timeout: 1S, x-api-key: ok } }
`;
    const p = await configProblems(grpcBase);
    expect(p).to.have.length(2);
    expect(p[0]).to.match(/^chains\.g\.nodes\[0\]\.url of a gRPC node must be http:\/\/host:port \(cleartext HTTP\/2, no path or query/);
    expect(p[1]).to.equal('chains.g.nodes[0].headers.grpc-timeout cannot be set: the gateway writes grpc-timeout itself');
  });

  it('reads the shutdown delay, trusted proxies and the log file settings', async () => {
    const c = await parseConfig(BASE, '/etc/nr.yaml', {});
    expect(c.server.shutdownDelayMs).to.equal(5_000);
    expect(c.server.trustedProxies).to.deep.equal([]);
    expect(c.log).to.deep.equal({ level: 'info', file: undefined, maxBytes: 100 * 1_048_576, files: 5 });
    const set = await parseConfig(
      `${BASE}server: { shutdownDelayMs: 250, trustedProxies: [10.0.0.0/8, "::1", "fd00::/8"] }\nlog: { file: logs/gw.log, maxBytes: 4096, files: 2 }\n`,
      '/etc/nr.yaml',
      {},
    );
    expect(set.server.shutdownDelayMs).to.equal(250);
    expect(set.server.trustedProxies).to.deep.equal(['10.0.0.0/8', '::1', 'fd00::/8']);
    expect(set.log).to.deep.equal({ level: 'info', file: '/etc/logs/gw.log', maxBytes: 4096, files: 2 });
    const p = await configProblems(`${BASE}server: { trustedProxies: [10.0.0.0/33, proxy.example, 1.2.3.4/8/2] }\nlog: { maxBytes: 10 }\n`);
    expect(p).to.have.members([
      'server.trustedProxies[0] must be an IP address or a CIDR range like "10.0.0.0/8" or "fd00::/8"',
      'server.trustedProxies[1] must be an IP address or a CIDR range like "10.0.0.0/8" or "fd00::/8"',
      'server.trustedProxies[2] must be an IP address or a CIDR range like "10.0.0.0/8" or "fd00::/8"',
      'log.maxBytes must be an integer from 1024 to 9007199254740991',
    ]);
  });

  it('reads ${ENV} strings as the numbers and booleans a setting takes, and an empty key as left out', async () => {
    const c = await parseConfig(
      `${BASE}server: { maxConnections: "\${MAX}", adminHost: }\ndashboard: { enabled: "\${DASH}" }\n`,
      '/etc/nr.yaml',
      { MAX: '500', DASH: 'true' },
    );
    expect(c.server.maxConnections).to.equal(500);
    expect(c.server.adminHost).to.equal('127.0.0.1');
    expect(c.dashboard.enabled).to.equal(true);
    const p = await configProblems(`${BASE}server: { maxConnections: "\${MAX}" }\n`, { MAX: 'many' });
    expect(p).to.deep.equal(['server.maxConnections must be an integer from 1 to 9007199254740991']);
  });

  it('names the path of typical mistakes: a list where a mapping goes, a missing url, a word for a number, a misspelt key', async () => {
    const p = await configProblems(
      BASE.replace('route: { path: /hub/rpc }', 'route: [/hub/rpc]\n    maxAttempts: three\n    helth: { intervalMs: 100 }').replace(
        '{ name: b, url: "http://127.0.0.1:2", role: archive }',
        '{ name: b, role: archive, weight: 0 }',
      ),
    );
    expect(p).to.have.members([
      'chains.hub.helth is not a known setting (known: plugin, network, chainId, route, archiveOnly, strategy, attemptTimeoutMs, maxAttempts, health, breaker, hedge, ejection, submit, verify, consensus, cache, cors, options, nodes)',
      'chains.hub.route must be a mapping with a path, a host, or both, like { path: /l1 }',
      'chains.hub.maxAttempts must be an integer from 1 to 10',
      'chains.hub.nodes[1].url is required (a string)',
      'chains.hub.nodes[1].weight must be an integer from 1 to 1000',
    ]);
  });

  it('checks plugin options against the plugin’s schema, naming each by its path', async () => {
    const p = await configProblems(
      BASE.replace('plugin: sdk-rpc', 'plugin: evm\n    options: { namespaces: [eth, "e t"], costs: { getLogs: 0 }, getLogsSplit: maybe }'),
    );
    expect(p).to.have.members([
      'chains.hub.options.namespaces[1] must be a name of letters and digits, like those of [eth, evm]',
      'chains.hub.options.costs.getLogs must be a positive integer',
      'chains.hub.options.getLogsSplit must be true or false',
    ]);
  });

  it('passes plugin options to the plugin to judge', async () => {
    const p = await configProblems(BASE.replace('plugin: sdk-rpc', 'plugin: evm\n    options: { fullHistory: -3, colour: red }'));
    expect(p.some((x) => x.startsWith('chains.hub.options.fullHistory'))).to.equal(true);
    expect(p.some((x) => x.startsWith('chains.hub.options.colour'))).to.equal(true);
  });

  it('interpolates ${ENV} and ${ENV:-default}, and names unset variables', async () => {
    const text = BASE + 'server: { port: "${P}", host: "${H:-0.0.0.0}" }\n';
    const c = await parseConfig(text, '/etc/nr.yaml', { P: '9999' });
    expect(c.server.port).to.equal(9999);
    expect(c.server.host).to.equal('0.0.0.0');
    expect(await configProblems(text, {})).to.deep.equal(['server.port uses ${P}, which is not set: export P or write ${P:-default}']);
  });

  it('lets PORT and ADMIN_PORT override the file', async () => {
    const c = await parseConfig(BASE, '/etc/nr.yaml', { PORT: '7000', ADMIN_PORT: '7001' });
    expect([c.server.port, c.server.adminPort]).to.deep.equal([7000, 7001]);
    expect(await configProblems(BASE, { PORT: 'eighty' })).to.deep.equal(['PORT=eighty must be a port number from 0 to 65535']);
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
      const p = await configProblems(`${BASE}${grpcChain('hub-grpc', '    route: { path: /hub/grpc }\n')}`);
      expect(p).to.have.length(1);
      expect(p[0]).to.match(/^chains\.hub-grpc\.route\.path \("\/hub\/grpc"\) cannot route gRPC calls.*set route\.host/);
    });

    it('allows one default gRPC chain (without route.host)', async () => {
      const two = await configProblems(`${BASE}${grpcChain('a-grpc', '')}${grpcChain('b-grpc', '')}`);
      expect(two).to.deep.equal([
        'chains.b-grpc.route needs a host: chains.a-grpc is already the default gRPC chain (the one without route.host)',
      ]);
      const hosted = await configProblems(
        `${BASE}${grpcChain('a-grpc', '')}${grpcChain('b-grpc', '    route: { host: b.grpc.example }\n')}`,
      );
      expect(hosted).to.deep.equal([]);
    });

    it('refuses https:// and paths in gRPC node URLs (cleartext HTTP/2 only)', async () => {
      for (const url of ['https://node.example:9090', 'http://127.0.0.1:9090/grpc']) {
        const p = await configProblems(`${BASE}${grpcChain('hub-grpc', '', url)}`);
        expect(p, url).to.have.length(1);
        expect(p[0]).to.match(/^chains\.hub-grpc\.nodes\[0\]\.url of a gRPC node must be http:\/\/host:port/);
      }
    });
  });

  it('reads the devnet block: defaults, the filter lifetime and the getLogs range, and path-naming problems', async () => {
    const defaults = await parseConfig(BASE, '/x.yaml', {});
    expect(defaults.devnet).to.deep.include({ filterTimeoutMs: 300_000, maxLogsRange: 0 });
    const c = await parseConfig(BASE + 'devnet: { filterTimeoutMs: 1000, maxLogsRange: 2000 }\n', '/x.yaml', {});
    expect(c.devnet).to.deep.include({ filterTimeoutMs: 1000, maxLogsRange: 2000 });
    const p = await configProblems(BASE + 'devnet: { filterTimeoutMs: 0, maxLogsRange: -1 }\n');
    expect(p.some((m) => m.startsWith('devnet.filterTimeoutMs'))).to.equal(true);
    expect(p.some((m) => m.startsWith('devnet.maxLogsRange'))).to.equal(true);
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
    const p = await configProblems(
      BASE + 'dashboard: { enabled: yes, publicUrl: "https://x.example/dash", sessionTtl: 31d, signinTokenTtl: soon, colour: red }\n',
    );
    expect(p).to.include('dashboard.enabled must be true or false');
    expect(p).to.include('dashboard.publicUrl must be an origin like "https://dash.example.com" (no path, query or credentials)');
    expect(p).to.include('dashboard.sessionTtl must be a duration like "90s", "15m", "12h" or "7d", from 1 minute to 30 days');
    expect(p).to.include('dashboard.signinTokenTtl must be a duration like "90s", "15m", "12h" or "7d", from 1 minute to 7 days');
    expect(p.some((x) => x.startsWith('dashboard.colour is not a known setting'))).to.equal(true);
  });

  it('reads the usage block: a write every 5s, 400 days of rollups, 100 failed calls per key for 30 days by default', async () => {
    const off = await parseConfig(BASE, '/x.yaml', {});
    expect(off.usage).to.deep.equal({
      flushIntervalMs: 5_000,
      retentionMs: 400 * 86_400_000,
      failedCalls: { perKey: 100, maxAgeMs: 30 * 86_400_000 },
    });
    const c = await parseConfig(
      BASE + 'usage: { flushInterval: 30, retention: 90d, failedCalls: { perKey: 0, maxAge: 12h } }\n',
      '/x.yaml',
      {},
    );
    expect(c.usage).to.deep.equal({
      flushIntervalMs: 30_000,
      retentionMs: 90 * 86_400_000,
      failedCalls: { perKey: 0, maxAgeMs: 43_200_000 },
    });
    const p = await configProblems(
      BASE + 'usage: { flushInterval: 10m, retention: 12h, failedCalls: { perKey: -1, maxAge: 401d, size: 3 } }\n',
    );
    expect(p).to.include.members([
      'usage.flushInterval must be a duration like "90s", "15m", "12h" or "7d", from 1 second to 5 minutes',
      'usage.retention must be a duration like "90s", "15m", "12h" or "7d", from 1 day to 3650 days',
      'usage.failedCalls.perKey must be an integer from 0 to 10000',
    ]);
    expect(p.some((x) => x.startsWith('usage.failedCalls.size is not a known setting'))).to.equal(true);
    const age = await configProblems(BASE + 'usage: { failedCalls: { maxAge: 401d } }\n');
    expect(age).to.deep.equal(['usage.failedCalls.maxAge must be a duration like "90s", "15m", "12h" or "7d", from 1 hour to 400 days']);
  });

  it('reads the tracing block: off without an endpoint, the standard path after a bare origin, headers, ratio and problems', async () => {
    const off = await parseConfig(BASE + 'tracing: { endpoint: "${OTEL_ENDPOINT:-}" }\n', '/x.yaml', {});
    expect(off.tracing).to.deep.equal({
      endpoint: undefined,
      headers: {},
      serviceName: 'noderouter',
      sampleRatio: 1,
      exportIntervalMs: 5_000,
    });
    const c = await parseConfig(
      BASE +
        'tracing: { endpoint: "http://otel:4318", headers: { Authorization: "Bearer ${T}" }, sampleRatio: "0.25", serviceName: gw-eu }\n',
      '/x.yaml',
      { T: 'tok' },
    );
    expect(c.tracing).to.deep.include({
      endpoint: 'http://otel:4318/v1/traces',
      headers: { authorization: 'Bearer tok' },
      sampleRatio: 0.25,
      serviceName: 'gw-eu',
    });
    const given = await parseConfig(BASE + 'tracing: { endpoint: "https://otel.example/otlp/v1/traces" }\n', '/x.yaml', {});
    expect(given.tracing.endpoint).to.equal('https://otel.example/otlp/v1/traces');
    const p = await configProblems(
      BASE +
        'tracing: { endpoint: "https://u:p@otel.example", sampleRatio: 2, exportIntervalMs: 0, headers: { "bad name": x, ok: "a\\nb" }, colour: red }\n',
    );
    expect(p).to.include.members([
      'tracing.endpoint must be the collector\'s OTLP/HTTP URL, like "http://127.0.0.1:4318/v1/traces" (credentials go in tracing.headers)',
      'tracing.sampleRatio must be a number from 0 to 1 (1: every trace begun here is recorded)',
      'tracing.exportIntervalMs must be an integer from 10 to 600000',
      'tracing.headers.bad name is not a valid HTTP header name',
      'tracing.headers.ok must be a string of printable characters on one line',
    ]);
    expect(p.some((x) => x.startsWith('tracing.colour is not a known setting'))).to.equal(true);
    expect(p.join('\n')).not.to.include('u:p');
  });

  it('reads chainId (EVM ids as decimals), leaves role to detection when unset, and the describe cadence', async () => {
    const c = await parseConfig(
      BASE.replace('plugin: sdk-rpc', 'plugin: sdk-rpc\n    chainId: cosmoshub-4\n    health: { describeIntervalMs: 60000 }').replace(
        ', role: full }',
        ' }',
      ),
      '/x.yaml',
      {},
    );
    expect(c.chains.hub?.chainId).to.equal('cosmoshub-4');
    expect(c.chains.hub?.health.describeIntervalMs).to.equal(60_000);
    expect(c.chains.hub?.nodes.map((n) => n.role)).to.deep.equal([undefined, 'archive']);
    const hex = await parseConfig(BASE.replace('plugin: sdk-rpc', 'plugin: sdk-rpc\n    chainId: "0xa4b1"'), '/x.yaml', {});
    expect(hex.chains.hub?.chainId).to.equal('42161');
    const num = await parseConfig(BASE.replace('plugin: sdk-rpc', 'plugin: sdk-rpc\n    chainId: 1'), '/x.yaml', {});
    expect(num.chains.hub?.chainId).to.equal('1');
    expect((await parseConfig(BASE, '/x.yaml', {})).chains.hub?.health.describeIntervalMs).to.equal(300_000);
    const p = await configProblems(
      BASE.replace('plugin: sdk-rpc', 'plugin: sdk-rpc\n    chainId: "two words"\n    archiveOnly: true').replace(
        'role: archive',
        'role: full',
      ),
    );
    expect(p).to.include.members([
      'chains.hub.chainId must be the id the nodes report: a number for EVM chains (1 or "0x1"), the network id for SDK chains ("cosmoshub-4"), the chain identifier for objectx ("35834a8a")',
      'chains.hub.nodes must include a node with role "archive" (or without a role, to be detected) when archiveOnly is true',
    ]);
  });

  it('reads verify: off by default, a mode for a plugin that checks answers, a problem for one that does not', async () => {
    expect((await parseConfig(BASE, '/x.yaml', {})).chains.hub?.verify).to.equal('off');
    const evm = await parseConfig(BASE.replace('plugin: sdk-rpc', 'plugin: evm\n    verify: enforce'), '/x.yaml', {});
    expect(evm.chains.hub?.verify).to.equal('enforce');
    expect(await configProblems(BASE.replace('plugin: sdk-rpc', 'plugin: sdk-rpc\n    verify: observe'))).to.deep.equal([
      'chains.hub.verify is "observe", but plugin "sdk-rpc" checks no answers: set it to "off" (EVM chains can verify blocks)',
    ]);
    const bad = await configProblems(BASE.replace('plugin: sdk-rpc', 'plugin: evm\n    verify: yes'));
    expect(bad.some((x) => x.startsWith('chains.hub.verify'))).to.equal(true);
  });

  it('leases the Redis hot state’s limits by default, and reads the exact mode and bad values', async () => {
    const redis = (extra: string) => `${BASE}store: { hot: { kind: redis, url: "redis://127.0.0.1:6379"${extra} } }\n`;
    const leases = (c: GatewayConfig) => (c.store.hot.kind === 'redis' ? [c.store.hot.leaseMs, c.store.hot.leaseTokens] : []);
    expect(leases(await parseConfig(redis(''), '/etc/nr.yaml', {}))).to.deep.equal([200, 'auto']);
    expect(leases(await parseConfig(redis(', leaseTokens: 0, leaseMs: 500'), '/etc/nr.yaml', {}))).to.deep.equal([500, 0]);
    expect(await configProblems(redis(', leaseTokens: some, leaseMs: -1'))).to.deep.equal([
      'store.hot.leaseMs must be an integer from 0 to 10000',
      'store.hot.leaseTokens must be "auto" or an integer from 0 (0: no leases, every call asks Redis)',
    ]);
  });

  it('reads server.workers: 1 by default, a number, or auto as one per core', async () => {
    const { availableParallelism } = await import('node:os');
    expect((await parseConfig(BASE, '/x.yaml', {})).server.workers).to.equal(1);
    expect((await parseConfig(`server: { workers: 3 }\n${BASE}`, '/x.yaml', {})).server.workers).to.equal(3);
    expect((await parseConfig(`server: { workers: auto }\n${BASE}`, '/x.yaml', {})).server.workers).to.equal(availableParallelism());
    expect(await configProblems(`server: { workers: 0 }\n${BASE}`)).to.deep.equal([
      'server.workers must be a whole number of processes from 1 to 1024, or "auto" (one per core)',
    ]);
  });
});
