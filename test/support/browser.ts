// A real browser for tests: Debian's Chromium, headless, driven by playwright-core (no
// browser download). CI installs Chromium (.ci/run); a machine without it fails the
// browser tests, never skips them. Each page gets a context of its own (its own
// cookies); script errors and CSP violations seen on any page are kept in `problems`.

import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import type { Gateway } from '../../src/app/gateway.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const VIEWPORT = { width: 1100, height: 900 };

export class TestBrowser {
  /** Script errors and CSP violations seen on any page opened by `page()`. */
  readonly problems: string[] = [];
  private readonly contexts: BrowserContext[] = [];

  private constructor(private readonly browser: Browser) {}

  static async launch(): Promise<TestBrowser> {
    return new TestBrowser(await chromium.launch({ executablePath: CHROMIUM, args: ARGS }));
  }

  /** A context of its own, closed by `close()`. */
  async context(options: BrowserContextOptions = {}): Promise<BrowserContext> {
    const context = await this.browser.newContext(options);
    this.contexts.push(context);
    return context;
  }

  /** A page in a context of its own; `origin` may use the clipboard. */
  async page(origin: string, viewport = VIEWPORT): Promise<Page> {
    const context = await this.context({ viewport });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await context.newPage();
    page.on('pageerror', (e) => this.problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) this.problems.push(`console: ${m.text()}`);
    });
    return page;
  }

  /** A dashboard page signed in as `account` through a one-time link (its landing page, then a click). */
  async signedIn(gateway: Gateway, account: string, viewport = VIEWPORT): Promise<Page> {
    const origin = gateway.dashboardListenUrl;
    const page = await this.page(origin, viewport);
    const { token } = await gateway.accounts.issueToken(account);
    await page.goto(`${origin}/dashboard/signin?token=${token}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#keys-view').waitFor({ state: 'visible' });
    return page;
  }

  async close(): Promise<void> {
    for (const c of this.contexts) await c.close().catch(() => undefined);
    await this.browser.close();
  }
}
