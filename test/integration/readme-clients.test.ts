// The client examples of docs/clients.md, run verbatim as separate processes against a real
// stack: if a block stops working as written, this fails.

import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DEFAULT_CHAINS, HUB_GRPC, startStack, type Stack } from '../support/harness.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('client examples (docs/clients.md)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let dir: string;
  let blocks: string[];

  before(async () => {
    stack = await startStack({ chains: [...DEFAULT_CHAINS, HUB_GRPC] });
    for (const rt of stack.gateway.runtimes()) await rt.prober.probeAll();
    // Inside the repository, so the examples resolve its node_modules like a user's project.
    dir = await mkdtemp(join(ROOT, 'test-output-doc-'));
    const page = await readFile(join(ROOT, 'docs', 'clients.md'), 'utf8');
    blocks = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  });
  after(async () => {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('has an example for viem, ethers, cosmjs, the Sui SDK, WebSocket and @grpc/grpc-js', () => {
    for (const lib of [
      "from 'viem'",
      "from 'ethers'",
      "from '@cosmjs/tendermint-rpc'",
      "from '@mysten/sui/client'",
      "from 'ws'",
      'webSocket(',
      "from '@grpc/grpc-js'",
    ]) {
      expect(
        blocks.some((b) => b.includes(lib)),
        lib,
      ).to.equal(true);
    }
  });

  it('runs every example as written', async () => {
    // New blocks keep coming, so the WebSocket examples see heads.
    const miner = setInterval(() => stack.devnet.chains.get('l1')?.advance(), 100);
    try {
      await runAll();
    } finally {
      clearInterval(miner);
    }
  });

  async function runAll(): Promise<void> {
    for (const [i, code] of blocks.entries()) {
      const file = join(dir, `example-${i}.mts`);
      await writeFile(file, code);
      const { stdout } = await run(process.execPath, ['--import', 'tsx', file], {
        cwd: ROOT,
        env: { ...process.env, NODEROUTER_URL: stack.gateway.url, NODEROUTER_KEY: stack.key, NODEROUTER_GRPC: stack.gateway.grpcAddress },
      });
      expect(stdout.trim(), code).to.not.equal('');
      expect(stdout, code).to.not.match(/error/i);
    }
  }
});
