// Setting restrictions the ways an operator, a customer's backend and a customer do:
// the real `noderouter keys create --origins …`, `keys restrict` and `keys import`
// commands against the store a running gateway uses (the gateway applies a change within
// the second, at once where the record's folder can be watched), the admin API's create
// and restrict, and the dashboard API's (own keys only, CSRF-checked, paced); mistakes
// name the field, exit 2 or 400.

import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lastLine, runCli } from '../support/cli.js';
import { DashboardClient, errorCode } from '../support/dashboard-client.js';
import { rpc, startStack, type Stack } from '../support/harness.js';
import { until } from '../support/until.js';

const TOKEN = 'restrict-admin-token-0123456789';
const APP = 'https://app.example.com';
const BLOCK = { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' };

describe('setting restrictions: CLI and admin API', function () {
  this.timeout(60_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack({ adminToken: TOKEN, dashboardYaml: '{ enabled: true }', keysYaml: 'changesBurst: 2, changesPerHour: 1' });
  });
  after(() => stack?.close());

  const cli = (...args: string[]) => runCli(['keys', ...args, '--config', stack.configFile]);
  const admin = async (path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(stack.admin(path), {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const call = (key: string, origin?: string) => rpc(stack.url('/l1'), BLOCK, { apikey: key, ...(origin === undefined ? {} : { origin }) });

  it('keys create and keys restrict: the gateway applies them on the next request', async () => {
    const created = await cli(
      'create',
      '--account',
      'acme',
      '--tier',
      'enterprise',
      '--origins',
      `${APP},https://*.example.org`,
      '--ips',
      '127.0.0.0/8,::1',
    );
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stdout).to.contain('"origins":["https://app.example.com","https://*.example.org"]');
    const key = lastLine(created.stdout);
    expect((await call(key, APP)).status).to.equal(200);
    expect((await call(key, 'https://evil.example')).status).to.equal(403);

    const id = /^id\s+(key_\S+)/m.exec(created.stdout)?.[1] as string;
    const changed = await cli('restrict', id, '--origins', 'https://evil.example', '--user-agents', 'node,MyApp/*');
    expect(changed.code, changed.stderr).to.equal(0);
    expect(changed.stdout).to.contain('"userAgents":["node","MyApp/*"]');
    // The addresses stay as they were; the origins are replaced.
    expect(changed.stdout).to.contain('"ips":["127.0.0.0/8","::1"]');
    // The CLI's write reaches the running gateway through the record's change log: at once
    // where the file's directory can be watched, within the second's poll otherwise.
    await until(async () => (await call(key, 'https://evil.example')).status === 200, {
      what: 'the new origins applied',
      timeoutMs: 1_500,
      everyMs: 50,
    });
    expect((await call(key, APP)).status).to.equal(403);

    const lifted = await cli('restrict', id, '--origins', '*', '--ips', '*', '--user-agents', '*');
    expect(lifted.stdout).to.contain('"origins":[],"ips":[],"referrers":[],"contracts":[],"userAgents":[]');
    await until(async () => (await call(key)).status === 200, { what: 'the restrictions lifted', timeoutMs: 1_500, everyMs: 50 });
  });

  it('names the field of a mistake and exits 2, changing nothing', async () => {
    const created = await cli('create', '--account', 'acme', '--tier', 'enterprise');
    const id = /^id\s+(key_\S+)/m.exec(created.stdout)?.[1] as string;
    const bad = await cli('restrict', id, '--ips', '10.0.0.1/8');
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('noderouter: ips: "10.0.0.1/8" has address bits set past its /8 prefix');
    const none = await cli('restrict', id);
    expect(none.code).to.equal(2);
    expect(none.stderr).to.contain('name at least one restriction to change');
    const badCreate = await cli('create', '--account', 'acme', '--tier', 'enterprise', '--contracts', '0x12');
    expect(badCreate.code).to.equal(2);
    expect(badCreate.stderr).to.contain('contracts: "0x12" is not a contract address');
    expect((await cli('show', id)).stdout).to.contain('"origins":[],"ips":[]');
  });

  it('admin API: create with restrictions, restrict, and 400 naming the field', async () => {
    const created = await admin('/admin/keys', {
      account: 'globex',
      tier: 'enterprise',
      origins: [APP],
      contracts: ['0x5FbDB2315678afecb367f032d93F642f64180aa3'],
    });
    expect(created.status).to.equal(201);
    const record = created.json.record as { id: string; restrictions: Record<string, string[]> };
    expect(record.restrictions).to.deep.equal({
      origins: [APP],
      ips: [],
      referrers: [],
      contracts: ['0x5fbdb2315678afecb367f032d93f642f64180aa3'],
      userAgents: [],
    });
    const bad = await admin(`/admin/keys/${record.id}/restrict`, { origins: ['https://app.example.com/path'] });
    expect(bad.status).to.equal(400);
    expect(bad.json).to.deep.equal({
      error: {
        code: 'INVALID_INPUT',
        message:
          'origins: "https://app.example.com/path" is not an origin: an origin has no path, query or user (like https://app.example.com, http://localhost:5173 or https://*.example.com)',
        field: 'origins',
      },
    });
    const ok = await admin(`/admin/keys/${record.id}/restrict`, { referrers: [`${APP}/`], contracts: null });
    expect(ok.status).to.equal(200);
    expect((ok.json.record as { restrictions: unknown }).restrictions).to.deep.include({
      referrers: [`${APP}/`],
      contracts: [],
      origins: [APP],
    });
    expect((await admin('/admin/keys/key_nope/restrict', { origins: [APP] })).status).to.equal(404);
  });

  it('keys import checks the restrictions of every record it is given', async () => {
    const exported = await cli('export');
    const line = exported.stdout.split('\n').find((l) => l.includes('"restrictions"')) as string;
    const record = JSON.parse(line) as { restrictions: Record<string, unknown> };
    const file = join(stack.dir, 'import.jsonl');
    await writeFile(file, `${JSON.stringify({ ...record, restrictions: { ...record.restrictions, ips: ['not-a-range'] } })}\n`);
    const bad = await cli('import', file);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('line 1: restrictions.ips: "not-a-range" is not an IP address or CIDR range');
    await writeFile(file, `${JSON.stringify({ ...record, restrictions: { colours: ['blue'] } })}\n`);
    expect((await cli('import', file)).stderr).to.contain('line 1: restrictions.colours is not a restriction');
  });

  it('dashboard API: an account restricts its own keys only, with the CSRF token, paced with its other key changes', async () => {
    await stack.gateway.accounts.create({ name: 'initech', tiers: 'enterprise' });
    await stack.gateway.accounts.create({ name: 'umbrella', tiers: 'enterprise' });
    const signedIn = async (name: string): Promise<DashboardClient> => {
      const c = new DashboardClient(stack.gateway.dashboardListenUrl);
      await c.signIn((await stack.gateway.accounts.issueToken(name)).token);
      return c;
    };
    const initech = await signedIn('initech');
    const umbrella = await signedIn('umbrella');
    const created = await initech.post('/keys', { label: 'web', origins: [APP] });
    expect(created.status).to.equal(201);
    const { id } = created.json.record as { id: string };
    expect((created.json.record as { restrictions: { origins: string[] } }).restrictions.origins).to.deep.equal([APP]);
    // Another account's key is one that does not exist.
    const other = await umbrella.post(`/keys/${id}/restrict`, { origins: [] });
    expect(other.status).to.equal(404);
    expect(errorCode(other)).to.equal('KEY_NOT_FOUND');
    expect((await initech.post(`/keys/${id}/restrict`, { origins: [] }, { csrf: null })).status).to.equal(403);
    const bad = await initech.post(`/keys/${id}/restrict`, { contracts: ['0xnope'] });
    expect(bad.status).to.equal(400);
    expect(bad.json.error).to.deep.include({ code: 'INVALID_INPUT', field: 'contracts' });
    // Only restrictions change here, whatever else the body says.
    const ok = await initech.post(`/keys/${id}/restrict`, { ips: ['10.0.0.0/8'], tier: 'other', label: 'changed' });
    expect(ok.status).to.equal(200);
    expect(ok.json.record).to.deep.include({ label: 'web', tier: 'enterprise' });
    expect((ok.json.record as { restrictions: unknown }).restrictions).to.deep.include({ origins: [APP], ips: ['10.0.0.0/8'] });
    // Two changes at once (the creation, a restriction): the next waits.
    const paced = await initech.post(`/keys/${id}/restrict`, { ips: [] });
    expect(paced.status).to.equal(429);
    expect(errorCode(paced)).to.equal('TOO_MANY_KEY_CHANGES');
    expect(paced.headers.get('retry-after')).to.match(/^\d+$/);
  });
});
