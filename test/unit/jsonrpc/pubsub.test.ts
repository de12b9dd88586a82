// Reading a node's pub/sub notification and writing it under a client's id.

import { expect } from 'chai';
import { JSONRPC_1, JSONRPC_2 } from '../../../src/jsonrpc/dialect.js';
import { readNotification } from '../../../src/jsonrpc/pubsub.js';

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
    const text = JSONRPC_2.notification('"eth_subscription"', '"0xclient"', '{"n":1.50,"s":"\\u0041"}');
    expect(text).to.equal(
      '{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0xclient","result":{"n":1.50,"s":"\\u0041"}}}',
    );
    expect(readNotification(text)?.result).to.equal('{"n":1.50,"s":"\\u0041"}');
  });

  it('reads and writes 1.0 notifications, which carry id null and no "jsonrpc"', () => {
    const text = JSONRPC_1.notification('"x_subscription"', '"0xclient"', '[1]');
    expect(text).to.equal('{"method":"x_subscription","params":{"subscription":"0xclient","result":[1]},"id":null}');
    expect(readNotification(text)).to.deep.equal({ method: '"x_subscription"', subscription: '"0xclient"', result: '[1]' });
  });
});
