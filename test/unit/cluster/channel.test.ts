// The IPC link of a cluster (src/cluster/channel.ts), two ends joined in memory the way
// node:cluster joins a primary and a worker: requests get their handler's answer (or
// its error), notes arrive in order with requests, and a closed end fails what waits.

import { expect } from 'chai';
import { Channel, ChannelClosedError } from '../../../src/cluster/channel.js';

function pair(): [Channel, Channel] {
  // Messages cross on a later turn, as IPC does.
  const a: Channel = new Channel((m) => void setImmediate(() => b.receive(structuredClone(m))));
  const b: Channel = new Channel((m) => void setImmediate(() => a.receive(structuredClone(m))));
  return [a, b];
}

describe('cluster IPC channel (src/cluster/channel.ts)', () => {
  it("answers a request with its handler's value, sync or async, with Infinity and Maps intact", async () => {
    const [primary, worker] = pair();
    primary.handle('double', (n) => (n as number) * 2);
    primary.handle('later', async (m) => new Map([...(m as Map<string, number>)].map(([k, v]) => [k, v + 1])));
    expect(await worker.request('double', 21)).to.equal(42);
    expect(await worker.request('double', Infinity)).to.equal(Infinity);
    expect(await worker.request('later', new Map([['a', 1]]))).to.deep.equal(new Map([['a', 2]]));
  });

  it("fails a request with the handler's error, and one nobody handles", async () => {
    const [primary, worker] = pair();
    primary.handle('boom', () => {
      throw new Error('no such thing');
    });
    const failed = await worker.request('boom').catch((e: unknown) => e as Error);
    expect(failed).to.be.instanceOf(Error).with.property('message', 'no such thing');
    const unknown = await worker.request('nobody').catch((e: unknown) => e as Error);
    expect(unknown).to.be.instanceOf(Error).with.property('message', 'no handler for nobody');
  });

  it('delivers notes before a later request is answered (counts then "bye")', async () => {
    const [primary, worker] = pair();
    const counted: number[] = [];
    primary.handle('count', (n) => void counted.push(n as number));
    primary.handle('bye', () => counted.length);
    for (let i = 0; i < 50; i++) worker.note('count', i);
    expect(await worker.request('bye')).to.equal(50);
    expect(counted).to.deep.equal(Array.from({ length: 50 }, (_, i) => i));
  });

  it('fails pending and later requests once closed, and ignores messages that are not its own', async () => {
    const [, worker] = pair();
    expect(worker.receive({ type: 'prom-client:getMetricsReq' })).to.equal(false);
    const never = new Channel(() => undefined);
    const pending = never.request('anything');
    never.close();
    expect(await pending.catch((e: unknown) => e)).to.be.instanceOf(ChannelClosedError);
    expect(await never.request('again').catch((e: unknown) => e)).to.be.instanceOf(ChannelClosedError);
    expect(never.open).to.equal(false);
  });
});
