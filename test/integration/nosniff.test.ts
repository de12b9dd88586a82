// Every answer on the traffic listener says `x-content-type-options: nosniff`: a
// node's answer, or an error echoing a client's input, must never be read by a
// browser as HTML or script. Answers of the pipeline, refusals before any endpoint,
// Node's parser refusals written to the raw socket, and refused WebSocket upgrades.

import { expect } from 'chai';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { rawRequest } from '../support/raw-http.js';
import { refusal, wsUrl } from '../support/ws-client.js';

describe('nosniff on traffic answers', function () {
  this.timeout(20_000);
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.close());

  it('on answers, errors and passthrough of every kind', async () => {
    const answers = [
      await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, { apikey: stack.key }),
      await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }),
      await rpc(stack.url('/l1'), '{nope', { apikey: stack.key }),
      await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { apikey: stack.key }),
      await get(stack.url('/no-such-endpoint')),
      await get(stack.url('/hub/rest/a%2Fb')),
    ];
    expect(answers.map((a) => a.status)).to.deep.equal([200, 401, 400, 200, 404, 400]);
    for (const a of answers) expect(a.headers.get('x-content-type-options')).to.equal('nosniff');
  });

  it('on the raw refusal of a malformed request', async () => {
    const res = await rawRequest(stack.url('/l1'), 'POST /l1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab');
    expect(res.status).to.equal(400);
    expect(res.head.toLowerCase()).to.contain('x-content-type-options: nosniff');
  });

  it('on a refused WebSocket upgrade', async () => {
    const res = await refusal(wsUrl(stack.url('/l1')));
    expect(res.status).to.equal(401);
    expect(res.headers['x-content-type-options']).to.equal('nosniff');
  });
});
