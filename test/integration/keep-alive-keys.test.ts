// Keys on a kept-alive connection (src/exec/identify.ts): a connection's repeated key
// header is not hashed again, yet every request is still judged by the key it carries
// now: another key on the same connection is that key's request, a key revoked between
// two requests is refused on the next, and a key in the query of a later request on
// the connection is read from there (conflicting with the header: 401, as anywhere).

import { expect } from 'chai';
import { startStack, type Stack } from '../support/harness.js';
import { KeepAliveConnection } from '../support/keep-alive.js';

const BLOCK_NUMBER = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

describe('API keys on a kept-alive connection', function () {
  this.timeout(30_000);
  let stack: Stack;

  before(async () => {
    stack = await startStack({});
  });
  after(async () => stack.close());

  /** Two keys of the unlimited tier, and one kept-alive connection to the gateway. */
  async function twoKeysOneConnection(): Promise<{
    a: { id: string; value: string };
    b: { id: string; value: string };
    conn: KeepAliveConnection;
  }> {
    const [a, b] = [await stack.createKey('enterprise'), await stack.createKey('enterprise')];
    return { a, b, conn: await KeepAliveConnection.open(Number(new URL(stack.url('/')).port)) };
  }

  it('judges every request by the key it carries, and refuses a key revoked between two requests', async () => {
    const { a, b, conn } = await twoKeysOneConnection();
    try {
      for (let i = 0; i < 3; i++) expect((await conn.post('/l1', BLOCK_NUMBER, { apikey: a.value })).status).to.equal(200);
      expect((await conn.post('/l1', BLOCK_NUMBER, { apikey: b.value })).status).to.equal(200);
      expect((await conn.post('/l1', BLOCK_NUMBER, { apikey: a.value })).status).to.equal(200);
      // The same key in the query as well as the header: one key, answered.
      expect((await conn.post(`/l1?apikey=${a.value}`, BLOCK_NUMBER, { apikey: a.value })).status).to.equal(200);
      await stack.gateway.keys.revoke(b.id);
      // b's hash was remembered for the connection before: the cache is still asked, and says no.
      await stack.gateway.keys.revoke(a.id);
      const refused = await conn.post('/l1', BLOCK_NUMBER, { apikey: a.value });
      expect(refused.status).to.equal(401);
      expect(JSON.parse(refused.body)).to.have.nested.property('error.message').that.matches(/key/i);
    } finally {
      conn.end();
    }
  });

  it('reads a key given in the query after one in the header, and refuses the two disagreeing (401)', async () => {
    const { a, b, conn } = await twoKeysOneConnection();
    try {
      expect((await conn.post('/l1', BLOCK_NUMBER, { apikey: a.value })).status).to.equal(200);
      const conflicting = await conn.post(`/l1?apikey=${b.value}`, BLOCK_NUMBER, { apikey: a.value });
      expect(conflicting.status).to.equal(401);
      expect(JSON.parse(conflicting.body)).to.have.nested.property('error.message', 'Two different API keys in one request');
    } finally {
      conn.end();
    }
  });
});
