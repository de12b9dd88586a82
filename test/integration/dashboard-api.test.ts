// The dashboard's JSON APIs against a real gateway, devnet nodes and a SQLite record
// (and once with the Redis hot state): sign-in and its refusals, sessions, CSRF, keys created,
// rotated and revoked taking effect on the chain endpoints at once, usage matching
// the calls made, one account walled off from another, and the operator view.
// Time is a clock the tests move.

import { expect } from 'chai';
import { request } from 'node:http';
import WebSocket from 'ws';
import type { Gateway } from '../../src/app/gateway.js';
import { get, redisHot, rpc, startStack, type Stack } from '../support/harness.js';
import { recordBytes, sqlitePath } from '../support/record.js';
import { BLOCK_NUMBER, DASHBOARD_TIERS, DashboardClient, errorCode } from '../support/dashboard-client.js';
import { deleteUnderPrefix, testPrefix } from '../support/redis.js';

const ADMIN_TOKEN = 'test-admin-token-0123456789';
const MINUTE = 60_000;

function statusOf(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

async function tokenFor(gw: Gateway, account: string): Promise<string> {
  return (await gw.accounts.issueToken(account)).token;
}

describe('dashboard API', function () {
  this.timeout(30_000);
  let clock = Date.now();
  let stack: Stack;
  let origin: string;

  const signedIn = async (account: string): Promise<DashboardClient> => {
    const client = new DashboardClient(origin);
    const res = await client.signIn(await tokenFor(stack.gateway, account));
    expect(res.status, res.text).to.equal(200);
    return client;
  };
  const call = (key: string, path = '/l1', body: unknown = BLOCK_NUMBER) => rpc(stack.url(path), body, { apikey: key });

  before(async () => {
    stack = await startStack({
      tiers: DASHBOARD_TIERS,
      adminToken: ADMIN_TOKEN,
      now: () => clock,
      dashboardYaml: '{ enabled: true, signinAttemptsPerMinute: 5 }',
      // Many key changes for one account in these tests: pacing has its own tests (key-churn.test.ts).
      keysYaml: 'rotationGraceSeconds: 600, changesBurst: 1000',
    });
    origin = new URL(stack.gateway.dashboardUrl).origin;
    await stack.gateway.accounts.create({ name: 'acme', email: 'ops@acme.example', tiers: 'free,growth', defaultTier: 'free' });
    await stack.gateway.accounts.create({ name: 'globex', tiers: ['free'] });
  });
  after(() => stack.close());

  describe('page', () => {
    it('serves the page and its files under strict security headers, with ETags', async () => {
      expect(stack.gateway.dashboardUrl).to.equal(`${stack.gateway.adminUrl}/dashboard`);
      const page = await get(stack.dashboard('/dashboard'));
      expect(page.status).to.equal(200);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).to.contain("script-src 'self'").and.contain("frame-ancestors 'none'").and.contain("default-src 'none'");
      expect(csp).to.not.contain('unsafe-inline');
      expect(page.headers.get('x-frame-options')).to.equal('DENY');
      expect(page.headers.get('referrer-policy')).to.equal('no-referrer');
      expect(page.headers.get('x-content-type-options')).to.equal('nosniff');
      // No inline script: every <script> loads a file.
      expect(page.text).to.match(/<script type="module" src="\/dashboard\/assets\/account\.js"><\/script>/);
      expect(page.text).to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/);
      const js = await get(stack.dashboard('/dashboard/assets/account.js'));
      expect(js.headers.get('content-type')).to.match(/^text\/javascript/);
      const etag = js.headers.get('etag') as string;
      expect(etag).to.match(/^"[A-Za-z0-9_-]+"$/);
      // node:http, not fetch: fetch turns If-None-Match into a no-cache request (the fetch standard's cache modes).
      expect(await statusOf(stack.dashboard('/dashboard/assets/account.js'), { 'if-none-match': etag })).to.equal(304);
      expect((await get(stack.dashboard('/dashboard/assets/nope.js'))).status).to.equal(404);
      expect((await get(stack.dashboard('/dashboard/operator'))).text).to.contain('/dashboard/assets/operator.js');
      // The admin listener keeps serving what it served.
      expect((await get(stack.admin('/health/live'))).status).to.equal(200);
    });

    it('does not use up a sign-in token when the link is only fetched', async () => {
      const token = await tokenFor(stack.gateway, 'acme');
      const landing = await get(stack.dashboard(`/dashboard/signin?token=${token}`));
      expect(landing.status).to.equal(200);
      expect(landing.text).to.not.contain(token);
      expect((await new DashboardClient(origin).signIn(token)).status).to.equal(200);
    });
  });

  describe('sign-in and sessions', () => {
    it('exchanges a good token once for an HttpOnly, SameSite=Strict session on /dashboard', async () => {
      const token = await tokenFor(stack.gateway, 'acme');
      const client = new DashboardClient(origin);
      const res = await client.signIn(token);
      expect(res.status).to.equal(200);
      expect((res.json.account as { name: string }).name).to.equal('acme');
      expect(res.headers.get('cache-control')).to.equal('no-store');
      const cookie = client.setCookies[0] as string;
      expect(cookie).to.match(/^nr_session=[A-Za-z0-9_-]{43}; Path=\/dashboard; Max-Age=43200; HttpOnly; SameSite=Strict$/);
      const session = await client.get('/session');
      expect(session.status).to.equal(200);
      expect(session.json.csrfToken).to.equal(client.csrf);
      expect((session.json.account as { tiers: Array<{ name: string }> }).tiers.map((t) => t.name)).to.deep.equal(['free', 'growth']);

      const again = await new DashboardClient(origin).signIn(token);
      expect(again.status).to.equal(401);
      expect(errorCode(again)).to.equal('SIGNIN_FAILED');
    });

    it('stores only digests: no token or session id in the record', async () => {
      const token = await tokenFor(stack.gateway, 'acme');
      const client = new DashboardClient(origin);
      await client.signIn(token);
      const text = (await recordBytes(sqlitePath(stack.gateway.config.store.record))).toString('latin1');
      expect(text).to.not.contain(token);
      expect(text).to.not.contain(client.cookies.get('nr_session'));
      expect(text).to.not.contain(client.csrf);
    });

    it('refuses an expired token, and a session past its lifetime', async () => {
      const start = clock;
      const token = await tokenFor(stack.gateway, 'acme');
      clock = start + 16 * MINUTE;
      const late = await new DashboardClient(origin).signIn(token);
      expect(late.status).to.equal(401);
      expect(errorCode(late)).to.equal('SIGNIN_FAILED');

      const client = await signedIn('acme');
      expect((await client.get('/keys')).status).to.equal(200);
      clock += 12 * 60 * MINUTE - 1_000;
      expect((await client.get('/keys')).status).to.equal(200);
      clock += 2_000;
      const ended = await client.get('/keys');
      expect(ended.status).to.equal(401);
      expect(errorCode(ended)).to.equal('UNAUTHENTICATED');
      clock = start;
    });

    it('signs out: the cookie is cleared and the session no longer works', async () => {
      const client = await signedIn('acme');
      const cookie = client.cookies.get('nr_session') as string;
      const out = await client.post('/signout');
      expect(out.status).to.equal(204);
      expect(client.setCookies.at(-1)).to.match(/^nr_session=; Path=\/dashboard; Max-Age=0; HttpOnly; SameSite=Strict/);
      const stale = new DashboardClient(origin);
      stale.cookies.set('nr_session', cookie);
      expect((await stale.get('/session')).status).to.equal(401);
    });

    it('refuses a disabled account’s sessions and tokens', async () => {
      await stack.gateway.accounts.create({ name: 'initech', tiers: 'free' });
      const client = await signedIn('initech');
      const token = await tokenFor(stack.gateway, 'initech');
      await stack.gateway.accounts.setState('initech', 'disable');
      expect((await client.get('/session')).status).to.equal(401);
      expect((await new DashboardClient(origin).signIn(token)).status).to.equal(401);
    });

    it('throttles failed sign-ins per address with 429 and Retry-After, even for a good token', async () => {
      // A fresh window: the refusals of the tests above count too.
      clock += MINUTE + 1_000;
      const client = new DashboardClient(origin);
      for (let i = 0; i < 5; i++) {
        const bad = await client.signIn(`nrs_${'x'.repeat(32)}`);
        expect(bad.status).to.equal(401);
      }
      const throttled = await client.signIn(await tokenFor(stack.gateway, 'acme'));
      expect(throttled.status).to.equal(429);
      expect(errorCode(throttled)).to.equal('TOO_MANY_ATTEMPTS');
      expect(Number(throttled.headers.get('retry-after'))).to.be.within(1, 60);
      clock += MINUTE + 1_000;
      expect((await client.signIn(await tokenFor(stack.gateway, 'acme'))).status).to.equal(200);
    });
  });

  describe('keys', () => {
    it('creates a key that works at once, shown only in the create answer', async () => {
      const acme = await signedIn('acme');
      const created = await acme.post('/keys', { label: 'prod', tier: 'growth' });
      expect(created.status, created.text).to.equal(201);
      expect(created.headers.get('cache-control')).to.equal('no-store');
      const value = created.json.key as string;
      const record = created.json.record as { id: string; prefix: string; tier: string; account: string; state: string };
      expect(value).to.match(/^nrk_[A-Za-z0-9]{32}$/);
      expect(record).to.include({ tier: 'growth', state: 'active', prefix: value.slice(0, 8) });
      expect(record.account).to.equal((await stack.gateway.accounts.find('acme')).id);
      expect((await call(value)).status).to.equal(200);
      const list = await acme.get('/keys');
      expect(list.text).to.contain(record.id).and.contain(record.prefix).and.not.contain(value);
      expect(list.text).to.not.match(/"hash"/);
      const usage = await acme.get(`/usage?key=${record.id}`);
      expect(usage.text).to.not.contain(value);
    });

    it('holds new keys to the account’s tiers, and narrows chains and archive only', async () => {
      const acme = await signedIn('acme');
      const wrongTier = await acme.post('/keys', { tier: 'enterprise' });
      expect(wrongTier.status).to.equal(400);
      expect((wrongTier.json.error as { message: string }).message).to.equal("tier must be one of this account's tiers: free, growth");
      expect((await acme.post('/keys', { tier: 'free', archive: true })).status).to.equal(400);
      expect((await acme.post('/keys', { tier: 'free', chains: ['l1', 'no-such-chain'] })).status).to.equal(400);
      expect((await acme.post('/keys', { tier: 'free', chains: [] })).status).to.equal(400);

      const onlyL1 = await acme.post('/keys', { tier: 'growth', chains: ['l1'] });
      const key = onlyL1.json.key as string;
      expect((await call(key)).status).to.equal(200);
      expect((await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: key })).status).to.equal(403);

      const noArchive = (await acme.post('/keys', { tier: 'growth', archive: false })).json.key as string;
      const old = { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: ['0x00000000000000000000000000000000000000aa', 'earliest'] };
      expect((await call(noArchive, '/l1', old)).status).to.equal(403);
      const withArchive = (await acme.post('/keys', { tier: 'growth' })).json.key as string;
      expect((await call(withArchive, '/l1', old)).status).to.equal(200);
      // The default tier is the account's default.
      expect(((await acme.post('/keys', {})).json.record as { tier: string }).tier).to.equal('free');
    });

    it('rotates: the new value works at once, the old one until the grace end it reports', async () => {
      const acme = await signedIn('acme');
      const created = await acme.post('/keys', { tier: 'growth', label: 'rotating' });
      const old = created.json.key as string;
      const id = (created.json.record as { id: string }).id;
      const rotated = await acme.post(`/keys/${id}/rotate`);
      expect(rotated.status).to.equal(200);
      expect(rotated.headers.get('cache-control')).to.equal('no-store');
      const fresh = rotated.json.key as string;
      const retired = (rotated.json.record as { retired: Array<{ prefix: string; until: string }> }).retired;
      expect(retired).to.have.length(1);
      expect(retired[0]?.prefix).to.equal(old.slice(0, 8));
      const until = Date.parse(retired[0]?.until as string);
      expect(until - Date.now()).to.be.within(590_000, 600_000);
      expect((await call(fresh)).status).to.equal(200);
      expect((await call(old)).status).to.equal(200);
      const listed = ((await acme.get('/keys')).json.keys as Array<{ id: string; retired: unknown[] }>).find((k) => k.id === id);
      expect(listed?.retired).to.deep.equal(retired);
      const saved = clock;
      clock = until + 1_000;
      expect((await call(old)).status).to.equal(401);
      expect((await call(fresh)).status).to.equal(200);
      clock = saved;
    });

    it('revokes: the very next call with the key is refused', async () => {
      const acme = await signedIn('acme');
      const created = await acme.post('/keys', { tier: 'growth' });
      const key = created.json.key as string;
      const id = (created.json.record as { id: string }).id;
      expect((await call(key)).status).to.equal(200);
      const revoked = await acme.post(`/keys/${id}/revoke`);
      expect(revoked.status).to.equal(200);
      expect((revoked.json.record as { state: string }).state).to.equal('revoked');
      expect((await call(key)).status).to.equal(401);
      expect((await acme.post(`/keys/${id}/rotate`)).status).to.equal(400);
    });
  });

  describe('limits and usage', () => {
    it('reports the tier’s limits and usage that match the calls made, refusals included', async () => {
      // Back to the present at the end, not to real time: the clock never steps back past calls already made.
      const present = clock;
      clock = Date.UTC(2026, 6, 14, 10, 0, 0);
      const acme = await signedIn('acme');
      const before = await acme.get('/usage');
      const created = await acme.post('/keys', { tier: 'free', label: 'metered' });
      const key = created.json.key as string;
      const id = (created.json.record as { id: string }).id;
      // burst 2: two calls pass, the third is refused.
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await call(key)).status);
      expect(statuses).to.deep.equal([200, 200, 429]);
      clock += 10_000;
      expect((await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: key })).status).to.equal(200);
      // Usage history is written every usage.flushInterval: now, here.
      await stack.gateway.flushUsage();

      const one = await acme.get(`/usage?key=${id}`);
      expect(one.status).to.equal(200);
      const report = one.json as {
        window: { today: string; month: string };
        tiers: Array<{ name: string; rate: number | null; daily: number | null; monthly: number | null; archive: boolean }>;
        totals: { today: { calls: number; limited: number }; month: { calls: number }; last30: { limited: number } };
        keys: Array<{ id: string; today: { calls: number; limited: number }; quota: { daily: number | null; monthly: number | null } }>;
        series: { days: string[]; chains: Array<{ chain: string; calls: number[] }>; limited: number[] };
        methods: Array<Record<string, unknown>>;
        lagSeconds: number;
      };
      expect(report.window).to.deep.equal({ today: '2026-07-14', month: '2026-07' });
      expect(report.totals.today).to.deep.equal({ calls: 3, units: 3, errors: 0, limited: 1, invalid: 0 });
      expect(report.lagSeconds).to.equal(5);
      // Per method: the refused call is no call, and its instant answer is not in the latency.
      const blockNumber = report.methods.find((m) => m.method === 'eth_blockNumber');
      expect(blockNumber).to.deep.include({ calls: 2, units: 2, errors: 0, errorRate: 0, limited: 1, invalid: 0 });
      expect(blockNumber?.p50Ms).to.be.a('number');
      expect(report.methods.map((m) => m.calls).reduce((a, b) => (a as number) + (b as number), 0)).to.equal(3);
      expect(report.totals.month.calls).to.equal(3);
      expect(report.keys).to.have.length(1);
      expect(report.keys[0]?.quota).to.deep.equal({ daily: 1000, monthly: 20000 });
      expect(report.tiers.find((t) => t.name === 'free')).to.deep.include({ rate: 1, daily: 1000, monthly: 20000, archive: false });
      expect(report.tiers.find((t) => t.name === 'growth')?.daily).to.equal(null);
      expect(report.series.days).to.have.length(30);
      expect(report.series.days.at(-1)).to.equal('2026-07-14');
      expect(report.series.chains.map((c) => [c.chain, c.calls.at(-1)])).to.deep.equal([
        ['hub-rest', 1],
        ['l1', 2],
      ]);
      expect(report.series.limited.at(-1)).to.equal(1);

      // The account total is every key's usage added up.
      const all = (await acme.get('/usage')).json as { totals: { today: { calls: number } } };
      const earlier =
        (before.json as { totals: { today: { calls: number } }; window: { today: string } }).window.today === '2026-07-14'
          ? (before.json as { totals: { today: { calls: number } } }).totals.today.calls
          : 0;
      expect(all.totals.today.calls).to.equal(earlier + 3);
      clock = present;
    });
  });

  describe('isolation between accounts', () => {
    it('shows another account none of these keys and refuses to touch them with 404', async () => {
      const acme = await signedIn('acme');
      const created = await acme.post('/keys', { tier: 'growth', label: 'private' });
      const key = created.json.key as string;
      const { id, prefix } = created.json.record as { id: string; prefix: string };

      const globex = await signedIn('globex');
      const list = await globex.get('/keys');
      expect(list.status).to.equal(200);
      expect(list.text).to.not.contain(id).and.not.contain(prefix);
      for (const res of [
        await globex.post(`/keys/${id}/rotate`),
        await globex.post(`/keys/${id}/revoke`),
        await globex.get(`/usage?key=${id}`),
        await globex.post(`/keys/${prefix}/revoke`),
      ]) {
        expect(res.status).to.equal(404);
        expect(errorCode(res)).to.equal('KEY_NOT_FOUND');
      }
      const usage = await globex.get('/usage');
      expect(usage.text).to.not.contain(id);
      expect((await call(key)).status).to.equal(200);
      // A tier acme may use is not globex's to pick.
      expect((await globex.post('/keys', { tier: 'growth' })).status).to.equal(400);
    });
  });

  describe('CSRF', () => {
    it('refuses changes without the session’s token, with a wrong one, or from another origin', async () => {
      const acme = await signedIn('acme');
      const count = async (): Promise<number> => ((await acme.get('/keys')).json.keys as unknown[]).length;
      const n = await count();
      const refusals = [
        await acme.post('/keys', { tier: 'free' }, { csrf: null }),
        await acme.post('/keys', { tier: 'free' }, { csrf: 'not-the-token' }),
        await acme.post('/keys', { tier: 'free' }, { origin: 'http://evil.example' }),
        await acme.post('/keys', { tier: 'free' }, { origin: null }),
        await acme.post('/keys', { tier: 'free' }, { origin: null, headers: { 'sec-fetch-site': 'cross-site' } }),
        await acme.post('/keys', { tier: 'free' }, { headers: { 'sec-fetch-site': 'same-site' } }),
        await acme.post('/signout', undefined, { csrf: null }),
      ];
      for (const res of refusals) {
        expect(res.status, res.text).to.equal(403);
        expect(errorCode(res)).to.equal('CSRF_REFUSED');
      }
      expect(await count()).to.equal(n);
      expect((await acme.get('/session')).status).to.equal(200);
      // The same request from the page is accepted.
      expect((await acme.post('/keys', { tier: 'free' }, { headers: { 'sec-fetch-site': 'same-origin' } })).status).to.equal(201);
    });

    it('refuses a cross-origin sign-in (login CSRF) without using up the token', async () => {
      const token = await tokenFor(stack.gateway, 'acme');
      const client = new DashboardClient(origin);
      const res = await client.post('/signin', { token }, { origin: 'http://evil.example' });
      expect(res.status).to.equal(403);
      expect(errorCode(res)).to.equal('CSRF_REFUSED');
      expect((await client.signIn(token)).status).to.equal(200);
    });

    it('never changes anything on GET', async () => {
      const acme = await signedIn('acme');
      const created = await acme.post('/keys', { tier: 'growth' });
      const id = (created.json.record as { id: string }).id;
      expect((await acme.get(`/keys/${id}/revoke`)).status).to.equal(405);
      expect((await call(created.json.key as string)).status).to.equal(200);
    });
  });

  describe('endpoints', () => {
    it('lists every chain endpoint with a sample request that answers with the key', async () => {
      const acme = await signedIn('acme');
      const key = (await acme.post('/keys', { tier: 'growth' })).json.key as string;
      const res = await acme.get('/endpoints');
      const endpoints = res.json.endpoints as Array<{
        chain: string;
        plugin: string;
        url: string;
        ws?: string;
        sample?: { method: string; path: string; body?: string };
      }>;
      expect(endpoints.map((e) => e.chain)).to.deep.equal(stack.gateway.runtimes().map((r) => r.name));
      for (const e of endpoints) {
        expect(e.url).to.equal(`${stack.gateway.url}${stack.gateway.config.chains[e.chain]?.route.path}`);
        const sample = e.sample as { method: string; path: string; body?: string };
        const url = `${e.url}${sample.path === '/' ? '' : sample.path}`;
        const answer = sample.method === 'GET' ? await get(url, { apikey: key }) : await rpc(url, sample.body, { apikey: key });
        expect(answer.status, `${e.chain}: ${answer.text}`).to.equal(200);
        expect(answer.json, e.chain).to.not.have.property('error');
        // WebSocket-serving endpoints list their ws:// URL, and the sample answers there too.
        if (e.plugin !== 'evm' && e.plugin !== 'objectx') {
          expect(e.ws, e.chain).to.equal(undefined);
          continue;
        }
        expect(e.ws, e.chain).to.equal(e.url.replace(/^http/, 'ws'));
        const socket = new WebSocket(e.ws as string, { headers: { apikey: key } });
        const reply = await new Promise<string>((resolve, reject) => {
          socket.once('open', () => socket.send(sample.body as string));
          socket.once('message', (data: Buffer) => resolve(data.toString()));
          socket.once('error', reject);
        });
        socket.close();
        expect(JSON.parse(reply), `${e.chain}: ${reply}`).to.have.property('result');
      }
    });
  });

  describe('operator', () => {
    it('signs in with the admin token only, into its own session', async () => {
      const op = new DashboardClient(origin, '/dashboard/operator/api');
      expect((await op.signIn('wrong-token-wrong-token')).status).to.equal(401);
      const acme = await signedIn('acme');
      const borrowed = new DashboardClient(origin, '/dashboard/operator/api');
      for (const [k, v] of acme.cookies) borrowed.cookies.set(k, v);
      expect((await borrowed.get('/accounts')).status).to.equal(401);
      const res = await op.signIn(ADMIN_TOKEN);
      expect(res.status).to.equal(200);
      expect(op.setCookies.at(-1)).to.match(
        /^nr_operator=[A-Za-z0-9_-]{43}; Path=\/dashboard\/operator; Max-Age=43200; HttpOnly; SameSite=Strict$/,
      );
      // An operator session is no account session.
      const asAccount = new DashboardClient(origin);
      asAccount.cookies.set('nr_session', op.cookies.get('nr_operator') as string);
      expect((await asAccount.get('/session')).status).to.equal(401);
    });

    it('lists every account with its keys and usage, and revokes any key at once', async () => {
      const acme = await signedIn('acme');
      const created = await acme.post('/keys', { tier: 'growth', label: 'watched' });
      const key = created.json.key as string;
      const id = (created.json.record as { id: string }).id;
      for (let i = 0; i < 2; i++) expect((await call(key)).status).to.equal(200);
      await stack.gateway.flushUsage();

      const op = new DashboardClient(origin, '/dashboard/operator/api');
      await op.signIn(ADMIN_TOKEN);
      const list = await op.get('/accounts');
      expect(list.status).to.equal(200);
      expect(list.text).to.not.contain(key);
      const accounts = list.json.accounts as Array<{
        name: string;
        state: string;
        keys: Array<{ id: string; usage: { today: { calls: number } } }>;
      }>;
      expect(accounts.map((a) => a.name)).to.include.members(['acme', 'globex', 'initech']);
      expect(accounts.find((a) => a.name === 'initech')?.state).to.equal('disabled');
      const watched = accounts.find((a) => a.name === 'acme')?.keys.find((k) => k.id === id);
      expect(watched?.usage.today.calls).to.equal(2);

      expect((await op.post(`/keys/${id}/revoke`, undefined, { csrf: null })).status).to.equal(403);
      const revoked = await op.post(`/keys/${id}/revoke`);
      expect(revoked.status).to.equal(200);
      expect((await call(key)).status).to.equal(401);
      expect((await op.post('/keys/key_nosuchkey00/revoke')).status).to.equal(404);
    });
  });
});

describe('dashboard on its own port', function () {
  this.timeout(30_000);
  let stack: Stack;

  before(async () => {
    stack = await startStack({ dashboardYaml: '{ enabled: true, port: 0, publicUrl: "https://dash.example.com" }' });
  });
  after(() => stack.close());

  it('serves only the dashboard there, and nothing of it on the admin listener', async () => {
    const own = new URL(stack.gateway.dashboardUrl);
    expect(own.origin).to.equal('https://dash.example.com');
    const base = stack.gateway.dashboardListenUrl;
    expect(base).to.not.equal(stack.gateway.adminUrl);
    expect((await get(`${base}/dashboard`)).status).to.equal(200);
    expect((await get(`${base}/metrics`)).status).to.equal(404);
    expect((await get(`${base}/admin/keys`)).status).to.equal(404);
    const root = await fetch(`${base}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).to.deep.equal([302, '/dashboard']);
    expect((await get(stack.admin('/dashboard'))).status).to.equal(404);
    expect((await get(stack.admin('/metrics'))).status).to.equal(200);
  });

  it('marks cookies Secure when the public URL is https, and takes that origin', async () => {
    const base = stack.gateway.dashboardListenUrl;
    await stack.gateway.accounts.create({ name: 'acme' });
    const client = new DashboardClient(base);
    const res = await client.post('/signin', { token: await tokenFor(stack.gateway, 'acme') }, { origin: 'https://dash.example.com' });
    expect(res.status, res.text).to.equal(200);
    expect(client.setCookies[0]).to.match(/; HttpOnly; SameSite=Strict; Secure$/);
  });

  it('keeps the operator view closed without an admin token', async () => {
    const base = stack.gateway.dashboardListenUrl;
    const op = new DashboardClient(base, '/dashboard/operator/api');
    for (const res of [await op.get('/accounts'), await op.signIn('anything-at-all-anything')]) {
      expect(res.status).to.equal(404);
      expect(errorCode(res)).to.equal('OPERATOR_CLOSED');
    }
  });
});

describe('dashboard on one record with the Redis hot state', function () {
  this.timeout(30_000);
  const prefix = testPrefix();
  let stack: Stack;
  let other: Gateway;

  before(async () => {
    stack = await startStack({
      dashboardYaml: '{ enabled: true }',
      hotYaml: redisHot(prefix, 'timeoutMs: 500'),
    });
    other = await stack.startAnother();
  });
  after(async () => {
    await stack.close();
    await deleteUnderPrefix(prefix);
  });

  it('signs in on one instance, works on the other, and a token works once across both', async () => {
    const a = new URL(stack.gateway.dashboardUrl).origin;
    const b = new URL(other.dashboardUrl).origin;
    await other.accounts.create({ name: 'acme', tiers: 'enterprise' });
    const token = await tokenFor(other, 'acme');
    const onA = new DashboardClient(a);
    expect((await onA.signIn(token)).status).to.equal(200);
    expect((await new DashboardClient(b).signIn(token)).status).to.equal(401);

    // The same session, presented to the other instance (as a shared hostname would).
    const onB = new DashboardClient(b);
    for (const [k, v] of onA.cookies) onB.cookies.set(k, v);
    onB.csrf = onA.csrf;
    const created = await onB.post('/keys', { label: 'shared' });
    expect(created.status, created.text).to.equal(201);
    const key = created.json.key as string;
    expect((await rpc(`${stack.gateway.url}/l1`, BLOCK_NUMBER, { apikey: key })).status).to.equal(200);
    const listed = await onA.get('/keys');
    expect(listed.text).to.contain((created.json.record as { id: string }).id);

    // Sessions are the record's (one file both instances read), kept by digest.
    const record = (await recordBytes(sqlitePath(stack.gateway.config.store.record))).toString('latin1');
    expect(record).to.not.contain(onA.cookies.get('nr_session'));
  });
});
