// A reload applies admin.token at once: /admin/*, the operator dashboard and the CLI's
// admin calls take the new token on their next request and refuse the old one; an
// audit line records the change without the token. A change to a setting read only at
// start is named on the reload's log line as needing a restart; the listeners read the
// other server limits when they use them, so those apply to the next connection.

import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { createLogger } from '../../src/ops/log.js';
import { runCli } from '../support/cli.js';
import { DashboardClient } from '../support/dashboard-client.js';
import { get, startStack, type Stack } from '../support/harness.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

/** A new connection to a listener with one request on it: whether any answer came before it closed. */
function answered(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text.startsWith('HTTP/1.1 ')));
    socket.write('GET /nothing HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n');
  });
}

const OLD_TOKEN = 'old-admin-token-0123456789abcdef';
const NEW_TOKEN = 'new-admin-token-fedcba9876543210';

describe('admin token and restart-only settings on reload', function () {
  this.timeout(60_000);
  let stack: Stack;
  const lines: string[] = [];
  const logged = (): Array<Record<string, unknown>> => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const reloadLines = (): Array<Record<string, unknown>> => logged().filter((l) => l.event === 'reload');
  const adminGet = (path: string, token: string) => get(stack.admin(path), { authorization: `Bearer ${token}` });

  before(async () => {
    stack = await startStack({
      adminToken: OLD_TOKEN,
      dashboardYaml: '{ enabled: true }',
      // The config's level is applied on reload: info keeps the reload lines.
      logYaml: '{ level: info }',
      logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
    });
  });
  after(() => stack.close());

  it('takes a changed admin.token for /admin/*, the operator dashboard and the CLI on the next request', async () => {
    const origin = new URL(stack.gateway.dashboardUrl).origin;
    expect((await adminGet('/admin/keys', OLD_TOKEN)).status).to.equal(200);
    expect((await adminGet('/admin/nodes', OLD_TOKEN)).status).to.equal(200);
    expect((await adminGet('/admin/keys', NEW_TOKEN)).status).to.equal(401);
    const before = new DashboardClient(origin, '/dashboard/operator/api');
    expect((await before.signIn(OLD_TOKEN)).status).to.equal(200);
    expect((await before.get('/accounts')).status).to.equal(200);

    const text = await readFile(stack.configFile, 'utf8');
    expect(text).to.contain(OLD_TOKEN);
    await writeFile(stack.configFile, text.replace(OLD_TOKEN, NEW_TOKEN));
    expect(await stack.gateway.reload()).to.equal(true);

    // The very next request: no cache of the old token anywhere.
    for (const path of ['/admin/keys', '/admin/nodes']) {
      expect((await adminGet(path, OLD_TOKEN)).status, `${path} old`).to.equal(401);
      expect((await adminGet(path, NEW_TOKEN)).status, `${path} new`).to.equal(200);
    }
    const created = await fetch(stack.admin('/admin/keys'), {
      method: 'POST',
      headers: { authorization: `Bearer ${OLD_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'rotated', tier: 'free' }),
    });
    expect(created.status).to.equal(401);

    // The operator dashboard: the old token no longer signs in, a session it opened is over, the new one works.
    expect((await new DashboardClient(origin, '/dashboard/operator/api').signIn(OLD_TOKEN)).status).to.equal(401);
    expect((await before.get('/accounts')).status).to.equal(401);
    const after = new DashboardClient(origin, '/dashboard/operator/api');
    expect((await after.signIn(NEW_TOKEN)).status).to.equal(200);
    expect((await after.get('/accounts')).status).to.equal(200);

    // The CLI reads the token from the same file: its admin call works with the new one.
    const listed = await runCli(['nodes', 'list', '--json', '--config', stack.configFile, '--admin', stack.gateway.adminUrl], {
      NODEROUTER_ADMIN_TOKEN: '',
    });
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.contain('l1-full-1');
    // Given the old token, it is refused.
    const stale = await runCli(['nodes', 'list', '--config', stack.configFile, '--admin', stack.gateway.adminUrl], {
      NODEROUTER_ADMIN_TOKEN: OLD_TOKEN,
    });
    expect(stale.code).to.equal(2);
    expect(stale.stderr).to.contain('the admin API refused');
  });

  it('records the change in an audit line that holds neither token nor anything derived from it', async () => {
    await stack.gateway.logger.flush();
    const audit = logged().filter((l) => l.event === 'audit');
    expect(audit).to.have.length(1);
    expect(audit[0]).to.include({ level: 'warn', msg: 'admin token changed', action: 'admin_token', change: 'changed' });
    const digests = [OLD_TOKEN, NEW_TOKEN].flatMap((t) => {
      const d = createHash('sha256').update(t).digest();
      return [d.toString('hex').slice(0, 8), d.toString('base64').slice(0, 8), d.toString('base64url').slice(0, 8)];
    });
    for (const line of lines) {
      for (const secret of [OLD_TOKEN, NEW_TOKEN, OLD_TOKEN.slice(0, 12), NEW_TOKEN.slice(-12), ...digests]) {
        expect(line, 'no token or digest in the log').to.not.contain(secret);
      }
    }
    // A reload that changes nothing restart-only says it plainly.
    const reloaded = reloadLines().at(-1);
    expect(reloaded).to.include({ level: 'info', msg: 'config reloaded', ok: true });
    expect(reloaded).to.not.have.property('needsRestart');
  });

  it('names every restart-only setting a reload changed on its log line, and applies the rest', async () => {
    const text = await readFile(stack.configFile, 'utf8');
    const next = text
      .replace(
        'adminPort: 0',
        'adminPort: 0, maxHeaderBytes: 8192, grpcMaxConcurrentStreams: 7, wsMaxMessageBytes: 1024, maxBodyBytes: 4096',
      )
      .replace('keys: { cacheTtlMs: 30000', 'keys: { cacheTtlMs: 1000')
      .replace(/record: \{ kind: sqlite, path: "([^"]+)" \}/, 'record: { kind: sqlite, path: "$1.moved" }');
    expect(next).to.not.equal(text);
    await writeFile(stack.configFile, next);
    expect(await stack.gateway.reload()).to.equal(true);
    await stack.gateway.logger.flush();
    const line = reloadLines().at(-1);
    expect(line).to.include({ level: 'warn', msg: 'config reloaded; some changes need a restart', ok: true });
    expect(String(line?.needsRestart).split(', ')).to.have.members(['server.maxHeaderBytes', 'keys.cacheTtlMs', 'store.record']);
    // The WebSocket message cap is read as each connection is made: not listed, and the next connection has it.
    const socket = await RpcSocket.open(wsUrl(stack.url('/l1')), { headers: { apikey: stack.key } });
    socket.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ data: `0x${'00'.repeat(1024)}` }, 'latest'] }));
    expect((await socket.closed).code).to.equal(1009);
    // maxBodyBytes is applied at once, so it is not listed, and takes effect.
    const big = await fetch(stack.url('/l1'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', apikey: stack.key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: ['x'.repeat(5000)] }),
    });
    expect(big.status).to.equal(413);
    // The store named in the file is not the one serving: the keys made at start still work.
    const ok = await fetch(stack.url('/l1'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', apikey: stack.key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }),
    });
    expect(ok.status).to.equal(200);
    await writeFile(stack.configFile, text);
    expect(await stack.gateway.reload()).to.equal(true);
  });

  it('refuses a connection over a reloaded server.maxConnections at its accept, and takes the next once the cap is raised', async () => {
    const text = await readFile(stack.configFile, 'utf8');
    const { hostname, port } = new URL(stack.url('/'));
    const held = connect(Number(port), hostname);
    await new Promise((resolve) => held.once('connect', resolve));
    expect(await answered(stack.url('/'))).to.equal(true);
    await writeFile(stack.configFile, text.replace('adminPort: 0', 'adminPort: 0, maxConnections: 1'));
    expect(await stack.gateway.reload()).to.equal(true);
    await stack.gateway.logger.flush();
    expect(reloadLines().at(-1)).to.include({ level: 'info', msg: 'config reloaded' });
    // One connection is held open: the cap of one is reached.
    expect(await answered(stack.url('/'))).to.equal(false);
    await writeFile(stack.configFile, text);
    expect(await stack.gateway.reload()).to.equal(true);
    expect(await answered(stack.url('/'))).to.equal(true);
    held.destroy();
  });
});
