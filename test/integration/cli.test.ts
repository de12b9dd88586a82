// The noderouter command: check-config messages, and the key and account commands
// against the record a running gateway uses (a key created by the CLI works at
// once; a sign-in link printed by the CLI signs in on the running dashboard).

import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { L1_FULL_AND_ARCHIVE, rpc, startStack, type Stack } from '../support/harness.js';
import { lastLine, runCli } from '../support/cli.js';
import { DashboardClient } from '../support/dashboard-client.js';

describe('noderouter CLI', function () {
  this.timeout(60_000);

  describe('check-config', () => {
    it('accepts the shipped config/gateway.yaml', async () => {
      const res = await runCli(['check-config', 'config/gateway.yaml']);
      expect(res.stderr).to.equal('');
      expect(res.code).to.equal(0);
      expect(res.stdout).to.match(/gateway\.yaml: ok/);
      // The embedded default: a SQLite file beside the package's data folder, the hot state in memory.
      expect(res.stdout).to.match(/record: sqlite \S+\/data\/noderouter\.db; hot state: memory/);
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

    it('refuses a node URL with a password, naming the path and not the secret', async () => {
      const file = join((await import('node:os')).tmpdir(), `nr-cred-${process.pid}.yaml`);
      const text = (await readFile('config/gateway.yaml', 'utf8')).replace(
        '{ name: l1-full-1, url: http://127.0.0.1:18501, role: full }',
        '{ name: l1-full-1, url: "http://:hunter2-node-pass@127.0.0.1:18501", role: full }',
      );
      await writeFile(file, text);
      const res = await runCli(['check-config', file]);
      expect(res.code).to.equal(1);
      expect(res.stderr).to.contain('chains.l1.nodes[0].url must not carry credentials');
      expect(res.stderr + res.stdout).not.to.contain('hunter2');
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

    it('refuses a prefix two keys share with exit 2, asking for the id, and changes nothing', async () => {
      const mine = lastLine((await runCli(['keys', 'create', '--config', stack.configFile, '--account', 'acme', '--tier', 'free'])).stdout);
      const prefix = mine.slice(0, 8);
      // Another customer's key whose first characters happen to be the same, imported as `keys export` prints records.
      const exported = (await runCli(['keys', 'export', '--config', stack.configFile])).stdout
        .split('\n')
        .filter((l) => l.includes(prefix));
      const theirs = {
        ...(JSON.parse(exported[0] as string) as Record<string, unknown>),
        id: 'key_TheirKey0001',
        account: 'globex',
        hash: 'e'.repeat(64),
      };
      const file = join(stack.dir, 'theirs.jsonl');
      await writeFile(file, `${JSON.stringify(theirs)}\n`);
      expect((await runCli(['keys', 'import', file, '--config', stack.configFile])).code).to.equal(0);
      for (const cmd of ['revoke', 'rotate', 'show']) {
        const res = await runCli(['keys', cmd, prefix, '--config', stack.configFile]);
        expect(res.code, cmd).to.equal(2);
        expect(res.stderr).to.equal(`noderouter: prefix "${prefix}" matches more than one key: use the key's id (key_…) instead\n`);
      }
      const call = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: mine });
      expect(call.status).to.equal(200);
      const byId = await runCli(['keys', 'revoke', 'key_TheirKey0001', '--config', stack.configFile]);
      expect(byId.code).to.equal(0);
      expect(byId.stdout).to.match(/account\s+globex/);
      expect((await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: mine })).status).to.equal(200);
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
      const again = await runCli(['keys', 'rotate', fresh.slice(0, 8), '--config', stack.configFile]);
      expect(again.code).to.equal(2);
      expect(again.stderr).to.equal(`noderouter: key ${fresh.slice(0, 8)} is revoked and cannot be rotated\n`);
      expect(again.stdout).to.equal('');
    });

    it('refuses an unknown tier with the tiers it knows', async () => {
      const res = await runCli(['keys', 'create', '--config', stack.configFile, '--account', 'acme', '--tier', 'gold']);
      expect(res.code).to.equal(2);
      expect(res.stderr).to.contain('tier must be one of: free, growth, enterprise');
    });
  });

  describe('keys usage', () => {
    const DAY = 86_400_000;
    let clock = Date.UTC(2026, 4, 10, 12, 0, 0);
    let stack: Stack;
    before(async () => {
      stack = await startStack({
        chains: [L1_FULL_AND_ARCHIVE],
        now: () => clock,
        tiers: '\n  enterprise: { rate: unlimited, archive: true }\n  daily3: { rate: unlimited, daily: 3 }\n',
      });
    });
    after(() => stack.close());

    it('reads usage history per day and chain, since a day, and per method; refuses bad options with exit 2', async () => {
      const { id, value } = await stack.createKey('daily3');
      const call = async (method: string) => (await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method }, { apikey: value })).status;
      // Day one: two answered, one not served (invalid: no quota spent), one more answered, then the quota refuses.
      const statuses = [];
      for (const m of ['eth_blockNumber', 'eth_blockNumber', 'eth_sendTransaction', 'eth_chainId', 'eth_blockNumber'])
        statuses.push(await call(m));
      expect(statuses).to.deep.equal([200, 200, 200, 200, 429]);
      clock += DAY;
      expect(await call('eth_blockNumber')).to.equal(200);
      await stack.gateway.flushUsage();
      const cli = (...args: string[]) => runCli(['keys', 'usage', id, ...args, '--config', stack.configFile]);

      const days = await cli();
      expect(days.stderr).to.equal('');
      expect(days.code).to.equal(0);
      const lines = days.stdout.trim().split('\n');
      expect(lines[0]?.split(/\s+/)).to.deep.equal(['DAY', 'CHAIN', 'CALLS', 'ERRORS', 'LIMITED', 'INVALID', 'UNITS']);
      expect(lines.slice(1).map((l) => l.split(/\s+/))).to.deep.equal([
        ['2026-05-10', 'l1', '3', '0', '1', '1', '3'],
        ['2026-05-11', 'l1', '1', '0', '0', '0', '1'],
      ]);

      const since = await cli('--since', '2026-05-11', '--json');
      expect(since.code).to.equal(0);
      expect(JSON.parse(since.stdout)).to.deep.equal([
        { day: '2026-05-11', chain: 'l1', calls: 1, units: 1, errors: 0, limited: 0, invalid: 0 },
      ]);

      const byMethod = await cli('--by', 'method', '--json');
      expect(byMethod.code).to.equal(0);
      const methods = JSON.parse(byMethod.stdout) as Array<Record<string, unknown>>;
      expect(methods.map((m) => [m.method, m.calls, m.units, m.errors, m.errorRate, m.limited, m.invalid])).to.deep.equal([
        ['eth_blockNumber', 3, 3, 0, 0, 1, 0],
        ['eth_chainId', 1, 1, 0, 0, 0, 0],
        // The plugin's label of a method the endpoint does not serve.
        ['other', 0, 0, 0, null, 0, 1],
      ]);
      for (const p of ['p50Ms', 'p95Ms', 'p99Ms']) expect(methods[0]?.[p], p).to.be.a('number');
      expect(methods[2]?.p50Ms).to.equal(null);
      const table = await cli('--by', 'method');
      expect(table.stdout.split('\n')[0]?.split(/\s+/)).to.deep.equal([
        'METHOD',
        'CALLS',
        'UNITS',
        'ERRORS',
        'ERROR%',
        'REFUSED',
        'P50MS',
        'P95MS',
        'P99MS',
      ]);
      expect(table.stdout).to.match(/\neth_blockNumber\s+3\s+3\s+0\s+0\.0\s+1\s+\d/);

      for (const [args, message] of [
        [['--since', '2026-02-30'], '--since must be a UTC day as YYYY-MM-DD, not "2026-02-30"'],
        [['--since', 'yesterday'], '--since must be a UTC day as YYYY-MM-DD, not "yesterday"'],
        [['--by', 'chain'], '--by takes "method" (per day and chain without it), not "chain"'],
        [['--since', '2026-5-1'], '--since must be a UTC day as YYYY-MM-DD, not "2026-5-1"'],
      ] as const) {
        const res = await cli(...args);
        expect(res.code, args.join(' ')).to.equal(2);
        expect(res.stderr, args.join(' ')).to.contain(message);
        expect(res.stdout).to.equal('');
      }
      const unknown = await runCli(['keys', 'usage', 'key_nosuchkey', '--config', stack.configFile]);
      expect(unknown.code).to.equal(2);
    });
  });

  describe('accounts', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ dashboardYaml: '{ enabled: true, publicUrl: "https://dash.example.com" }' });
    });
    after(() => stack.close());
    const cli = (...args: string[]) => runCli([...args, '--config', stack.configFile]);

    it('creates accounts with their tiers, refuses mistakes with the fix and exit 2, and lists them', async () => {
      const created = await cli(
        'accounts',
        'create',
        '--name',
        'acme',
        '--email',
        'ops@acme.example',
        '--tiers',
        'free,growth',
        '--default-tier',
        'growth',
      );
      expect(created.stderr).to.equal('');
      expect(created.code).to.equal(0);
      expect(created.stdout).to.match(/^id\s+acc_[A-Za-z0-9]{12}$/m);
      expect(created.stdout).to.match(/^tiers\s+free,growth$/m);
      expect(created.stdout).to.contain('noderouter accounts token acme');

      const twice = await cli('accounts', 'create', '--name', 'ACME');
      expect(twice.code).to.equal(2);
      expect(twice.stderr).to.contain('an account named "ACME" already exists');
      const badTier = await cli('accounts', 'create', '--name', 'globex', '--tiers', 'gold');
      expect(badTier.code).to.equal(2);
      expect(badTier.stderr).to.contain('tiers must be among the configured tiers: free, growth, enterprise (unknown: gold)');

      const list = await cli('accounts', 'list');
      expect(list.code).to.equal(0);
      expect(list.stdout).to.match(/acme\s+active\s+free,growth\*\s+0 /);
      const json = JSON.parse((await cli('accounts', 'list', '--json')).stdout) as Array<{
        name: string;
        state: string;
        keys: number;
        email: string;
      }>;
      expect(json.find((a) => a.name === 'acme')).to.deep.include({ state: 'active', keys: 0, email: 'ops@acme.example' });
    });

    it('gives keys created for an account name that account’s id, and lists them by name', async () => {
      const id = (await stack.gateway.accounts.find('acme')).id;
      const created = await cli('keys', 'create', '--account', 'acme', '--tier', 'growth', '--label', 'from cli');
      expect(created.code).to.equal(0);
      expect(created.stdout).to.match(new RegExp(`^account\\s+${id}$`, 'm'));
      const key = lastLine(created.stdout);
      expect((await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: key })).status).to.equal(200);
      const list = await cli('keys', 'list', '--account', 'acme');
      expect(list.stdout).to.contain(key.slice(0, 8)).and.contain('from cli');
      // A free-form account string still works as before.
      const legacy = await cli('keys', 'create', '--account', 'legacy-co', '--tier', 'free');
      expect(legacy.stdout).to.match(/^account\s+legacy-co$/m);
    });

    it('prints a one-time sign-in link as the last line, which signs in on the running dashboard once', async () => {
      const res = await cli('accounts', 'token', 'acme', '--ttl', '30m');
      expect(res.stderr).to.equal('');
      expect(res.code).to.equal(0);
      expect(res.stdout).to.contain('works once').and.contain('(30 minutes)');
      const link = lastLine(res.stdout);
      expect(link).to.match(/^https:\/\/dash\.example\.com\/dashboard\/signin\?token=nrs_[A-Za-z0-9]{32}$/);
      const token = new URL(link).searchParams.get('token') as string;
      const client = new DashboardClient(stack.gateway.dashboardListenUrl);
      expect((await client.signIn(token)).status).to.equal(200);
      expect((await new DashboardClient(stack.gateway.dashboardListenUrl).signIn(token)).status).to.equal(401);
      const keys = await client.get('/keys');
      expect(keys.text).to.contain('from cli');

      for (const [args, message] of [
        [['--ttl', '10s'], '--ttl must be from 1m to 7d'],
        [['--ttl', 'soon'], '--ttl must be a duration like 15m, 2h or 1d'],
      ] as const) {
        const bad = await cli('accounts', 'token', 'acme', ...args);
        expect(bad.code).to.equal(2);
        expect(bad.stderr).to.contain(message);
      }
      const nobody = await cli('accounts', 'token', 'nobody');
      expect(nobody.code).to.equal(2);
      expect(nobody.stderr).to.contain('no account with id or name "nobody" (see: noderouter accounts list)');
    });

    it('adopts keys that already carry a new account’s name only with --adopt-keys', async () => {
      const key = lastLine((await cli('keys', 'create', '--account', 'initech', '--tier', 'free')).stdout);
      const refused = await cli('accounts', 'create', '--name', 'initech');
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.contain('1 existing key(s) carry the account "initech": add --adopt-keys');
      const adopted = await cli('accounts', 'create', '--name', 'initech', '--adopt-keys');
      expect(adopted.code).to.equal(0);
      expect(adopted.stdout).to.contain('adopted 1 existing key(s) whose account was "initech"');
      const id = (await stack.gateway.accounts.find('initech')).id;
      expect((await stack.gateway.store.get(key.slice(0, 8)))?.account).to.equal(id);
      expect((await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }, { apikey: key })).status).to.equal(200);
    });

    it('disables, enables and deletes accounts (deleting revokes their keys)', async () => {
      const disabled = await cli('accounts', 'disable', 'initech');
      expect(disabled.stdout).to.match(/^state\s+disabled$/m);
      expect((await cli('accounts', 'token', 'initech')).stderr).to.contain('is disabled: enable it first');
      expect((await cli('accounts', 'enable', 'initech')).stdout).to.match(/^state\s+active$/m);
      const deleted = await cli('accounts', 'delete', 'initech');
      expect(deleted.stdout).to.match(/^state\s+deleted$/m);
      expect(deleted.stdout).to.contain('its keys are revoked');
      const keys = await stack.gateway.store.list({ account: (await stack.gateway.accounts.find('initech')).id });
      expect(keys.every((k) => k.revokedAt !== undefined)).to.equal(true);
      expect((await cli('accounts', 'frobnicate')).code).to.equal(2);
    });
  });
});
