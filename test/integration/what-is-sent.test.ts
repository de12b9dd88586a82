// What is checked is what is sent (issue 18, points 1 and 7), tried as an attacker
// would with raw bodies and raw URLs against a real gateway and devnet nodes: a body a
// Go node reads otherwise never reaches a node, a batch reaches it as the client wrote
// it with only each id's value changed (issue 30, point 2), a key in an encoded query
// parameter is found and never forwarded, and an encoded REST path meets the same
// permissions, label and cost as the path the node routes.

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { rawRequest } from '../support/raw-http.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

describe('what is checked is what is sent', function () {
  this.timeout(30_000);
  let stack: Stack;
  let free: string;
  const received = () => [...stack.devnet.nodes.values()].flatMap((n) => n.received);
  const clearNodes = (): void => {
    for (const n of stack.devnet.nodes.values()) n.clearReceived();
  };
  const metric = async (re: RegExp): Promise<number> => Number(re.exec((await get(stack.admin('/metrics'))).text)?.[1] ?? 0);

  before(async () => {
    stack = await startStack();
    free = (await stack.createKey('free')).value;
  });
  after(() => stack.close());

  describe('JSON-RPC member names', () => {
    it('refuses a body whose method or params a Go node would read otherwise, and sends nothing', async () => {
      const bodies = [
        // geth runs the last "method": debug_setHead, never permission-checked.
        '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","method":"debug_setHead","params":["0x0"]}',
        // A lone PARAMS: the gateway saw no block (latest, full node); geth runs block 0.
        '{"jsonrpc":"2.0","id":2,"method":"eth_getBalance","PARAMS":["0x0000000000000000000000000000000000000001","0x0"]}',
        // Block objects: {"BlockNumber":"0x0"} is block 0 to geth, "latest" to JSON.parse.
        '{"jsonrpc":"2.0","id":3,"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000001",{"BlockNumber":"0x0"}]}',
        '{"jsonrpc":"2.0","id":4,"method":"eth_getLogs","params":[{"fromBlock":"latest","FromBlock":"0x0"}]}',
        '{"jsonrpc":"2.0","id":5,"method":"eth_call","params":[{"to":"0x0000000000000000000000000000000000000001","To":"0x0000000000000000000000000000000000000002"},"latest"]}',
      ];
      clearNodes();
      for (const [n, body] of bodies.entries()) {
        const res = await rpc(stack.url('/l1'), body, { apikey: free });
        expect(res.status, body).to.equal(400);
        const answer = res.json as { id: unknown; error: { code: number; message: string } };
        expect(answer.id).to.equal(n + 1);
        expect(answer.error.code).to.equal(-32600);
        expect(answer.error.message).to.match(/member names must be unique ignoring case/);
      }
      expect(received()).to.deep.equal([]);
    });

    it('in a batch, refuses only the offending item: the others are served, it is not sent', async () => {
      clearNodes();
      const res = await rpc(
        stack.url('/l1'),
        '[{"jsonrpc":"2.0","id":"a","method":"eth_chainId"},' +
          '{"jsonrpc":"2.0","id":"b","method":"eth_blockNumber","Method":"debug_traceBlockByNumber","params":["0x1"]},' +
          '{"jsonrpc":"2.0","id":"c","method":"eth_blockNumber"}]',
        { apikey: free },
      );
      expect(res.status).to.equal(200);
      const answers = res.json as Array<{ id: string; result?: string; error?: { code: number } }>;
      expect(answers.map((a) => a.id)).to.deep.equal(['a', 'b', 'c']);
      expect(answers[0]?.result).to.be.a('string');
      expect(answers[1]?.error?.code).to.equal(-32600);
      expect(answers[2]?.result).to.be.a('string');
      const sent = received().map((r) => r.body);
      expect(sent.join('\n')).to.contain('eth_chainId');
      expect(sent.join('\n')).not.to.contain('debug_');
    });

    it('refuses the same over a raw socket, escapes and non-ASCII folds included', async () => {
      clearNodes();
      const body = '{"jsonrpc":"2.0","id":9,"method":"eth_chainId","paramſ":[],"meth\\u006fd":"eth_chainId"}';
      const raw = await rawRequest(
        stack.url('/l1'),
        `POST /l1 HTTP/1.1\r\nHost: x\r\napikey: ${free}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      expect(raw.status).to.equal(400);
      expect(raw.body).to.contain('-32600');
      expect(received()).to.deep.equal([]);
    });

    it('refuses the same over WebSocket, and the socket keeps serving', async () => {
      const socket = await RpcSocket.open(wsUrl(stack.url('/l1')), { headers: { apikey: free } });
      try {
        clearNodes();
        const refusedAnswer = await socket.send(
          '{"jsonrpc":"2.0","id":77,"method":"eth_chainId","METHOD":"debug_setHead","params":["0x0"]}',
          '77',
        );
        expect((refusedAnswer as unknown as { error: { code: number } }).error.code).to.equal(-32600);
        expect(received()).to.deep.equal([]);
        const ok = await socket.call('eth_chainId');
        expect(ok.result).to.be.a('string');
      } finally {
        socket.ws.close();
      }
    });
  });

  describe('batches', () => {
    it('relays each item as the client wrote it, only its id changed to its place, and answers under the client ids', async () => {
      // Unknown block hashes: answered null, so never cached, and each run's are new.
      const hashes = [0, 1, 2, 3].map(() => `"0x${randomBytes(32).toString('hex')}"`);
      const items = [
        `{"jsonrpc":"2.0","id":7,"method":"eth_getBlockByHash","params":[${hashes[0]},false]}`,
        // The same id again, spaced out, members in another order, a member the gateway does not read.
        `{ "params" : [ ${hashes[1]} , false ] , "method" : "eth_getBlockByHash" , "id" : 7 , "jsonrpc" : "2.0" , "note" : { "id" : 7 } }`,
        // A notification: relayed as sent, and no answer for it.
        `{"jsonrpc":"2.0","method":"eth_getBlockByHash","params":[${hashes[2]},false]}`,
        // An id member spelt with an escape, its value a string like a gateway id.
        `{"jsonrpc":"2.0","\\u0069d":"1","method":"eth_getBlockByHash","params":[${hashes[3]},false]}`,
      ];
      clearNodes();
      const res = await rpc(stack.url('/l1'), `[ ${items.join(' ,\n ')} ]`, { apikey: free });
      expect(res.status).to.equal(200);
      expect(res.text).to.equal(
        '[{"jsonrpc":"2.0","id":7,"result":null},{"jsonrpc":"2.0","id":7,"result":null},{"jsonrpc":"2.0","id":"1","result":null}]',
      );
      const expected = [
        items[0]?.replace('"id":7', '"id":0'),
        items[1]?.replace('"id" : 7 ,', '"id" : 1 ,'),
        items[2],
        items[3]?.replace('"\\u0069d":"1"', '"\\u0069d":3'),
      ];
      // A hedge may send the same body to a second node.
      const sent = received().filter((r) => r.body.includes(hashes[0] as string));
      expect(sent).to.not.have.length(0);
      for (const r of sent) expect(r.body).to.equal(`[${expected.join(',')}]`);
    });
  });

  describe('keys in encoded query parameters', () => {
    it('finds the key however the parameter name is encoded, and never forwards it', async () => {
      const spellings = ['api%6Bey', 'APIKEY', '%61%70%69%6b%65%79', 'ApI%4bEy', 'api%256Bey'];
      for (const name of spellings) {
        clearNodes();
        const res = await get(stack.url(`/hub/rest/cosmos/auth/v1beta1/params?${name}=${stack.key}&x=1`));
        expect(res.status, name).to.equal(200);
        const seen = received();
        expect(seen, name).to.have.length(1);
        expect(seen[0]?.path).to.equal('/cosmos/auth/v1beta1/params?x=1');
        expect(JSON.stringify(seen)).not.to.contain(stack.key);
      }
    });

    it('removes an encoded key parameter sent beside the header: the node never sees it', async () => {
      clearNodes();
      const res = await get(stack.url(`/hub/rest/cosmos/auth/v1beta1/params?x=1&apikey%3D${stack.key}`), { apikey: stack.key });
      expect(res.status).to.equal(200);
      expect(JSON.stringify(received())).not.to.contain(stack.key);
      expect(received()[0]?.path).to.equal('/cosmos/auth/v1beta1/params?x=1');
    });

    it('answers two different keys, one of them encoded, with CONFLICTING_KEYS and sends nothing', async () => {
      clearNodes();
      const res = await get(stack.url(`/hub/rest/cosmos/auth/v1beta1/params?api%6Bey=${free}`), { apikey: stack.key });
      expect(res.status).to.equal(401);
      expect(res.text).to.contain('Two different API keys');
      expect(received()).to.deep.equal([]);
    });
  });

  describe('encoded REST paths', () => {
    it('a key whose deny pattern forbids a route cannot reach it with %61-style encodings', async () => {
      const denied = (await stack.createKey('enterprise', { deny: ['/cosmos/bank/*'] })).value;
      clearNodes();
      for (const path of [
        '/cosmos/b%61nk/v1beta1/balances/addr1',
        '/cosmos/%62%61%6E%6B/v1beta1/balances/addr1',
        '/cosmos/bank%2F..%2Fbank/v1beta1/balances/addr1', // encoded slash: refused outright
        '/%63osmos/ba%6ek/v1beta1/params',
      ]) {
        const res = await get(stack.url(`/hub/rest${path}`), { apikey: denied });
        expect(res.status, path).to.be.oneOf([400, 403]);
      }
      expect(received()).to.deep.equal([]);
      // Not a blanket refusal: other routes still work for that key.
      expect((await get(stack.url('/hub/rest/cosmos/auth/v1beta1/p%61rams'), { apikey: denied })).status).to.equal(200);
    });

    it('forwards, labels and charges the decoded path: the bytes the permission check saw', async () => {
      clearNodes();
      const before = await metric(
        /noderouter_requests_total\{chain="hub-rest",method="\/cosmos\/bank\/v1beta1\/balances\/\{address\}",outcome="ok",transport="http"\} (\d+)/,
      );
      const res = await get(stack.url('/hub/rest/cosmos/b%61nk/v1beta1/b%61lances/addr1'), { apikey: stack.key });
      expect(res.status).to.equal(200);
      expect(received().map((r) => r.path)).to.deep.equal(['/cosmos/bank/v1beta1/balances/addr1']);
      const after = await metric(
        /noderouter_requests_total\{chain="hub-rest",method="\/cosmos\/bank\/v1beta1\/balances\/\{address\}",outcome="ok",transport="http"\} (\d+)/,
      );
      expect(after - before).to.equal(1);
    });

    it('keeps other encodings as sent', async () => {
      clearNodes();
      await get(stack.url('/hub/rest/cosmos/tx/v1beta1/txs/%20x%3A'), { apikey: stack.key });
      expect(received().map((r) => r.path)).to.deep.equal(['/cosmos/tx/v1beta1/txs/%20x%3A']);
    });
  });
});
