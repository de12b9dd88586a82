// Bad input and broken nodes: every case answered from the error table, never a
// 5xx for the client's own mistake, never reaching a node unless valid, and a
// node's garbage never passed on.

import { expect } from 'chai';
import fc from 'fast-check';
import { get, rpc, startStack, type Stack } from '../support/harness.js';
import { rawRequest } from '../support/raw-http.js';

describe('hostile clients and broken nodes', function () {
  this.timeout(30_000);
  let stack: Stack;
  let h: Record<string, string>;
  const nodesSeen = (): number => [...stack.devnet.nodes.values()].reduce((n, d) => n + d.received.length, 0);
  const clearNodes = (): void => {
    for (const n of stack.devnet.nodes.values()) n.clearReceived();
  };

  before(async () => {
    stack = await startStack({ serverYaml: 'maxResponseBytes: 65536' });
    h = { apikey: stack.key };
  });
  after(() => stack.close());
  afterEach(async () => {
    for (const n of stack.devnet.nodes.values()) await n.clearFaults();
    for (const rt of stack.gateway.runtimes()) for (const n of rt.pool.nodes) n.breaker.close();
  });

  const errorOf = (res: { json: unknown }): { id: unknown; error: { code: number } } =>
    res.json as { id: unknown; error: { code: number } };

  describe('JSON-RPC bodies', () => {
    it('answers a body that is not JSON, or empty, with 400 -32700 and id null, without a node', async () => {
      clearNodes();
      for (const body of ['{"jsonrpc":"2.0",', '', 'nope', '{"a":1}}']) {
        const res = await rpc(stack.url('/l1'), body, h);
        expect(res.status, body).to.equal(400);
        expect(errorOf(res)).to.deep.include({ id: null });
        expect(errorOf(res).error.code, body).to.equal(-32700);
      }
      expect(nodesSeen()).to.equal(0);
    });

    it('accepts a JSON body whatever the content type says (documented)', async () => {
      for (const ct of ['text/plain', 'application/x-www-form-urlencoded']) {
        const res = await fetch(stack.url('/l1'), {
          method: 'POST',
          headers: { 'content-type': ct, ...h },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
        });
        expect(res.status, ct).to.equal(200);
      }
    });

    it('refuses invalid envelopes with 400 -32600 and the id when it could be read', async () => {
      const cases: Array<[unknown, unknown]> = [
        [{ jsonrpc: '1.0', id: 1, method: 'eth_chainId' }, 1],
        [{ id: 2, method: 'eth_chainId' }, 2],
        [{ jsonrpc: '2.0', id: 3 }, 3],
        [{ jsonrpc: '2.0', id: 4, method: 7 }, 4],
        [{ jsonrpc: '2.0', id: { a: 1 }, method: 'eth_chainId' }, null],
        [{ jsonrpc: '2.0', id: [1], method: 'eth_chainId' }, null],
        [{ jsonrpc: '2.0', id: 5, method: 'eth_chainId', params: 'x' }, 5],
        [42, null],
        [{ jsonrpc: '2.0', id: 6, method: 'm'.repeat(500) }, 6],
      ];
      clearNodes();
      for (const [body, id] of cases) {
        const res = await rpc(stack.url('/l1'), body, h);
        expect(res.status, JSON.stringify(body).slice(0, 60)).to.equal(400);
        expect(errorOf(res).id).to.deep.equal(id);
        expect(errorOf(res).error.code).to.equal(-32600);
      }
      expect(nodesSeen()).to.equal(0);
    });

    it('echoes ids of every scalar type exactly', async () => {
      for (const id of ['"abc"', '"\\u00e9t\\u00e9"', '0', '-1', '1.5', '1e3', '18446744073709551615', 'null']) {
        const res = await rpc(stack.url('/l1'), `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId"}`, h);
        expect(res.status).to.equal(200);
        expect(res.text).to.contain(`"id":${id}`);
      }
    });

    it('answers notifications with 204, and only the calls of a mixed batch', async () => {
      const single = await rpc(stack.url('/l1'), { jsonrpc: '2.0', method: 'eth_chainId' }, h);
      expect(single.status).to.equal(204);
      expect(single.text).to.equal('');
      const only = await rpc(stack.url('/l1'), [{ jsonrpc: '2.0', method: 'eth_chainId' }], h);
      expect(only.status).to.equal(204);
      const mixed = await rpc(
        stack.url('/l1'),
        [
          { jsonrpc: '2.0', method: 'eth_chainId' },
          { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
          { jsonrpc: '1.0', id: 2, method: 'x' },
          5,
        ],
        h,
      );
      expect(mixed.status).to.equal(200);
      const items = mixed.json as Array<{ id: unknown; result?: string; error?: { code: number } }>;
      expect(items.map((i) => i.id)).to.deep.equal([1, 2, null]);
      expect(items[0]?.result).to.match(/^0x/);
      expect(items.slice(1).map((i) => i.error?.code)).to.deep.equal([-32600, -32600]);
    });

    it('answers an empty batch with 400 -32600, and duplicate ids each', async () => {
      const empty = await rpc(stack.url('/l1'), '[]', h);
      expect(empty.status).to.equal(400);
      expect(errorOf(empty).error.code).to.equal(-32600);
      const dup = await rpc(
        stack.url('/l1'),
        [
          { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
          { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' },
        ],
        h,
      );
      const items = dup.json as Array<{ id: number; result: string }>;
      expect(items).to.have.length(2);
      expect(items.map((i) => i.id)).to.deep.equal([1, 1]);
    });

    it('refuses bodies nested too deep and bodies over the size cap (413 before reading)', async () => {
      const deep = await rpc(
        stack.url('/l1'),
        `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${'['.repeat(200)}${']'.repeat(200)}}`,
        h,
      );
      expect(deep.status).to.equal(400);
      const big = await rawRequest(
        stack.url('/l1'),
        `POST /l1 HTTP/1.1\r\nHost: x\r\napikey: ${stack.key}\r\ncontent-type: application/json\r\ncontent-length: 5000000\r\n\r\n{`,
      );
      expect(big.status).to.equal(413);
      expect(JSON.parse(big.body)).to.deep.include({ id: null });
      const chunk = 'x'.repeat(600_000);
      const chunked = await rawRequest(
        stack.url('/l1'),
        `POST /l1 HTTP/1.1\r\nHost: x\r\napikey: ${stack.key}\r\ntransfer-encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
      );
      expect(chunked.status).to.equal(413);
    });
  });

  it('answers any generated body with a well-formed answer and stays up', async () => {
    const body = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
      fc
        .record(
          {
            jsonrpc: fc.constantFrom('2.0', '1.0', 2),
            id: fc.jsonValue({ maxDepth: 1 }),
            method: fc.oneof(fc.constantFrom('eth_chainId', 'eth_blockNumber'), fc.string()),
          },
          { requiredKeys: [] },
        )
        .map((v) => JSON.stringify(Math.random() < 0.3 ? [v, v] : v)),
    );
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const res = await rpc(stack.url('/l1'), text, h);
        expect([200, 204, 400, 413]).to.include(res.status);
        if (res.status === 204) {
          expect(res.text).to.equal('');
          return;
        }
        const parsed = JSON.parse(res.text) as unknown;
        for (const item of Array.isArray(parsed) ? parsed : [parsed]) {
          const o = item as Record<string, unknown>;
          expect(o.jsonrpc).to.equal('2.0');
          expect('result' in o || 'error' in o).to.equal(true);
        }
      }),
      { numRuns: 150 },
    );
    expect((await get(stack.admin('/health/live'))).status).to.equal(200);
  });

  describe('keys and headers', () => {
    it('refuses keys too long, with control or non-ASCII characters, or given twice', async () => {
      const base = (key: string): string =>
        `POST /l1 HTTP/1.1\r\nHost: x\r\napikey: ${key}\r\ncontent-type: application/json\r\ncontent-length: 47\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`;
      expect((await rawRequest(stack.url('/l1'), base('k'.repeat(500)))).status).to.equal(401);
      expect(
        (await rawRequest(stack.url('/l1'), Buffer.from(base(`${stack.key.slice(0, 10)}é${stack.key.slice(11)}`), 'utf8'))).status,
      ).to.equal(401);
      const control = await rawRequest(stack.url('/l1'), base(`${stack.key}\x01`));
      expect([400, 401]).to.include(control.status);
      const twice = await rawRequest(
        stack.url('/l1'),
        `POST /l1 HTTP/1.1\r\nHost: x\r\napikey: ${stack.key}\r\napikey: nrk_${'q'.repeat(32)}\r\ncontent-length: 47\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`,
      );
      expect(twice.status).to.equal(401);
    });

    it('answers 431 to oversized headers and 400 to CR/LF tricks and conflicting lengths', async () => {
      const huge = await rawRequest(stack.url('/l1'), `GET /l1 HTTP/1.1\r\nHost: x\r\nx-pad: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(huge.status).to.equal(431);
      expect(JSON.parse(huge.body)).to.have.property('error');
      const conflicting = await rawRequest(
        stack.url('/l1'),
        `POST /l1 HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n{}{}{}`,
      );
      expect(conflicting.status).to.equal(400);
      const bareLf = await rawRequest(stack.url('/l1'), `GET /l1 HTTP/1.1\r\nHost: x\r\nx-a: b\rx-b: c\r\n\r\n`);
      expect(bareLf.status).to.equal(400);
    });
  });

  describe('REST paths', () => {
    it('normalises dot segments and doubled slashes, then routes', async () => {
      const res = await rawRequest(
        stack.url('/'),
        `GET /hub/rest/x/../sdk//auth/./v1beta1/params HTTP/1.1\r\nHost: x\r\napikey: ${stack.key}\r\n\r\n`,
      );
      expect(res.status).to.equal(200);
      expect(JSON.parse(res.body)).to.have.property('params');
      const across = await rawRequest(
        stack.url('/'),
        `GET /hub/rest/%2e%2e/rpc/status HTTP/1.1\r\nHost: x\r\napikey: ${stack.key}\r\n\r\n`,
      );
      expect(across.status).to.equal(200);
      expect(JSON.parse(across.body)).to.have.nested.property('result.sync_info');
    });

    it('never lets a path climb out of the chain’s base path', async () => {
      clearNodes();
      const res = await rawRequest(
        stack.url('/'),
        `GET /hub/rest/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\napikey: ${stack.key}\r\n\r\n`,
      );
      expect(res.status).to.equal(400);
      const enc = await rawRequest(
        stack.url('/'),
        `GET /hub/rest/cosmos%2F..%2F..%2Fx HTTP/1.1\r\nHost: x\r\napikey: ${stack.key}\r\n\r\n`,
      );
      expect(enc.status).to.equal(400);
      expect(nodesSeen()).to.equal(0);
    });

    it('refuses a non-numeric x-cosmos-block-height before any node', async () => {
      clearNodes();
      const res = await get(stack.url('/hub/rest/cosmos/auth/v1beta1/params'), { ...h, 'x-cosmos-block-height': '12; DROP' });
      expect(res.status).to.equal(400);
      expect(nodesSeen()).to.equal(0);
    });
  });

  describe('broken nodes', () => {
    const call = () => rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 11, method: 'eth_chainId' }, h);
    const batch = () =>
      rpc(
        stack.url('/l1'),
        [1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'eth_chainId' })),
        h,
      );

    for (const fault of ['wrongId', 'truncated', 'html', 'hugeBody'] as const) {
      it(`takes a good answer from another node when one answers with ${fault}`, async () => {
        await stack.devnet.node('l1-full-1').setFaults({ [fault]: true });
        for (let i = 0; i < 4; i++) {
          const res = await call();
          expect(res.status).to.equal(200);
          expect(res.json).to.deep.include({ id: 11 });
          expect((res.json as { result: string }).result).to.match(/^0x[0-9a-f]+$/);
        }
      });
    }

    it('counts an answer over maxResponseBytes as the node failing, even with the right id', async () => {
      const big = `0x${'ab'.repeat(40_000)}`;
      await stack.devnet.node('l1-full-1').setFaults({ hugeBody: true });
      for (let i = 0; i < 4; i++) {
        const res = await rpc(stack.url('/l1'), { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, h);
        expect(res.status).to.equal(200);
        expect(res.text.length).to.be.lessThan(big.length);
      }
      const metrics = (await get(stack.admin('/metrics'))).text;
      expect(metrics).to.match(/noderouter_upstream_requests_total\{chain="l1",node="l1-full-1",outcome="failure"\} [1-9]/);
    });

    it('answers 502 cleanly when every node answers garbage', async () => {
      for (const n of ['l1-full-1', 'l1-full-2', 'l1-archive-1']) await stack.devnet.node(n).setFaults({ wrongId: true });
      const res = await call();
      expect(res.status).to.equal(502);
      expect(res.text).to.not.contain('not-your-call');
      expect(errorOf(res)).to.deep.include({ id: 11 });
    });

    it('treats a short batch as a failure and puts a reordered one back in order', async () => {
      await stack.devnet.node('l1-full-1').setFaults({ shortBatch: true });
      await stack.devnet.node('l1-full-2').setFaults({ reorderBatch: true });
      for (let i = 0; i < 4; i++) {
        const res = await batch();
        expect(res.status).to.equal(200);
        expect((res.json as Array<{ id: number }>).map((x) => x.id)).to.deep.equal([1, 2, 3]);
      }
    });
  });
});
