// The request line as a log shipper reads it: the client address (the peer, or what a
// trusted proxy forwarded), user agent, bytes in and out, the cache's part and the
// client's W3C trace id, on HTTP, WebSocket and gRPC; and `log.file`, rotated by size,
// with no request body in it.

import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createLogger } from '../../src/ops/log.js';
import { rpc, startStack, type Stack } from '../support/harness.js';
import { RpcSocket, wsUrl } from '../support/ws-client.js';

type Line = Record<string, unknown>;

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('access log', function () {
  this.timeout(30_000);
  let stack: Stack;
  const lines: string[] = [];
  const requests = (): Map<string, Line> =>
    new Map(
      lines
        .map((l) => JSON.parse(l) as Line)
        .filter((r) => r.msg === 'request')
        .map((r) => [r.requestId as string, r]),
    );
  const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

  before(async () => {
    stack = await startStack({
      logger: createLogger('info', { write: (s: string) => lines.push(...s.trimEnd().split('\n')) }),
      serverYaml: 'trustedProxies: ["127.0.0.1/32"]',
      chains: [
        { name: 'l1', plugin: 'evm', path: '/l1', cache: 'memory', nodes: [{ name: 'a-full-1', role: 'full' }] },
        { name: 'hub-grpc', plugin: 'sdk-grpc', network: 'hub', nodes: [{ name: 'a-grpc-1', role: 'full' }] },
      ],
    });
  });
  after(() => stack.close());

  it('gives an HTTP request line the client, user agent, bytes in and out, cache result and trace id', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' });
    const uncached = '{"jsonrpc":"2.0","id":2,"method":"eth_noSuchMethod"}';
    const headers = {
      apikey: stack.key,
      'user-agent': 'access-test/1.0 "quoted"',
      traceparent: `00-${TRACE}-00f067aa0ba902b7-01`,
    };
    const first = await rpc(stack.url('/l1'), body, { ...headers, 'x-request-id': 'al-1' });
    const second = await rpc(stack.url('/l1'), body, { ...headers, 'x-request-id': 'al-2', 'x-forwarded-for': '6.6.6.6, 198.51.100.7' });
    const plain = await rpc(stack.url('/l1'), uncached, { apikey: stack.key, 'x-request-id': 'al-3' });
    expect([first.status, second.status, plain.status]).to.deep.equal([200, 200, 200]);
    await turn();
    const byId = requests();
    expect(byId.get('al-1')).to.include({
      client: '127.0.0.1',
      userAgent: 'access-test/1.0 "quoted"',
      bytesIn: Buffer.byteLength(body),
      bytesOut: Buffer.byteLength(first.text),
      cache: 'miss',
      traceId: TRACE,
    });
    // The peer is a trusted proxy: the client is the right-most address it did not add itself.
    expect(byId.get('al-2')).to.include({ client: '198.51.100.7', cache: 'hit', bytesOut: Buffer.byteLength(second.text) });
    const p = byId.get('al-3') as Line;
    expect(p).to.include({ client: '127.0.0.1', bytesIn: uncached.length, bytesOut: Buffer.byteLength(plain.text) });
    expect(p).to.not.have.property('traceId');
    expect(p).to.not.have.property('cache');
    expect(p.userAgent).to.be.a('string');
  });

  it('gives each WebSocket message a line with the connection’s client and the message’s bytes', async () => {
    lines.length = 0;
    const socket = await RpcSocket.open(`${wsUrl(stack.gateway.url)}/l1`, {
      headers: { apikey: stack.key, 'user-agent': 'ws-agent/2', traceparent: `00-${TRACE}-00f067aa0ba902b7-01` },
    });
    await socket.call('eth_chainId');
    await socket.close();
    await turn();
    const ws = [...requests().values()].find((r) => r.transport === 'ws') as Line;
    expect(ws).to.include({ client: '127.0.0.1', userAgent: 'ws-agent/2', traceId: TRACE });
    expect(ws.bytesIn).to.be.greaterThan(20);
    expect(ws.bytesOut).to.be.greaterThan(20);
  });

  it('gives a gRPC call a line with the client, user agent and message bytes', async () => {
    lines.length = 0;
    const client = new grpc.Client(stack.gateway.grpcAddress, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set('apikey', stack.key);
    md.set('traceparent', `00-${TRACE}-00f067aa0ba902b7-01`);
    await new Promise((resolve) =>
      client.makeUnaryRequest(
        '/cosmos.auth.v1beta1.Query/Params',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        md,
        resolve,
      ),
    );
    client.close();
    await turn();
    const g = [...requests().values()].find((r) => r.transport === 'grpc') as Line;
    expect(g).to.include({ client: '127.0.0.1', bytesIn: 5, traceId: TRACE, status: 0 });
    expect(g.userAgent).to.match(/^grpc-node-js\//);
    expect(g.bytesOut).to.be.greaterThan(5);
  });
});

describe('log.file', function () {
  this.timeout(30_000);

  it('writes the gateway’s lines to the file, rotated by size, without request bodies', async () => {
    const stack = await startStack({
      logYaml: '{ level: info, file: logs/gateway.log, maxBytes: 2048, files: 2 }',
      chains: [{ name: 'l1', plugin: 'evm', path: '/l1', nodes: [{ name: 'f-full-1', role: 'full' }] }],
    });
    const dir = join(stack.dir, 'logs');
    try {
      for (let i = 0; i < 30; i++) {
        const res = await rpc(
          stack.url('/l1'),
          { jsonrpc: '2.0', id: i, method: 'eth_getBalance', params: ['0x00000000000000000000000000000000000b0d1e', 'latest'] },
          { apikey: stack.key, 'x-request-id': `file-${i}` },
        );
        expect(res.status).to.equal(200);
        // Lines go out in batches; let each batch land so the files rotate on the way.
        if (i % 5 === 4) await stack.gateway.logger.flush();
      }
    } catch (err) {
      await stack.close();
      throw err;
    }
    // The files are whole once the gateway has stopped (the stack's close removes its directory).
    await stack.gateway.close();
    const files = (await readdir(dir)).sort();
    const texts = await Promise.all(['gateway.log.2', 'gateway.log.1', 'gateway.log'].map((n) => readFile(join(dir, n), 'utf8')));
    await stack.close();
    expect(files).to.deep.equal(['gateway.log', 'gateway.log.1', 'gateway.log.2']);
    const all: Line[] = [];
    for (const text of texts) {
      expect(Buffer.byteLength(text)).to.be.at.most(2048);
      expect(text).to.not.contain('b0d1e');
      all.push(
        ...text
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as Line),
      );
    }
    const ids = all.filter((r) => r.msg === 'request').map((r) => r.requestId);
    expect(ids[ids.length - 1]).to.equal('file-29');
    expect(all[all.length - 1]).to.include({ msg: 'gateway stopped' });
  });
});
