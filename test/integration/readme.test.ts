// The README's endpoint curl lines, run as written (with $KEY set) against a real
// stack: the documentation cannot drift from what the gateway answers.

import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { startStack, type Stack } from '../support/harness.js';

const run = promisify(execFile);

describe('README curl lines', function () {
  this.timeout(30_000);
  let stack: Stack;
  let lines: string[];

  before(async () => {
    stack = await startStack();
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    lines = readme.split('\n').filter((l) => l.startsWith('curl ') && l.includes('http://127.0.0.1:8080/'));
  });
  after(() => stack.close());

  it('finds a curl line for each of the four endpoint shapes', () => {
    for (const path of ['/l1', '/objectx', '/hub/rpc/abci_info', '/hub/rest/sdk/auth/v1beta1/params', '/hub/rest-archive/']) {
      expect(
        lines.some((l) => l.includes(`http://127.0.0.1:8080${path}`)),
        path,
      ).to.equal(true);
    }
  });

  it('answers every line with a JSON result and no error', async () => {
    for (const line of lines) {
      const cmd = line.replaceAll('http://127.0.0.1:8080', stack.gateway.url);
      const { stdout } = await run('bash', ['-c', cmd], { env: { ...process.env, KEY: stack.key } });
      const body = JSON.parse(stdout) as unknown;
      const items = Array.isArray(body) ? body : [body];
      for (const item of items as Array<Record<string, unknown>>) {
        expect(item, line).to.not.have.property('error');
        expect(item.result ?? item.params, line).to.not.equal(undefined);
      }
    }
  });
});
