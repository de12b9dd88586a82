// The noderouter command: check-config messages, and the key commands against the
// file store a running gateway uses (a key created by the CLI works at once).

import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rpc, startStack, type Stack } from '../support/harness.js';
import { lastLine, runCli } from '../support/cli.js';

describe('noderouter CLI', function () {
  this.timeout(60_000);

  describe('check-config', () => {
    it('accepts the shipped config/gateway.yaml', async () => {
      const res = await runCli(['check-config', 'config/gateway.yaml']);
      expect(res.stderr).to.equal('');
      expect(res.code).to.equal(0);
      expect(res.stdout).to.match(/gateway\.yaml: ok/);
    });

    it('names the file, the path and the fix, and exits non-zero', async () => {
      const dir = (await import('node:os')).tmpdir();
      const file = join(dir, `nr-bad-${process.pid}.yaml`);
      const text = (await readFile('config/gateway.yaml', 'utf8'))
        .replace(
          '{ name: hub-rpc-full-2, url: http://127.0.0.1:18542, role: full }',
          '{ name: hub-rpc-full-2, url: http://127.0.0.1:18542, role: fast }',
        )
        .replace('  maxBodyBytes: 1048576', '  maxBodyBytes: 1048576\n  colour: blue');
      await writeFile(file, text);
      const res = await runCli(['check-config', file]);
      expect(res.code).to.equal(1);
      expect(res.stderr).to.contain(file);
      expect(res.stderr).to.contain('chains.hub-rpc.nodes[1].role must be "full" or "archive"');
      expect(res.stderr).to.contain('server.colour is not a known setting');
    });

    it('reports an unset environment variable by path', async () => {
      const file = join((await import('node:os')).tmpdir(), `nr-env-${process.pid}.yaml`);
      const text = (await readFile('config/gateway.yaml', 'utf8')).replace(
        'token: ${NODEROUTER_ADMIN_TOKEN:-}',
        'token: ${NR_TEST_UNSET_TOKEN}',
      );
      await writeFile(file, text);
      const res = await runCli(['check-config', file], { NR_TEST_UNSET_TOKEN: '' });
      expect(res.code).to.equal(1);
      expect(res.stderr).to.contain('admin.token uses ${NR_TEST_UNSET_TOKEN}, which is not set');
    });
  });

  describe('keys', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack();
    });
    after(() => stack.close());

    it('creates a key that works at once on the running gateway, printed as the last line', async () => {
      const res = await runCli(['keys', 'create', '--config', stack.configFile, '--account', 'acme', '--tier', 'growth', '--label', 'ci']);
      expect(res.stderr).to.equal('');
      expect(res.code).to.equal(0);
      const key = lastLine(res.stdout);
      expect(key).to.match(/^nrk_[A-Za-z0-9]{32}$/);
      const call = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: key });
      expect(call.status).to.equal(200);

      const list = await runCli(['keys', 'list', '--config', stack.configFile]);
      expect(list.code).to.equal(0);
      expect(list.stdout).to.contain('acme');
      expect(list.stdout).to.contain(key.slice(0, 8));
      expect(list.stdout).to.not.contain(key);
      const show = await runCli(['keys', 'show', key.slice(0, 8), '--config', stack.configFile]);
      expect(show.code).to.equal(0);
      expect(show.stdout).to.contain('growth');
      expect(show.stdout).to.not.contain(key);
    });

    it('revokes, rotates and reports usage through the CLI', async () => {
      const created = await runCli(['keys', 'create', '--config', stack.configFile, '--account', 'cli', '--tier', 'enterprise']);
      const key = lastLine(created.stdout);
      const call = () => rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: key });
      expect((await call()).status).to.equal(200);
      const rotated = await runCli(['keys', 'rotate', key.slice(0, 8), '--grace', '0', '--config', stack.configFile]);
      expect(rotated.code).to.equal(0);
      const fresh = lastLine(rotated.stdout);
      expect(fresh).to.match(/^nrk_/).and.not.equal(key);
      expect((await call()).status).to.equal(401);
      const ok = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: fresh });
      expect(ok.status).to.equal(200);
      await stack.gateway.close();
      const usage = await runCli(['keys', 'usage', fresh.slice(0, 8), '--config', stack.configFile]);
      expect(usage.code).to.equal(0);
      expect(usage.stdout).to.match(/l1\s+2\s+0\s+0/);
      const revoked = await runCli(['keys', 'revoke', fresh.slice(0, 8), '--config', stack.configFile]);
      expect(revoked.code).to.equal(0);
      expect(revoked.stdout).to.match(/state\s+revoked/);
    });

    it('refuses an unknown tier with the tiers it knows', async () => {
      const res = await runCli(['keys', 'create', '--config', stack.configFile, '--account', 'acme', '--tier', 'gold']);
      expect(res.code).to.equal(2);
      expect(res.stderr).to.contain('tier must be one of: free, growth, enterprise');
    });
  });
});
