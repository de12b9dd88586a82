// The pieces of WebSocket support that need no socket: reading a node's pub/sub
// notification and writing it under a client's id, and connection slots.

import { expect } from 'chai';
import { notificationText, readNotification } from '../../../src/jsonrpc/pubsub.js';
import { MemoryConnectionSlots } from '../../../src/quota/connection-slots.js';

describe('JSON-RPC pub/sub notifications', () => {
  it('reads the node’s subscription id and result as raw text', () => {
    const text = '{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0xab","result":{"number":"0x1","n":1.50}}}';
    expect(readNotification(text)).to.deep.equal({
      method: '"eth_subscription"',
      subscription: '"0xab"',
      result: '{"number":"0x1","n":1.50}',
    });
    // Sui numbers its subscriptions.
    expect(
      readNotification('{"jsonrpc":"2.0","method":"suix_subscribeEvent","params":{"subscription":7,"result":[]}}')?.subscription,
    ).to.equal('7');
  });

  it('takes answers to calls for what they are, not notifications', () => {
    expect(readNotification('{"jsonrpc":"2.0","id":1,"result":"0xab"}')).to.equal(undefined);
    expect(readNotification('{"jsonrpc":"2.0","id":1,"method":"x","params":{"subscription":"a","result":1}}')).to.equal(undefined);
    expect(readNotification('{"jsonrpc":"2.0","method":"x","params":[1]}')).to.equal(undefined);
  });

  it('writes the notification under the client’s id with the result bytes untouched', () => {
    const text = notificationText('"eth_subscription"', '"0xclient"', '{"n":1.50,"s":"\\u0041"}');
    expect(text).to.equal(
      '{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0xclient","result":{"n":1.50,"s":"\\u0041"}}}',
    );
    expect(readNotification(text)?.result).to.equal('{"n":1.50,"s":"\\u0041"}');
  });
});

describe('connection slots in memory', () => {
  it('holds each key to its cap and gives slots back', async () => {
    const slots = new MemoryConnectionSlots();
    expect(await slots.acquire('k1', 'a', 2)).to.equal(true);
    expect(await slots.acquire('k1', 'b', 2)).to.equal(true);
    expect(await slots.acquire('k1', 'c', 2)).to.equal(false);
    expect(await slots.acquire('k2', 'd', 2)).to.equal(true);
    slots.release('k1', 'a');
    expect(await slots.acquire('k1', 'c', 2)).to.equal(true);
    expect(await slots.acquire('k3', 'e', Infinity)).to.equal(true);
    slots.release('k9', 'nothing');
  });
});
