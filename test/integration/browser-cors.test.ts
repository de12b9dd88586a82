// A dApp page in a real browser: Debian's Chromium, headless, driven by
// playwright-core, loads a page from another loopback origin (a tiny static server on
// 127.0.0.1 at another port: origins differ by port) and calls the gateway with fetch
// and with viem's http transport (bundled for the page with esbuild, from the viem in
// node_modules; nothing is downloaded) and a WebSocket. A key allowing that origin
// works; the same key from a third origin, or a key allowing only another origin, is
// refused, which the page sees as a CORS failure. The page reads RateLimit-Remaining
// and a 429's Retry-After. The browser block of docs/clients.md runs as written in the page.
// CI installs Chromium (.ci/run); without it this fails.
// Callbacks given to page.evaluate run in the page: they see the DOM's types.
/// <reference lib="dom" />

import { expect } from 'chai';
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import type { createPublicClient, http } from 'viem';
import { TestBrowser } from '../support/browser.js';
import { get, startStack, type ChainSpec, type Stack } from '../support/harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const L1: ChainSpec = { name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'l1-full-1', role: 'full' }] };
const TIERS = `
  trickle: { rate: 1, burst: 2 }
  enterprise: { rate: unlimited, burst: unlimited, archive: true }
`;
const PAGE =
  '<!doctype html><html><head><meta charset="utf-8"><title>dApp</title><script type="module" src="/viem.js"></script></head><body>dApp</body></html>';

/** What the page gets from its viem bundle. */
interface PageViem {
  readonly createPublicClient: typeof createPublicClient;
  readonly http: typeof http;
}
declare global {
  interface Window {
    viem?: PageViem;
  }
}

/** Bundle a page script for the browser: its imports (viem) resolved from this repository's node_modules. */
async function bundle(contents: string): Promise<string> {
  const built = await build({
    stdin: { contents, resolveDir: ROOT, loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  return built.outputFiles[0]?.text ?? '';
}

/** A static site on its own loopback port: the dApp page, its viem bundle, and the scripts put in `scripts` (each with a page at /run/NAME.html). */
async function site(viem: string, scripts: ReadonlyMap<string, string>): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const script = req.url === '/viem.js' ? viem : scripts.get(req.url ?? '');
    if (script !== undefined) {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      return void res.end(script);
    }
    const run = /^\/run\/([a-z]+)\.html$/.exec(req.url ?? '');
    if (run !== null) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return void res.end(`<!doctype html><html><head><script type="module" src="/${run[1]}.js"></script></head><body></body></html>`);
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** What the page saw of one fetch: the answer, or the browser's refusal. */
interface Seen {
  readonly status?: number;
  readonly body?: string;
  readonly remaining?: string | null;
  readonly retryAfter?: string | null;
  readonly requestId?: string | null;
  readonly failed?: string;
}

describe('a dApp page in a browser calls the gateway from another origin', function () {
  this.timeout(60_000);
  let stack: Stack;
  let browser: TestBrowser;
  const clock = Date.parse('2026-06-01T12:00:00Z');
  const sites: Server[] = [];
  let dapp: string;
  let third: string;
  const scripts = new Map<string, string>();

  before(async () => {
    const viem = await bundle("import { createPublicClient, http } from 'viem'; window.viem = { createPublicClient, http };");
    const a = await site(viem, scripts);
    const b = await site(viem, scripts);
    sites.push(a.server, b.server);
    dapp = a.origin;
    third = b.origin;
    stack = await startStack({ chains: [L1], tiers: TIERS, now: () => clock });
    await stack.gateway.runtimes()[0]?.prober.probeAll();
    browser = await TestBrowser.launch();
  });
  after(async () => {
    await browser?.close();
    for (const s of sites) s.close();
    await stack?.close();
  });

  async function pageAt(origin: string): Promise<Page> {
    const context = await browser.context();
    const page = await context.newPage();
    await page.goto(`${origin}/shop/`);
    await page.waitForFunction(() => window.viem !== undefined);
    return page;
  }

  /** fetch from the page, as a dApp would: the key in the apikey header (so the browser sends a preflight first). */
  const fetchFrom = (page: Page, key: string, init: { referrerPolicy?: ReferrerPolicy } = {}): Promise<Seen> =>
    page.evaluate(
      async ({ url, key, init }) => {
        try {
          const res = await fetch(url, {
            method: 'POST',
            headers: { apikey: key, 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }),
            ...init,
          });
          return {
            status: res.status,
            body: await res.text(),
            remaining: res.headers.get('RateLimit-Remaining'),
            retryAfter: res.headers.get('Retry-After'),
            requestId: res.headers.get('x-request-id'),
          };
        } catch (err) {
          return { failed: String(err) };
        }
      },
      { url: stack.url('/l1'), key, init },
    );

  /** viem's http transport from the page: the block number, or the error viem raised. */
  const viemFrom = (page: Page, key: string): Promise<{ block?: string; failed?: string }> =>
    page.evaluate(
      async ({ url, key }) => {
        const { createPublicClient, http } = window.viem as PageViem;
        const client = createPublicClient({ transport: http(url, { fetchOptions: { headers: { apikey: key } }, retryCount: 0 }) });
        try {
          return { block: String(await client.getBlockNumber()) };
        } catch (err) {
          return { failed: (err as Error).name };
        }
      },
      { url: stack.url('/l1'), key },
    );

  const originRefusals = async (): Promise<number> =>
    Number(
      /noderouter_restriction_refusals_total\{chain="l1",reason="origin"\} (\d+)/.exec((await get(stack.admin('/metrics'))).text)?.[1] ?? 0,
    );

  it('works with an unrestricted key: fetch reads the answer and its exposed headers, viem reads the block number', async () => {
    const page = await pageAt(dapp);
    const seen = await fetchFrom(page, stack.key);
    expect(seen.status).to.equal(200);
    expect(JSON.parse(seen.body ?? '{}').result).to.match(/^0x[0-9a-f]+$/);
    expect(seen.requestId).to.be.a('string');
    const v = await viemFrom(page, stack.key);
    expect(Number(v.block)).to.be.greaterThan(0);
  });

  it('works with a key allowing the page’s origin, and is refused (a CORS failure) from a third origin', async () => {
    const { value } = await stack.createKey('enterprise', { origins: [dapp] });
    const allowed = await pageAt(dapp);
    expect((await fetchFrom(allowed, value)).status).to.equal(200);
    expect(Number((await viemFrom(allowed, value)).block)).to.be.greaterThan(0);

    const before = await originRefusals();
    const other = await pageAt(third);
    const refused = await fetchFrom(other, value);
    // The page learns nothing but that the browser refused it.
    expect(refused.failed).to.match(/TypeError: Failed to fetch/);
    expect((await viemFrom(other, value)).failed).to.equal('HttpRequestError');
    // The gateway refused both itself (the browser only hid the 403).
    expect(await originRefusals()).to.equal(before + 2);
  });

  it('is refused for a key allowing only another origin', async () => {
    const { value } = await stack.createKey('enterprise', { origins: ['https://app.example.com'] });
    const page = await pageAt(dapp);
    expect((await fetchFrom(page, value)).failed).to.match(/Failed to fetch/);
    expect((await viemFrom(page, value)).failed).to.equal('HttpRequestError');
  });

  it('reads RateLimit-Remaining, then a 429 and its Retry-After', async () => {
    const { value } = await stack.createKey('trickle', { origins: [dapp] });
    const page = await pageAt(dapp);
    expect(await fetchFrom(page, value)).to.deep.include({ status: 200, remaining: '1' });
    expect(await fetchFrom(page, value)).to.deep.include({ status: 200, remaining: '0' });
    const limited = await fetchFrom(page, value);
    expect(limited.status).to.equal(429);
    expect(limited.retryAfter).to.match(/^[1-9]\d*$/);
    expect(JSON.parse(limited.body ?? '{}').error.code).to.equal(-32005);
  });

  it('opens a WebSocket from the allowed origin only', async () => {
    const { value } = await stack.createKey('enterprise', { origins: [dapp] });
    const ws = (page: Page): Promise<string> =>
      page.evaluate(
        ({ url }) =>
          new Promise<string>((resolve) => {
            const s = new WebSocket(url);
            s.onopen = () => s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }));
            s.onmessage = (m) => {
              resolve(String(JSON.parse(String(m.data)).result));
              s.close();
            };
            s.onerror = () => resolve('refused');
          }),
        { url: `${stack.url('/l1').replace(/^http/, 'ws')}?apikey=${value}` },
      );
    expect(await ws(await pageAt(dapp))).to.match(/^0x/);
    expect(await ws(await pageAt(third))).to.equal('refused');
  });

  it('matches referrers as the browser sends them: only the origin to another site, unless the page says otherwise', async () => {
    const page = await pageAt(dapp);
    const site = await stack.createKey('enterprise', { referrers: [`${dapp}/`] });
    expect((await fetchFrom(page, site.value)).status).to.equal(200);
    // Chromium's default policy (strict-origin-when-cross-origin) sends "http://127.0.0.1:port/", not the page's path.
    const path = await stack.createKey('enterprise', { referrers: [`${dapp}/shop/`] });
    expect((await fetchFrom(page, path.value)).status).to.equal(403);
    expect((await fetchFrom(page, path.value, { referrerPolicy: 'unsafe-url' })).status).to.equal(200);
  });

  it('runs the browser block of docs/clients.md as written, with a key restricted to the page’s origin', async () => {
    const doc = await readFile(new URL('../../docs/clients.md', import.meta.url), 'utf8');
    const block = [...doc.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1] as string).find((b) => b.includes('createPublicClient'));
    expect(block, 'docs/clients.md has a browser block with viem').to.be.a('string');
    // A tier with a rate limit, so the answer carries RateLimit-Remaining; its burst of 2 covers both calls.
    const { value } = await stack.createKey('trickle', { origins: [dapp] });
    const script = (block as string).replace("'nrk_…'", `'${value}'`).replace('http://127.0.0.1:8080', stack.gateway.url);
    expect(script).to.contain(value);
    scripts.set('/readme.js', await bundle(script));
    const context = await browser.context();
    // What the block logs, as text (a bigint too).
    await context.addInitScript(() => {
      const seen: string[] = [];
      Object.assign(window, { seen });
      const log = console.log.bind(console);
      console.log = (...args: unknown[]) => {
        seen.push(args.map((a) => String(a)).join(' '));
        log(...args);
      };
    });
    const page = await context.newPage();
    await page.goto(`${dapp}/run/readme.html`);
    await page.waitForFunction(() => (window as unknown as { seen: string[] }).seen.length >= 2);
    const logs = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    expect(logs[0]).to.match(/^200 1 0x[0-9a-f]+$/);
    expect(Number(logs[1])).to.be.greaterThan(0);
  });
});
