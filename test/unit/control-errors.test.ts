// The control plane's error catalogue: every refusal class of the admin API, the
// dashboard and the CLI carries a catalogue code; the one middleware answers each with
// the code's status, body and Retry-After over real HTTP; the table in docs/errors.md agrees.

import { expect } from 'chai';
import Koa from 'koa';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { AccountInputError } from '../../src/accounts/account-service.js';
import { AccountExistsError, AccountNotFoundError } from '../../src/accounts/account-store.js';
import { KeyAmbiguousError, KeyChangesLimitedError, KeyInputError, KeyNotFoundError } from '../../src/auth/key-store.js';
import { UsageError } from '../../src/cli/args.js';
import type { ControlError } from '../../src/control-errors.js';
import { CONTROL_ERRORS, isControlCode, type ControlCode } from '../../src/control-errors.js';
import { GatewayError } from '../../src/errors.js';
import { controlErrors } from '../../src/admin/json-api.js';
import { HoldError } from '../../src/ops/holds/node-holds.js';
import { RecordConflictError } from '../../src/record/row-plan.js';

describe('control plane error catalogue', () => {
  it('gives every refusal class its code, status and exit code', () => {
    const cases: Array<[ControlError, ControlCode]> = [
      [new KeyInputError('bad', 'origins'), 'INVALID_INPUT'],
      [new KeyAmbiguousError('abc'), 'INVALID_INPUT'],
      [new KeyNotFoundError('abc'), 'KEY_NOT_FOUND'],
      [new KeyChangesLimitedError(30, 60), 'TOO_MANY_KEY_CHANGES'],
      [new AccountInputError('bad'), 'INVALID_INPUT'],
      [new AccountExistsError('acme'), 'ACCOUNT_EXISTS'],
      [new AccountNotFoundError('acme'), 'ACCOUNT_NOT_FOUND'],
      [new HoldError('NODE_NOT_FOUND', 'no node'), 'NODE_NOT_FOUND'],
      [new HoldError('STORE_UNAVAILABLE', 'try again'), 'STORE_UNAVAILABLE'],
      [new UsageError('unknown command'), 'INVALID_INPUT'],
      [new RecordConflictError(['key key_a'], 'differs'), 'RECORD_CONFLICT'],
    ];
    for (const [err, code] of cases) {
      expect(err.code, err.name).to.equal(code);
      expect(err.status, err.name).to.equal(CONTROL_ERRORS[code].status);
      expect(err.exit, err.name).to.equal(CONTROL_ERRORS[code].exit);
    }
    expect(new KeyInputError('bad', 'origins').field).to.equal('origins');
    expect(new KeyChangesLimitedError(30, 60).retryAfter).to.equal(30);
    expect(new HoldError('STORE_UNAVAILABLE', 'try again').retryAfter).to.equal(1);
    expect(isControlCode('KEY_NOT_FOUND')).to.equal(true);
    expect(isControlCode('toString')).to.equal(false);
    expect(isControlCode('RATE_LIMITED')).to.equal(false);
  });

  describe('the middleware, over HTTP', () => {
    let url: string;
    let close: () => Promise<void>;
    const unexpected: unknown[] = [];

    before(async () => {
      const app = new Koa();
      app.use(
        controlErrors(
          (ctx, err) => {
            unexpected.push(err);
            ctx.status = 500;
            ctx.body = { error: { code: 'INTERNAL', message: 'hidden' } };
          },
          { KEY_NOT_FOUND: 'No such key in this account' },
        ),
      );
      app.use((ctx) => {
        switch (ctx.path) {
          case '/input':
            throw new KeyInputError('origins must be a list', 'origins');
          case '/key':
            throw new KeyNotFoundError('key_abc');
          case '/paced':
            throw new KeyChangesLimitedError(42, 60);
          case '/json':
            throw new SyntaxError('Unexpected token');
          case '/large':
            throw new GatewayError('BODY_TOO_LARGE');
          case '/other':
            throw new Error('a bug');
          default:
            ctx.body = { ok: true };
        }
      });
      const server = app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      close = () => new Promise((r) => server.close(() => r()));
    });
    after(() => close());

    const fetchJson = async (path: string) => {
      const res = await fetch(`${url}${path}`);
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as unknown };
    };

    it('answers each refusal with its code, status, field and Retry-After, in the wording given for this surface', async () => {
      expect(await fetchJson('/input')).to.deep.equal({
        status: 400,
        retryAfter: null,
        body: { error: { code: 'INVALID_INPUT', message: 'origins must be a list', field: 'origins' } },
      });
      expect(await fetchJson('/key')).to.deep.equal({
        status: 404,
        retryAfter: null,
        body: { error: { code: 'KEY_NOT_FOUND', message: 'No such key in this account' } },
      });
      const paced = await fetchJson('/paced');
      expect([paced.status, paced.retryAfter, (paced.body as { error: { code: string } }).error.code]).to.deep.equal([
        429,
        '42',
        'TOO_MANY_KEY_CHANGES',
      ]);
      expect(await fetchJson('/json')).to.deep.equal({
        status: 400,
        retryAfter: null,
        body: { error: { code: 'INVALID_JSON', message: 'body is not valid JSON' } },
      });
      expect((await fetchJson('/large')).status).to.equal(413);
    });

    it('hands anything else to the surface, never answering it as a refusal', async () => {
      expect((await fetchJson('/other')).status).to.equal(500);
      expect(unexpected).to.have.length(1);
      expect((unexpected[0] as Error).message).to.equal('a bug');
    });
  });

  it('matches the control plane table of docs/errors.md row by row', async () => {
    const page = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const start = page.indexOf('\n## Control plane errors\n');
    expect(start).to.be.greaterThan(0);
    const next = page.indexOf('\n## ', start + 1);
    const section = page.slice(start, next < 0 ? undefined : next);
    const seen: string[] = [];
    for (const row of section.split('\n').filter((l) => /^\| `[A-Z_]+` \|/.test(l))) {
      const [, code, status, exit] = row.split('|').map((c) => c.trim());
      const key = (code as string).replace(/`/g, '');
      expect(isControlCode(key), `docs/errors.md names unknown code ${key}`).to.equal(true);
      expect([Number(status), Number(exit)], key).to.deep.equal([
        CONTROL_ERRORS[key as ControlCode].status,
        CONTROL_ERRORS[key as ControlCode].exit,
      ]);
      seen.push(key);
    }
    expect(seen.sort()).to.deep.equal(Object.keys(CONTROL_ERRORS).sort());
  });
});
