// The dashboard in a real browser: Debian's Chromium, headless, driven by
// playwright-core (no browser download), against a real gateway, devnet nodes and
// a SQLite record. One browser for the file; each test opens its own context (its
// own cookies). Screenshots of each main view go to test-output/screenshots/.
// CI installs Chromium (.ci/run); a machine without it fails here, never skips.
// Callbacks given to page.evaluate run in the page: they see the DOM's types.
/// <reference lib="dom" />
/// <reference lib="dom.iterable" />

import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { BLOCK_NUMBER, DASHBOARD_TIERS } from '../support/dashboard-client.js';
import { TestBrowser } from '../support/browser.js';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { DAY_MS, dayRows } from '../../src/quota/usage-report.js';

const SHOTS = fileURLToPath(new URL('../../test-output/screenshots/', import.meta.url));
const ADMIN_TOKEN = 'browser-admin-token-0123456789';
const run = promisify(execFile);

describe('dashboard in a browser', function () {
  this.timeout(60_000);
  let stack: Stack;
  let browser: TestBrowser;
  let origin: string;
  let clock = Date.now();

  const call = (key: string, path = '/l1', body: unknown = BLOCK_NUMBER) => rpc(stack.url(path), body, { apikey: key });

  const open = (): Promise<Page> => browser.page(origin);
  const signedIn = (account: string, viewport?: { width: number; height: number }): Promise<Page> =>
    browser.signedIn(stack.gateway, account, viewport);

  /** Create a key with the form; returns the value shown once and the record id. */
  async function createKey(
    page: Page,
    label: string,
    tier: string,
    narrow: { chains?: string[]; archive?: false } = {},
  ): Promise<{ value: string; id: string }> {
    await page.goto(`${origin}/dashboard#keys`);
    await page.locator('#keys-view').waitFor({ state: 'visible' });
    // A key still shown from before is hidden first, so the value read below is the new one.
    if (await page.locator('#secret-box').isVisible()) await page.getByRole('button', { name: 'I have stored it: hide the key' }).click();
    await page.getByLabel('Label', { exact: true }).fill(label);
    await page.getByLabel('Tier', { exact: true }).selectOption(tier);
    if (narrow.chains !== undefined) {
      await page.getByLabel('All chains, including ones added later').uncheck();
      for (const box of await page.locator('#chain-list input').all()) {
        if (!narrow.chains.includes((await box.getAttribute('value')) as string)) await box.uncheck();
      }
    }
    if (narrow.archive === false) await page.getByLabel('Archive access (reads of old state)').uncheck();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#secret-box').waitFor({ state: 'visible' });
    const value = (await page.locator('#secret-text').textContent()) as string;
    const row = page.locator('#keys-table tbody tr', { hasText: label });
    await row.waitFor();
    return { value, id: (await row.getAttribute('data-key-id')) as string };
  }

  async function noSideways(page: Page): Promise<[number, number]> {
    return page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  }

  before(async () => {
    await mkdir(SHOTS, { recursive: true });
    stack = await startStack({
      tiers: DASHBOARD_TIERS,
      adminToken: ADMIN_TOKEN,
      now: () => clock,
      dashboardYaml: '{ enabled: true }',
      // Many key changes for one account here: pacing has its own tests (key-churn.test.ts).
      keysYaml: 'rotationGraceSeconds: 600, changesBurst: 1000',
    });
    origin = stack.gateway.dashboardListenUrl;
    await stack.gateway.accounts.create({ name: 'acme', tiers: 'free,growth', defaultTier: 'growth' });
    await stack.gateway.accounts.create({ name: 'globex', tiers: 'free' });
    browser = await TestBrowser.launch();
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
  });
  afterEach(() => {
    // Script errors and CSP violations seen on any page: there must be none.
    expect(browser.problems, browser.problems.join('\n')).to.deep.equal([]);
  });

  it('signs in with a one-time link: the visit shows a button, the click signs in, the link then stops working', async () => {
    const page = await open();
    const { token } = await stack.gateway.accounts.issueToken('acme');
    const link = `${origin}/dashboard/signin?token=${token}`;
    await page.goto(link);
    const button = page.getByRole('button', { name: 'Sign in' });
    await button.waitFor();
    // The token leaves the address bar at once (history, screenshots, shoulder-surfing).
    expect(page.url()).to.equal(`${origin}/dashboard/signin`);
    await page.screenshot({ path: `${SHOTS}signin.png` });
    await button.click();
    await page.locator('#keys-view').waitFor({ state: 'visible' });
    expect(await page.locator('#who').textContent()).to.equal('acme');
    const [cookie] = await page.context().cookies();
    expect(cookie).to.deep.include({ name: 'nr_session', path: '/dashboard', httpOnly: true, sameSite: 'Strict', secure: false });
    expect(await page.evaluate(() => document.cookie)).to.equal('');

    const again = await open();
    await again.goto(link);
    await again.getByRole('button', { name: 'Sign in' }).click();
    await again.getByText('This sign-in link is invalid, expired or already used').waitFor();
    expect(await again.locator('#app').isHidden()).to.equal(true);
  });

  it('refuses an expired link, and signs out', async () => {
    const page = await open();
    const { token } = await stack.gateway.accounts.issueToken('acme');
    const saved = clock;
    clock += 16 * 60_000;
    await page.goto(`${origin}/dashboard/signin?token=${token}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('invalid, expired or already used').waitFor();
    clock = saved;

    const signed = await signedIn('acme');
    await signed.getByRole('button', { name: 'Sign out' }).click();
    await signed.getByText('You are signed out.').waitFor();
    await signed.reload();
    await signed.locator('#signin-view').waitFor({ state: 'visible' });
    expect(await signed.locator('#app').isHidden()).to.equal(true);
  });

  it('creates a key shown once, copied by a click, working at once, and gone after a reload', async () => {
    const page = await signedIn('acme');
    const { value, id } = await createKey(page, 'prod', 'growth');
    expect(value).to.match(/^nrk_[A-Za-z0-9]{32}$/);
    expect((await call(value)).status).to.equal(200);
    expect(await page.locator('#secret-box').textContent()).to.contain('it will not be shown again');

    await page.getByRole('button', { name: value }).click();
    await page.locator('#copied').filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(value);
    await page.screenshot({ path: `${SHOTS}keys-new-key.png`, fullPage: true });

    const row = page.locator(`#keys-table tr[data-key-id="${id}"]`);
    expect(await row.textContent())
      .to.contain(`${value.slice(0, 8)}…`)
      .and.contain('prod')
      .and.contain('growth')
      .and.contain('active');
    const stored = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }]));
    expect(stored).to.not.contain(value);

    await page.reload();
    await row.waitFor();
    expect(await page.locator('#secret-box').isHidden()).to.equal(true);
    expect(await page.content()).to.not.contain(value);
    expect(await page.evaluate(() => document.body.innerText)).to.not.contain(value);

    // "Hide" forgets it too, without a reload.
    const second = await createKey(page, 'staging', 'free');
    await page.getByRole('button', { name: 'I have stored it: hide the key' }).click();
    expect(await page.locator('#secret-box').isHidden()).to.equal(true);
    expect(await page.content()).to.not.contain(second.value);
  });

  it('narrows a new key to chosen chains and takes archive away on request, within the tier', async () => {
    const page = await signedIn('acme');
    await page.getByLabel('Tier', { exact: true }).selectOption('free');
    expect(await page.getByLabel('Archive access (reads of old state)').isDisabled()).to.equal(true);
    expect(await page.locator('#archive-note').textContent()).to.contain('The free tier has no archive access');
    await page.getByLabel('Tier', { exact: true }).selectOption('growth');
    expect(await page.getByLabel('Archive access (reads of old state)').isChecked()).to.equal(true);
    const { value } = await createKey(page, 'l1 only', 'growth', { chains: ['l1'] });
    expect((await call(value)).status).to.equal(200);
    expect((await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: value })).status).to.equal(403);
    const old = { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: ['0x00000000000000000000000000000000000000aa', 'earliest'] };
    expect((await call(value, '/l1', old)).status).to.equal(200);
    const noArchive = await createKey(page, 'no archive', 'growth', { archive: false });
    expect((await call(noArchive.value, '/l1', old)).status).to.equal(403);
    expect((await call(noArchive.value)).status).to.equal(200);
  });

  it('rotates after a confirmation: the new value is shown once, the old one works until the grace end shown', async () => {
    const page = await signedIn('acme');
    const { value: old, id } = await createKey(page, 'to rotate', 'growth');
    await page.getByRole('button', { name: 'I have stored it: hide the key' }).click();
    await page.getByRole('button', { name: `Rotate key ${old.slice(0, 8)}` }).click();
    const dialog = page.locator('#confirm-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.textContent()).to.contain(`Rotate key ${old.slice(0, 8)}…?`);
    await dialog.getByRole('button', { name: 'Rotate' }).click();
    await page.locator('#secret-grace').waitFor({ state: 'visible' });
    const fresh = (await page.locator('#secret-text').textContent()) as string;
    expect(fresh).to.match(/^nrk_/).and.not.equal(old);

    const until = (await stack.gateway.store.get(id))?.retired[0]?.until as string;
    expect(await page.locator('#secret-grace time').getAttribute('datetime')).to.equal(until);
    expect(await page.locator('#secret-grace').textContent()).to.contain(`The previous value (${old.slice(0, 8)}…) keeps working until`);
    // The table is drawn again from the API after the secret is shown: wait for that draw.
    const graceCell = page.locator(`#keys-table tr[data-key-id="${id}"] time[datetime="${until}"]`);
    await graceCell.waitFor({ state: 'attached', timeout: 10_000 });
    expect(await graceCell.count()).to.equal(1);

    expect((await call(fresh)).status).to.equal(200);
    expect((await call(old)).status).to.equal(200);
    const saved = clock;
    clock = Date.parse(until) + 1_000;
    expect((await call(old)).status).to.equal(401);
    expect((await call(fresh)).status).to.equal(200);
    clock = saved;
  });

  it('revokes after a confirmation (Cancel keeps the key), and the next call is refused', async () => {
    const page = await signedIn('acme');
    const { value, id } = await createKey(page, 'to revoke', 'growth');
    const revoke = page.getByRole('button', { name: `Revoke key ${value.slice(0, 8)}` });
    await revoke.click();
    const dialog = page.locator('#confirm-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.textContent()).to.contain('This cannot be undone');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await call(value)).status).to.equal(200);

    await revoke.click();
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await page.locator(`#keys-table tr[data-key-id="${id}"] .state-revoked`).waitFor();
    expect((await call(value)).status).to.equal(401);
  });

  it('shows the tier’s limits and usage matching the calls made, with a chart of calls per day and chain', async () => {
    const page = await signedIn('acme');
    const { value, id } = await createKey(page, 'metered', 'free');
    // Tier free allows a burst of 2: the third call at once is refused.
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(value)).status);
    expect(statuses).to.deep.equal([200, 200, 429]);
    clock += 5_000;
    for (let i = 0; i < 2; i++)
      expect((await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: value })).status).to.equal(200);
    // Usage history is written every usage.flushInterval: now, here.
    await stack.gateway.flushUsage();

    await page.goto(`${origin}/dashboard#usage`);
    await page.locator('#usage-view').waitFor({ state: 'visible' });
    await page.getByLabel('Show usage of').selectOption(id);
    await page.locator('#quota-table tbody tr').first().waitFor();
    await page.waitForFunction(
      (keyId) =>
        document.querySelectorAll(`#quota-table tbody tr`).length === 1 &&
        document.querySelector(`#quota-table tr[data-key-id="${keyId}"]`) !== null,
      id,
    );
    expect(await page.locator('#usage-today').textContent()).to.equal('4');
    expect(await page.locator('#usage-month').textContent()).to.equal('4');
    expect(await page.locator('#usage-limited').textContent()).to.equal('1');
    const quota = page.locator(`#quota-table tr[data-key-id="${id}"]`);
    expect(await quota.textContent())
      .to.contain('4 of 1,000')
      .and.contain('4 of 20,000');
    const today = page.locator('#chart-table tbody tr').first();
    expect(await today.locator('td[data-chain="l1"]').textContent()).to.equal('2');
    expect(await today.locator('td[data-chain="hub-rest"]').textContent()).to.equal('2');
    expect(await today.locator('td').last().textContent()).to.equal('1');
    expect(await page.locator('#chart svg.chart-svg rect').count()).to.equal(2);
    expect(await page.locator('#chart svg desc').textContent()).to.contain('4 calls in the last 30 days');
    expect(await page.locator('#chart .legend').textContent())
      .to.contain('hub-rest')
      .and.contain('l1');
    // Calls, failed, error rate, refused, then p50, p95, p99 as bucket bounds.
    const methodCells = await page.locator('#methods-table tbody tr[data-method="eth_blockNumber"] td').allTextContents();
    expect(methodCells.slice(0, 4)).to.deep.equal(['2', '0', '0.0 %', '1']);
    for (const p of methodCells.slice(4)) expect(p).to.match(/^≤ [\d,.]+ ms$/);
    expect(await page.locator('#usage-lag').textContent()).to.contain('every 5 s');
    const free = page.locator('#limits-table tr[data-tier="free"]');
    expect(await free.textContent())
      .to.contain('1,000')
      .and.contain('20,000');

    // All keys together: every key of the account, added up from the record's usage history.
    await page.getByLabel('Show usage of').selectOption('');
    await page.waitForFunction(() => document.querySelectorAll('#quota-table tbody tr').length > 1);
    let expected = 0;
    for (const k of await stack.gateway.accounts.keysOf(await stack.gateway.accounts.find('acme'))) {
      const from = Date.parse(`${new Date(clock).toISOString().slice(0, 10)}T00:00:00Z`);
      const rows = await stack.gateway.services.bundle.history.read({ keyId: k.id, from, to: from + DAY_MS, by: ['outcome'], step: 'day' });
      expected += dayRows(rows).reduce((n, r) => n + r.calls, 0);
    }
    expect(await page.locator('#usage-today').textContent()).to.equal(String(expected));
    await page.screenshot({ path: `${SHOTS}usage.png`, fullPage: true });
  });

  it('lists every endpoint with a copyable curl line that shows the chosen key’s prefix, never the key', async () => {
    const page = await signedIn('acme');
    const { value, id } = await createKey(page, 'for curl', 'growth');
    await page.getByRole('button', { name: 'I have stored it: hide the key' }).click();
    await page.goto(`${origin}/dashboard#endpoints`);
    await page.getByLabel('Key for the examples').selectOption(id);
    const items = page.locator('#endpoint-list li');
    await page.waitForFunction(
      (prefix) => document.querySelector('#endpoint-list pre')?.textContent?.includes(prefix) === true,
      value.slice(0, 8),
    );
    expect(await items.count()).to.equal(stack.gateway.runtimes().length);
    expect(await page.content()).to.not.contain(value);
    const first = items.first();
    const line = (await first.locator('pre').textContent()) as string;
    expect(line)
      .to.contain(`apikey: ${value.slice(0, 8)}…`)
      .and.contain(`${stack.gateway.url}/l1`);
    expect(await first.locator('code.url').allTextContents()).to.deep.equal([
      `${stack.gateway.url}/l1`,
      `${stack.gateway.url.replace(/^http/, 'ws')}/l1`,
    ]);
    expect(await page.locator('#endpoint-list li[data-chain="hub-rest"] code.url').count()).to.equal(1);
    await first.getByRole('button', { name: 'Copy the curl line for l1' }).click();
    await page.locator('#endpoint-status').filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(line);
    // Put the key in the placeholder's place, as the page says, and every line answers.
    for (const li of await items.all()) {
      const text = ((await li.locator('pre').textContent()) as string).replace(`${value.slice(0, 8)}…`, value);
      const { stdout } = await run('bash', ['-c', text]);
      expect(JSON.parse(stdout), text).to.not.have.property('error');
    }
    await page.screenshot({ path: `${SHOTS}endpoints.png`, fullPage: true });

    // A key narrowed to l1 and without archive is told where it would be refused.
    const narrow = await createKey(page, 'narrow', 'growth', { chains: ['l1', 'hub-rest-archive'], archive: false });
    await page.getByRole('button', { name: 'I have stored it: hide the key' }).click();
    await page.goto(`${origin}/dashboard#endpoints`);
    await page.getByLabel('Key for the examples').selectOption(narrow.id);
    await page.locator('#endpoint-list li[data-chain="objectx"] .warning').waitFor();
    expect(await page.locator('#endpoint-list li[data-chain="objectx"] .warning').textContent()).to.equal(
      'This key is not permitted on this chain.',
    );
    expect(await page.locator('#endpoint-list li[data-chain="hub-rest-archive"] .warning').textContent()).to.contain('no archive access');
    expect(await page.locator('#endpoint-list li[data-chain="l1"] .warning').count()).to.equal(0);
  });

  it('keeps another account away from these keys, on the page and through the API', async () => {
    const acme = await signedIn('acme');
    const { value, id } = await createKey(acme, 'acme secret', 'growth');
    const globex = await signedIn('globex');
    await globex.locator('#keys-empty').waitFor({ state: 'visible' });
    expect(await globex.content()).to.not.contain(value.slice(0, 8));
    const statuses = await globex.evaluate(async (keyId) => {
      const session = (await (await fetch('/dashboard/api/session')).json()) as { csrfToken: string };
      const headers = { 'x-csrf-token': session.csrfToken };
      return [
        (await fetch(`/dashboard/api/keys/${keyId}/rotate`, { method: 'POST', headers })).status,
        (await fetch(`/dashboard/api/keys/${keyId}/revoke`, { method: 'POST', headers })).status,
        (await fetch(`/dashboard/api/usage?key=${keyId}`)).status,
        ((await (await fetch('/dashboard/api/keys')).json()) as { keys: unknown[] }).keys.length,
      ];
    }, id);
    expect(statuses).to.deep.equal([404, 404, 404, 0]);
    expect((await call(value)).status).to.equal(200);
  });

  it('refuses forged changes: no CSRF token, a wrong one, or a form posted from another site', async () => {
    const page = await signedIn('acme');
    const before = (await stack.gateway.store.list()).length;
    const statuses = await page.evaluate(async () => {
      const body = JSON.stringify({ tier: 'growth' });
      const headers = { 'content-type': 'application/json' };
      return [
        (await fetch('/dashboard/api/keys', { method: 'POST', headers, body })).status,
        (await fetch('/dashboard/api/keys', { method: 'POST', headers: { ...headers, 'x-csrf-token': 'forged' }, body })).status,
      ];
    });
    expect(statuses).to.deep.equal([403, 403]);

    // Another site's page posts a form at the dashboard API with this browser's cookies.
    const target = `${origin}/dashboard/api/keys`;
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<form method="POST" action="${target}" enctype="text/plain"><input name='{"tier":"growth","x":"' value='"}'></form>` +
          '<script>document.forms[0].submit()</script>',
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const answer = page.waitForResponse((r) => r.url() === target);
      await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      const res = await answer;
      expect(res.status()).to.equal(403);
      expect(await res.text()).to.contain('CSRF_REFUSED');
    } finally {
      evil.close();
    }
    expect((await stack.gateway.store.list()).length).to.equal(before);
  });

  it('fits a phone: no sideways scrolling on any view at 375 px', async () => {
    const page = await signedIn('acme', { width: 375, height: 740 });
    await createKey(page, 'phone key with a rather long label to wrap', 'growth');
    expect(await noSideways(page)).to.deep.equal([375, 375]);
    await page.screenshot({ path: `${SHOTS}phone-keys.png`, fullPage: true });
    for (const view of ['usage', 'endpoints']) {
      await page.goto(`${origin}/dashboard#${view}`);
      await page.locator(`#${view}-view`).waitFor({ state: 'visible' });
      await page.waitForLoadState('networkidle');
      const [scroll, width] = await noSideways(page);
      expect(scroll, view).to.be.at.most(width);
    }
    await page.screenshot({ path: `${SHOTS}phone-endpoints.png`, fullPage: true });
  });

  it('labels every control, on every view', async () => {
    const page = await signedIn('acme');
    await createKey(page, 'labelled', 'growth');
    for (const view of ['keys', 'usage', 'endpoints']) {
      await page.goto(`${origin}/dashboard#${view}`);
      await page.waitForLoadState('networkidle');
      const unlabelled = await page.evaluate(() =>
        [...document.querySelectorAll('input, select, button')]
          .filter((el) => (el as HTMLElement).offsetParent !== null)
          .filter((el) => {
            const labels = (el as HTMLInputElement).labels;
            const name = el.getAttribute('aria-label') ?? el.getAttribute('aria-labelledby') ?? '';
            return (labels === null || labels.length === 0) && name === '' && (el.textContent ?? '').trim() === '';
          })
          .map((el) => el.outerHTML.slice(0, 80)),
      );
      expect(unlabelled, view).to.deep.equal([]);
    }
  });

  it('operator: signs in with the admin token, sees every account with keys and usage, and revokes a key at once', async () => {
    const acme = await signedIn('acme');
    const { value, id } = await createKey(acme, 'operator target', 'growth');
    expect((await call(value)).status).to.equal(200);
    // Usage history is written every usage.flushInterval: now, here.
    await stack.gateway.flushUsage();

    const page = await open();
    await page.goto(`${origin}/dashboard/operator`);
    await page.getByLabel('Admin token').fill('not-the-admin-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Wrong admin token').waitFor();
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#accounts-view').waitFor({ state: 'visible' });
    const names = await page.locator('section.account h2').allTextContents();
    expect(names.map((n) => n.split(' ')[0])).to.include.members(['acme', 'globex']);
    const row = page.locator(`tr[data-key-id="${id}"]`);
    expect(await row.locator('td[data-label="Today"]').textContent()).to.equal('1');
    expect(await page.content()).to.not.contain(value);
    await page.screenshot({ path: `${SHOTS}operator.png`, fullPage: true });

    await row.getByRole('button', { name: `Revoke key ${value.slice(0, 8)}` }).click();
    await page.locator('#confirm-dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.locator(`tr[data-key-id="${id}"] .state-revoked`).waitFor();
    expect((await call(value)).status).to.equal(401);
    // The account sees it too.
    await acme.reload();
    await acme.locator(`#keys-table tr[data-key-id="${id}"] .state-revoked`).waitFor();
  });
});
