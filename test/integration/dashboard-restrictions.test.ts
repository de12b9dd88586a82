// Restrictions in the account dashboard, in a real browser (Debian's Chromium through
// playwright-core, as dashboard-browser.test.ts): a customer sets where a new key may
// be used from, edits it on an existing key, sees mistakes beside the field they are
// in, sees the restrictions in the key list, and gets a browser snippet (fetch and
// viem) for the chosen key and page origin; the gateway applies each change at once.
// Screenshots go to test-output/screenshots/.
/// <reference lib="dom" />

import { expect } from 'chai';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { BLOCK_NUMBER, DASHBOARD_TIERS } from '../support/dashboard-client.js';
import { TestBrowser } from '../support/browser.js';
import { rpc, startStack, type Stack } from '../support/harness.js';

const SHOTS = fileURLToPath(new URL('../../test-output/screenshots/', import.meta.url));
const APP = 'https://app.example.com';

describe('key restrictions in the dashboard, in a browser', function () {
  this.timeout(60_000);
  let stack: Stack;
  let browser: TestBrowser;
  let origin: string;

  const call = (key: string, headers: Record<string, string> = {}) => rpc(stack.url('/l1'), BLOCK_NUMBER, { apikey: key, ...headers });

  const signedIn = (account: string, viewport?: { width: number; height: number }): Promise<Page> =>
    browser.signedIn(stack.gateway, account, viewport);

  before(async () => {
    await mkdir(SHOTS, { recursive: true });
    stack = await startStack({ tiers: DASHBOARD_TIERS, dashboardYaml: '{ enabled: true }', keysYaml: 'changesBurst: 1000' });
    origin = stack.gateway.dashboardListenUrl;
    await stack.gateway.accounts.create({ name: 'acme', tiers: 'free,growth', defaultTier: 'growth' });
    browser = await TestBrowser.launch();
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
  });
  afterEach(() => {
    expect(browser.problems, browser.problems.join('\n')).to.deep.equal([]);
  });

  it('creates a key restricted to an origin: a mistake is shown beside its field, the list shows what is set', async () => {
    const page = await signedIn('acme');
    await page.getByLabel('Label', { exact: true }).fill('web app');
    await page.getByText('Where this key may be used from (optional)').click();
    const origins = page.getByLabel('Allowed origins');
    await origins.fill('app.example.com');
    await page.getByRole('button', { name: 'Create key' }).click();
    const error = page.locator('#create-origins-error');
    await error.filter({ hasText: 'is not an origin' }).waitFor();
    expect(await error.textContent()).to.equal(
      '"app.example.com" is not an origin (like https://app.example.com, http://localhost:5173 or https://*.example.com)',
    );
    expect(await origins.getAttribute('aria-invalid')).to.equal('true');
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal('create-origins');
    await page.screenshot({ path: `${SHOTS}keys-restriction-error.png`, fullPage: true });
    // Nothing was created.
    expect(await page.locator('#keys-table tbody tr').count()).to.equal(0);

    await origins.fill(`${APP}\nhttps://*.example.org`);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#secret-box').waitFor({ state: 'visible' });
    const value = (await page.locator('#secret-text').textContent()) as string;
    expect(await page.locator('#create-origins-error').textContent()).to.equal('');
    const row = page.locator('#keys-table tbody tr', { hasText: 'web app' });
    expect(await row.locator('td[data-label="Restrictions"]').innerText()).to.equal(`Origins: ${APP}, https://*.example.org`);
    expect((await call(value, { origin: APP })).status).to.equal(200);
    expect((await call(value, { origin: 'https://evil.example' })).status).to.equal(403);
  });

  it('edits a key’s restrictions in a dialog: field errors keep it open, saving applies at once, emptying lifts', async () => {
    const page = await signedIn('acme');
    await page.getByLabel('Label', { exact: true }).fill('backend');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#secret-box').waitFor({ state: 'visible' });
    const value = (await page.locator('#secret-text').textContent()) as string;
    await page.getByRole('button', { name: 'I have stored it: hide the key' }).click();
    const row = page.locator('#keys-table tbody tr', { hasText: 'backend' });
    expect(await row.locator('td[data-label="Restrictions"]').innerText()).to.equal('None: works from anywhere');

    await row.getByRole('button', { name: /^Restrict key/ }).click();
    const dialog = page.locator('#restrict-dialog');
    await dialog.waitFor({ state: 'visible' });
    await dialog.getByLabel('Allowed IP addresses and ranges').fill('10.0.0.1/8');
    await dialog.getByLabel('Allowed contracts (EVM)').fill('0x5FbDB2315678afecb367f032d93F642f64180aa3');
    await dialog.getByRole('button', { name: 'Save restrictions' }).click();
    await page.locator('#edit-ips-error').filter({ hasText: 'bits set past its /8 prefix' }).waitFor();
    expect(await dialog.isVisible()).to.equal(true);
    await page.screenshot({ path: `${SHOTS}keys-restrict-dialog.png` });
    // Refused whole: the contracts were not saved either.
    expect((await call(value)).status).to.equal(200);

    await dialog.getByLabel('Allowed IP addresses and ranges').fill('10.0.0.0/8\n2001:db8::/32');
    await dialog.getByRole('button', { name: 'Save restrictions' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await row.locator('td[data-label="Restrictions"]', { hasText: 'Addresses' }).waitFor();
    expect(await row.locator('td[data-label="Restrictions"]').innerText()).to.equal(
      'Addresses: 10.0.0.0/8, 2001:db8::/32\nContracts: 0x5fbdb2315678afecb367f032d93f642f64180aa3',
    );
    expect((await call(value)).status).to.equal(403);
    // The list fits the page: long lists wrap in their cell.
    const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    expect(scroll).to.be.at.most(inner);
    await page.locator('#keys-table').screenshot({ path: `${SHOTS}keys-restrictions-list.png` });

    await row.getByRole('button', { name: /^Restrict key/ }).click();
    expect(await dialog.getByLabel('Allowed IP addresses and ranges').inputValue()).to.equal('10.0.0.0/8\n2001:db8::/32');
    await dialog.getByLabel('Allowed IP addresses and ranges').fill('');
    await dialog.getByLabel('Allowed contracts (EVM)').fill('');
    await dialog.getByRole('button', { name: 'Save restrictions' }).click();
    await row.locator('td[data-label="Restrictions"]', { hasText: 'None: works from anywhere' }).waitFor();
    expect((await call(value)).status).to.equal(200);
  });

  it('shows a browser snippet for the chosen key and origin, and restricts an open key to that origin', async () => {
    const page = await signedIn('acme');
    await page.getByLabel('Label', { exact: true }).fill('dapp');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#secret-box').waitFor({ state: 'visible' });
    const prefix = ((await page.locator('#secret-text').textContent()) as string).slice(0, 8);
    await page.goto(`${origin}/dashboard#endpoints`);
    await page.getByLabel('Key for the examples').selectOption({ label: `${prefix}… dapp` });
    await page.getByLabel('Endpoint', { exact: true }).selectOption('l1');
    const code = page.locator('#snippet-code');
    await code.filter({ hasText: 'createPublicClient' }).waitFor();
    const text = await code.innerText();
    expect(text).to.contain(`const KEY = '${prefix}…'; // your whole key`);
    expect(text).to.contain(`fetch('${stack.url('/l1')}'`);
    expect(text).to.contain("headers: { apikey: KEY, 'content-type': 'application/json' }");
    expect(text).to.contain(`http('${stack.url('/l1')}', { fetchOptions: { headers: { apikey: KEY } } })`);
    // REST endpoints: a GET, and no viem.
    await page.getByLabel('Endpoint', { exact: true }).selectOption('hub-rest');
    expect(await code.innerText()).to.not.contain('viem');

    const note = page.locator('#snippet-note');
    await page.getByLabel("Your page's origin").fill('app.example.com');
    await note.filter({ hasText: 'Not an origin' }).waitFor();
    await page.getByLabel("Your page's origin").fill(APP);
    await note.filter({ hasText: 'accepts calls from any origin' }).waitFor();
    await page.screenshot({ path: `${SHOTS}endpoints-browser-snippet.png`, fullPage: true });
    await note.getByRole('button', { name: `Allow only ${APP}` }).click();
    await note.filter({ hasText: `This key accepts calls from ${APP}; pages on other origins are refused.` }).waitFor();
    const record = (await stack.gateway.store.list({})).find((k) => k.prefix === prefix);
    expect(record?.restrictions).to.deep.equal({ origins: [APP] });
    await page.getByLabel("Your page's origin").fill('https://other.example');
    await note.filter({ hasText: 'does not accept calls from https://other.example' }).waitFor();
  });

  it('works at phone width', async () => {
    const page = await signedIn('acme', { width: 375, height: 800 });
    const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    expect(scroll).to.be.at.most(inner);
    await page
      .locator('#keys-table tbody tr')
      .first()
      .getByRole('button', { name: /^Restrict key/ })
      .click();
    await page.locator('#restrict-dialog').waitFor({ state: 'visible' });
    const [dialogWidth] = await page.evaluate(() => [document.getElementById('restrict-dialog')?.getBoundingClientRect().width ?? 0]);
    expect(dialogWidth).to.be.at.most(375);
    await page.screenshot({ path: `${SHOTS}keys-restrict-phone.png` });
  });
});
