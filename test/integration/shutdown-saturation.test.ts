// SIGTERM on a real `noderouter serve` (one process, and a cluster of two workers) while
// 32 kept-alive connections are never idle: each sends its next call the moment the
// previous answer arrives, and reconnects (as wrk does) after an answer that closes its
// connection. Every call sent is answered in full; a connection only ever ends right
// after an answer that said `connection: close`, with a FIN, never a reset nor a close
// under a call it sent; a reconnection is either served or refused at connect (the
// listener is closed); the process exits 0.

import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordKey } from '../support/record.js';
import { startDevnet, type Devnet } from '../../src/devnet/index.js';
import { configYaml, DEFAULT_TIERS, storeYaml } from '../support/harness.js';
import { KeepAliveConnection } from '../support/keep-alive.js';
import { serve } from '../support/serve.js';
import { until } from '../support/until.js';

const CONNECTIONS = 32;
const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}';

interface Tally {
  sent: number;
  answered: number;
  /** Answers that said `connection: close`. */
  closing: number;
  /** Reconnections refused at connect: the listener was closed. */
  refused: number;
  statuses: number[];
  /** Anything a client must never see: a call left unanswered, a reset, a close without FIN. */
  losses: string[];
}

/** One connection's loop: never idle; after a closing answer, connect again until refused. */
async function busy(port: number, headers: Record<string, string>, tally: Tally): Promise<void> {
  let c = await KeepAliveConnection.open(port);
  for (;;) {
    tally.sent++;
    let closing: boolean;
    try {
      const a = await c.post('/a', BODY, headers);
      tally.answered++;
      if (!tally.statuses.includes(a.status)) tally.statuses.push(a.status);
      closing = a.headers.connection === 'close';
    } catch (err) {
      tally.losses.push(`a call sent and never answered: ${(err as Error).message}`);
      return;
    }
    if (!closing) continue;
    tally.closing++;
    await c.closed;
    if (c.error !== undefined) tally.losses.push(`reset after a closing answer: ${c.error.message}`);
    else if (!c.ended) tally.losses.push('closed without a FIN');
    try {
      c = await KeepAliveConnection.open(port);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ECONNREFUSED') tally.refused++;
      else tally.losses.push(`connect failed: ${code ?? (err as Error).message}`);
      return;
    }
  }
}

describe('shutdown at saturation', function () {
  this.timeout(90_000);
  let devnet: Devnet;
  let dir: string;
  let key: string;

  before(async () => {
    devnet = await startDevnet([{ network: 'a', family: 'evm', name: 'sat-a-1', role: 'full' }], { blockTimeMs: 0, noControl: true });
    dir = await mkdtemp(join(tmpdir(), 'noderouter-saturation-'));
    key = (await recordKey(join(dir, 'noderouter.db'), { account: 'load', tier: 'enterprise' })).value;
  });
  after(async () => {
    await devnet.close();
    await rm(dir, { recursive: true, force: true });
  });

  for (const workers of [1, 2]) {
    it(`answers every call sent on ${CONNECTIONS} busy connections through SIGTERM (server.workers: ${workers}), closing each only after an answer`, async () => {
      const file = join(dir, `gateway-${workers}.yaml`);
      await writeFile(
        file,
        configYaml(
          [{ name: 'a', plugin: 'evm', path: '/a', nodes: [{ name: 'sat-a-1', role: 'full' }] }],
          new Map([['sat-a-1', devnet.node('sat-a-1').url]]),
          {
            tiers: DEFAULT_TIERS,
            storeYaml: storeYaml(join(dir, 'noderouter.db')),
            probeIntervalMs: 60_000,
            serverYaml: `workers: ${workers}, shutdownDelayMs: 300, shutdownTimeoutMs: 20000, shutdownIdleMs: 1000`,
          },
        ),
      );
      const served = await serve(['--config', file], { workers: workers > 1 });
      const tally: Tally = { sent: 0, answered: 0, closing: 0, refused: 0, statuses: [], losses: [] };
      try {
        const loops = Array.from({ length: CONNECTIONS }, () => busy(served.port, { apikey: key }, tally));
        await until(() => tally.answered >= CONNECTIONS * 20 || tally.losses.length > 0, {
          what: 'every connection is busy',
          timeoutMs: 20_000,
        });
        served.child.kill('SIGTERM');
        await Promise.all(loops);
        expect(await served.exited).to.equal(0);
      } finally {
        served.child.kill('SIGKILL');
      }
      expect(tally.losses).to.deep.equal([]);
      expect(tally.answered).to.equal(tally.sent);
      expect(tally.statuses).to.deep.equal([200]);
      // Every connection ended on an answer that closed it, and its next connection was refused.
      expect(tally.closing).to.be.at.least(CONNECTIONS);
      expect(tally.refused).to.equal(CONNECTIONS);
    });
  }
});
