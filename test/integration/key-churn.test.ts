// Limits hold per account, not per key, through the real gateway over HTTP: an
// account that creates, uses and revokes keys in a loop gets its daily quota and its
// rate once, whatever the number of keys (the memory hot state, and the Redis
// one); the revoked keys' usage stays in the account's usage (dashboard and
// operator view). Key changes themselves are paced per account, within a cap on
// active keys, from the dashboard and the admin API alike. Time is a clock the
// tests move.

import { expect } from 'chai';
import { redisHot, rpc, startStack, type Stack } from '../support/harness.js';
import { BLOCK_NUMBER, DashboardClient } from '../support/dashboard-client.js';
import { deleteUnderPrefix, testPrefix } from '../support/redis.js';
import { until } from '../support/until.js';

const ADMIN_TOKEN = 'test-admin-token-0123456789';
const TIERS = `
  quota: { rate: unlimited, daily: 10, monthly: 1000 }
  paced: { rate: 2, burst: 3 }
  enterprise: { rate: unlimited, archive: true }
`;

interface Churned {
  readonly admitted: number;
  readonly refused: Array<{ status: number; code: unknown; retryAfter: string | null }>;
  readonly keys: number;
}

describe('limits per account under key churn', function () {
  this.timeout(60_000);

  for (const store of ['memory', 'redis'] as const) {
    describe(`${store} hot state`, () => {
      const prefix = testPrefix();
      let clock = Date.now();
      let stack: Stack;
      let dashboard: DashboardClient;

      before(async () => {
        stack = await startStack({
          tiers: TIERS,
          adminToken: ADMIN_TOKEN,
          now: () => clock,
          dashboardYaml: '{ enabled: true }',
          // Pacing of key changes has its own test below: here only the limits on calls hold.
          keysYaml: 'changesBurst: 1000',
          hotYaml: store === 'redis' ? redisHot(prefix, 'timeoutMs: 500') : undefined,
        });
        await stack.gateway.accounts.create({ name: 'churner', tiers: 'quota,paced', defaultTier: 'quota' });
      });
      /** Move the clock (days at a time: sessions end) and sign in afresh. */
      async function at(ms: number): Promise<void> {
        clock = ms;
        dashboard = new DashboardClient(new URL(stack.gateway.dashboardUrl).origin);
        const signedIn = await dashboard.signIn((await stack.gateway.accounts.issueToken('churner')).token);
        expect(signedIn.status, signedIn.text).to.equal(200);
      }
      after(async () => {
        await stack.close();
        if (store === 'redis') await deleteUnderPrefix(prefix);
      });

      /** Create a key in the dashboard, call with it until refused (at most `calls`), revoke it; `rounds` times. */
      async function churn(tier: string, rounds: number, calls: number): Promise<Churned> {
        let admitted = 0;
        const refused: Churned['refused'] = [];
        for (let i = 0; i < rounds; i++) {
          const created = await dashboard.post('/keys', { tier, label: `churn ${i}` });
          expect(created.status, created.text).to.equal(201);
          const key = created.json.key as string;
          for (let c = 0; c < calls; c++) {
            const res = await rpc(stack.url('/l1'), BLOCK_NUMBER, { apikey: key });
            if (res.status === 200) admitted++;
            else {
              refused.push({
                status: res.status,
                code: (res.json as { error?: { code?: unknown } }).error?.code,
                retryAfter: res.headers.get('retry-after'),
              });
              break;
            }
          }
          const revoked = await dashboard.post(`/keys/${(created.json.record as { id: string }).id}/revoke`);
          expect(revoked.status, revoked.text).to.equal(200);
        }
        return { admitted, refused, keys: rounds };
      }

      it('holds the account to its daily quota however many keys it makes and revokes', async () => {
        await at(Date.UTC(2026, 10, 20, 12, 0, 0));
        const day = await churn('quota', 6, 4);
        expect(day.admitted).to.equal(10);
        expect(day.refused.length).to.be.greaterThan(0);
        for (const r of day.refused) expect(r).to.deep.include({ status: 429, code: -32005 });
        // Retry when the UTC day ends: 12 hours from the clock's noon.
        expect(day.refused[0]?.retryAfter).to.equal(String(12 * 3600));
        // The next day the account has its quota again, once.
        await at(Date.UTC(2026, 10, 21, 12, 0, 0));
        expect((await churn('quota', 4, 4)).admitted).to.equal(10);
      });

      it('holds the account to its rate: new keys share the burst and the pace', async () => {
        await at(Date.UTC(2026, 10, 22, 12, 0, 0));
        const burst = await churn('paced', 4, 3);
        expect(burst.admitted).to.equal(3);
        expect(burst.refused[0]).to.deep.include({ status: 429, code: -32005, retryAfter: '1' });
        // Half a second later: room for exactly one call (2/s), whichever fresh key makes it.
        clock += 500;
        expect((await churn('paced', 3, 3)).admitted).to.equal(1);
      });

      it('keeps revoked keys’ usage in the account’s usage, in the dashboard and the operator view', async () => {
        await at(Date.UTC(2026, 10, 21, 18, 0, 0));
        type Report = {
          totals: { today: { calls: number } };
          keys: Array<{ state: string; today: { calls: number } }>;
          byTier: Array<{ tier: string; today: { calls: number; limited: number }; quota: { daily: number | null } }>;
        };
        // Usage history is written every usage.flushInterval: now, here.
        await stack.gateway.flushUsage();
        let report: Report | undefined;
        await until(
          async () => {
            const usage = await dashboard.get('/usage');
            expect(usage.status).to.equal(200);
            report = usage.json as Report;
            return report.totals.today.calls >= 10;
          },
          { what: 'the usage is written', everyMs: 50 },
        );
        if (report === undefined) throw new Error('no usage report');
        // The day of the second churn: 10 calls, every one on a key revoked since.
        expect(report.totals.today.calls).to.equal(10);
        expect(report.keys.every((k) => k.state === 'revoked')).to.equal(true);
        expect(report.keys.reduce((n, k) => n + k.today.calls, 0)).to.equal(10);
        const quota = report.byTier.find((t) => t.tier === 'quota');
        expect(quota).to.deep.include({ quota: { daily: 10, monthly: 1000 } });
        expect(quota?.today.calls).to.equal(10);
        expect(quota?.today.limited).to.be.greaterThan(0);

        const op = new DashboardClient(new URL(stack.gateway.dashboardUrl).origin, '/dashboard/operator/api');
        expect((await op.signIn(ADMIN_TOKEN)).status).to.equal(200);
        const accounts = (await op.get('/accounts')).json.accounts as Array<{ name: string; usage: { today: { calls: number } } }>;
        expect(accounts.find((a) => a.name === 'churner')?.usage.today.calls).to.equal(10);
      });
    });
  }

  describe('pacing key changes and capping active keys', () => {
    let clock = Date.UTC(2026, 10, 23, 12, 0, 0);
    let stack: Stack;
    let origin: string;
    const admin = async (path: string, body: unknown = {}) => {
      const res = await fetch(stack.admin(path), {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), json: (await res.json()) as Record<string, unknown> };
    };
    const errorOf = (json: Record<string, unknown>) => json.error as { code: string; message: string };

    before(async () => {
      stack = await startStack({
        tiers: TIERS,
        adminToken: ADMIN_TOKEN,
        now: () => clock,
        dashboardYaml: '{ enabled: true }',
        keysYaml: 'maxActivePerAccount: 3, changesPerHour: 60, changesBurst: 5',
      });
      origin = new URL(stack.gateway.dashboardUrl).origin;
      await stack.gateway.accounts.create({ name: 'capped', tiers: 'quota', defaultTier: 'quota' });
    });
    after(() => stack.close());

    it('refuses a key past the cap with 400, and changes past the pace with 429 and Retry-After, in the dashboard and the admin API', async () => {
      const dash = new DashboardClient(origin);
      expect((await dash.signIn((await stack.gateway.accounts.issueToken('capped')).token)).status).to.equal(200);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const created = await dash.post('/keys', { label: `k${i}` });
        expect(created.status, created.text).to.equal(201);
        ids.push((created.json.record as { id: string }).id);
      }
      // The cap: refused with the fix, and a refusal costs nothing against the pace.
      const over = await dash.post('/keys', {});
      expect(over.status).to.equal(400);
      expect(errorOf(over.json)).to.deep.equal({ code: 'INVALID_INPUT', message: 'an account may hold 3 active keys: revoke one first' });
      const overApi = await admin('/admin/keys', { account: 'capped', tier: 'quota' });
      expect(overApi.status).to.equal(400);
      expect(errorOf(overApi.json).message).to.equal('an account may hold 3 active keys: revoke one first');
      // Change 4 (a revocation) and 5 (a rotation through the admin API) use up the burst of 5.
      expect((await dash.post(`/keys/${ids[0] as string}/revoke`)).status).to.equal(200);
      expect((await admin(`/admin/keys/${ids[1] as string}/rotate`)).status).to.equal(200);
      // The account's next change is refused wherever it comes from, until a minute has passed (60 an hour).
      const paced = await dash.post('/keys', {});
      expect(paced.status).to.equal(429);
      expect(paced.headers.get('retry-after')).to.equal('60');
      expect(errorOf(paced.json)).to.deep.equal({
        code: 'TOO_MANY_KEY_CHANGES',
        message: 'too many key changes for this account (at most 60 an hour): try again in 60 s',
      });
      const pacedApi = await admin('/admin/keys', { account: 'capped', tier: 'quota' });
      expect(pacedApi).to.deep.include({ status: 429, retryAfter: '60' });
      expect(errorOf(pacedApi.json).code).to.equal('TOO_MANY_KEY_CHANGES');
      expect((await admin(`/admin/keys/${ids[2] as string}/revoke`)).status).to.equal(429);
      expect((await dash.post(`/keys/${ids[2] as string}/rotate`)).status).to.equal(429);
      // Nothing was changed by the refused attempts: two active keys, one revoked.
      const states = ((await dash.get('/keys')).json.keys as Array<{ state: string }>).map((k) => k.state).sort();
      expect(states).to.deep.equal(['active', 'active', 'revoked']);
      // Another account has its own pace.
      expect((await admin('/admin/keys', { account: 'someone-else', tier: 'quota' })).status).to.equal(201);
      // A minute later, one more change.
      clock += 60_000;
      expect((await dash.post('/keys', {})).status).to.equal(201);
      expect((await dash.post('/keys', {})).status).to.equal(400);
      expect((await dash.post(`/keys/${ids[2] as string}/revoke`)).status).to.equal(429);
    });

    it('lets the operator revoke at once however many changes the account made (the operator view and the CLI are not paced)', async () => {
      const keys = (await stack.gateway.keys.list({ account: 'capped' })).filter((k) => k.revokedAt === undefined);
      const op = new DashboardClient(origin, '/dashboard/operator/api');
      expect((await op.signIn(ADMIN_TOKEN)).status).to.equal(200);
      for (const k of keys) expect((await op.post(`/keys/${k.id}/revoke`)).status).to.equal(200);
    });
  });
});
