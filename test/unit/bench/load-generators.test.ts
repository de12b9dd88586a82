// The bench's own load generators against a local server that records what it got:
// the fixed-rate load sends exactly rate × (1 + seconds) requests (the first second
// unrecorded), counts non-200 answers as errors and reports latencies in order; the
// WebSocket load counts answers and error replies.

import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { rateLoad } from '../../../bench/rate-load.js';
import { wsLoad } from '../../../bench/ws-load.js';

describe('bench load generators', function () {
  this.timeout(10_000);
  let server: Server;
  let origin: string;
  const seen: Array<{ method: string; url: string; body: string; apikey: string | undefined }> = [];

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', body, apikey: req.headers.apikey as string | undefined });
        res
          .writeHead(req.url === '/fail' ? 503 : 200, { 'content-type': 'application/json' })
          .end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => (seen.length = 0));

  it('sends rate × (1 + seconds) requests as given, and reports them without errors', async () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}';
    const r = await rateLoad(origin, { method: 'POST', path: '/l1', body, headers: { apikey: 'k' } }, 40, 4, 0.5);
    expect(r.served).to.equal(60);
    expect(seen).to.have.length(60);
    expect(seen.every((s) => s.method === 'POST' && s.url === '/l1' && s.body === body && s.apikey === 'k')).to.equal(true);
    expect(r.errors).to.equal(0);
    expect(r.rps).to.be.greaterThan(0);
    expect(r.p50).to.be.greaterThan(0);
    expect(r.p99).to.be.at.least(r.p50);
  });

  it('counts answers other than 200 as errors (the unrecorded first second aside)', async () => {
    const r = await rateLoad(origin, { method: 'GET', path: '/fail', headers: {} }, 20, 2, 0.5);
    expect(r.served).to.equal(30);
    expect(r.errors).to.equal(10);
  });

  it('WebSocket load: every message answered, error replies counted', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    let got = 0;
    wss.on('connection', (socket) =>
      socket.on('message', (m) => {
        got++;
        socket.send(
          m.toString().includes('bad') ? '{"jsonrpc":"2.0","id":1,"error":{"code":-32601}}' : '{"jsonrpc":"2.0","id":1,"result":"0x1"}',
        );
      }),
    );
    const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    const ok = await wsLoad(url, {}, '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}', 2, 0.2);
    const gotOk = got;
    const bad = await wsLoad(url, {}, '{"jsonrpc":"2.0","id":1,"method":"bad"}', 2, 0.2);
    await new Promise<void>((r) => wss.close(() => r()));
    expect(ok.errors).to.equal(0);
    expect(ok.rps).to.be.greaterThan(0);
    expect(ok.p99).to.be.at.least(ok.p50);
    // Every reply to a bad call is an error; a reply still in flight at the end is not counted.
    expect(bad.errors)
      .to.be.greaterThan(0)
      .and.at.most(got - gotOk);
  });
});
