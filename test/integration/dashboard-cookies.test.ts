// Dashboard session cookies over https carry the __Host- prefix (Secure, Path=/, no
// Domain), so a sibling host or a plain-http page cannot set or shadow them; over
// plain http they keep their name and path. Https is known from dashboard.publicUrl,
// or from X-Forwarded-Proto when the proxy is trusted.

import { expect } from 'chai';
import type { Gateway } from '../../src/app/gateway.js';
import { DashboardClient, DASHBOARD_TIERS } from '../support/dashboard-client.js';
import { startStack, type Stack } from '../support/harness.js';

const ADMIN_TOKEN = 'admin-token-for-cookie-tests-0123456789';

const created = new WeakMap<Gateway, Set<string>>();

async function tokenFor(gw: Gateway, account: string): Promise<string> {
  const names = created.get(gw) ?? new Set<string>();
  created.set(gw, names);
  if (!names.has(account)) await gw.accounts.create({ name: account });
  names.add(account);
  return (await gw.accounts.issueToken(account)).token;
}

describe('dashboard cookies', function () {
  this.timeout(30_000);

  describe('with an https public URL', () => {
    let stack: Stack;
    const publicOrigin = 'https://dash.example.com';
    before(async () => {
      stack = await startStack({
        tiers: DASHBOARD_TIERS,
        adminToken: ADMIN_TOKEN,
        dashboardYaml: `{ enabled: true, port: 0, publicUrl: "${publicOrigin}" }`,
      });
    });
    after(() => stack.close());

    it('sets __Host-nr_session: Secure, Path=/, no Domain; reads only that name; clears it the same way', async () => {
      const client = new DashboardClient(stack.gateway.dashboardListenUrl);
      const res = await client.post('/signin', { token: await tokenFor(stack.gateway, 'acme') }, { origin: publicOrigin });
      expect(res.status, res.text).to.equal(200);
      expect(client.setCookies[0]).to.match(
        /^__Host-nr_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/,
      );
      expect(client.setCookies[0]).not.to.match(/domain=/i);
      expect((await client.get('/session', { origin: publicOrigin })).status).to.equal(200);

      // The same id under the unprefixed name (as a sibling host could plant it) is nobody.
      const id = client.cookies.get('__Host-nr_session') as string;
      const planted = new DashboardClient(stack.gateway.dashboardListenUrl);
      planted.cookies.set('nr_session', id);
      expect((await planted.get('/session', { origin: publicOrigin })).status).to.equal(401);

      client.csrf = res.json.csrfToken as string;
      expect((await client.post('/signout', undefined, { origin: publicOrigin })).status).to.be.oneOf([200, 204]);
      expect(client.setCookies.at(-1)).to.match(/^__Host-nr_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict; Secure$/);
    });

    it('sets __Host-nr_operator for the operator view', async () => {
      const op = new DashboardClient(stack.gateway.dashboardListenUrl, '/dashboard/operator/api');
      const res = await op.post('/signin', { token: ADMIN_TOKEN }, { origin: publicOrigin });
      expect(res.status, res.text).to.equal(200);
      expect(op.setCookies[0]).to.match(/^__Host-nr_operator=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/);
      expect((await op.get('/accounts', { origin: publicOrigin })).status).to.equal(200);
    });
  });

  describe('behind a proxy', () => {
    let trusted: Stack;
    let untrusted: Stack;
    before(async () => {
      trusted = await startStack({ tiers: DASHBOARD_TIERS, dashboardYaml: '{ enabled: true, trustProxy: true }' });
      untrusted = await startStack({ tiers: DASHBOARD_TIERS, dashboardYaml: '{ enabled: true }' });
    });
    after(async () => {
      await trusted.close();
      await untrusted.close();
    });

    it('uses __Host- when a trusted proxy says X-Forwarded-Proto: https, the plain cookie otherwise', async () => {
      const base = trusted.gateway.dashboardListenUrl;
      const httpsOrigin = base.replace(/^http:/, 'https:');
      const viaHttps = new DashboardClient(base);
      const res = await viaHttps.post(
        '/signin',
        { token: await tokenFor(trusted.gateway, 'acme') },
        { origin: httpsOrigin, headers: { 'x-forwarded-proto': 'https' } },
      );
      expect(res.status, res.text).to.equal(200);
      expect(viaHttps.setCookies[0]).to.match(/^__Host-nr_session=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/);
      expect((await viaHttps.get('/session', { origin: httpsOrigin, headers: { 'x-forwarded-proto': 'https' } })).status).to.equal(200);

      const viaHttp = new DashboardClient(base);
      expect((await viaHttp.signIn(await tokenFor(trusted.gateway, 'acme'))).status).to.equal(200);
      expect(viaHttp.setCookies[0]).to.match(/^nr_session=[^;]+; Path=\/dashboard; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    });

    it('ignores X-Forwarded-Proto from a proxy it does not trust', async () => {
      const client = new DashboardClient(untrusted.gateway.dashboardListenUrl);
      const res = await client.post(
        '/signin',
        { token: await tokenFor(untrusted.gateway, 'acme') },
        { headers: { 'x-forwarded-proto': 'https' } },
      );
      expect(res.status, res.text).to.equal(200);
      expect(client.setCookies[0]).to.match(/^nr_session=[^;]+; Path=\/dashboard; /);
    });
  });
});
