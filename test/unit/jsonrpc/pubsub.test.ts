// Reading a node's pub/sub notification and writing it under a client's id.

import { expect } from 'chai';
import { notificationText, readNotification } from '../../../src/jsonrpc/pubsub.js';

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
