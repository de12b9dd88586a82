// The floor for a WebSocket gateway in Node: a `ws` server that sends each message
// to the upstream with an undici Pool and writes the answer back, nothing else.
// BENCH_TARGET is the upstream URL, BENCH_PORT the port to listen on.

import { createServer } from 'node:http';
import { Pool } from 'undici';
import { WebSocketServer } from 'ws';

const pool = new Pool(process.env.BENCH_TARGET ?? 'http://127.0.0.1:1', { connections: 64, pipelining: 1 });
const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false });
wss.on('connection', (ws) => {
  ws.on('message', (data) => {
    pool
      .request({ method: 'POST', path: '/', headers: { 'content-type': 'application/json' }, body: data as Buffer })
      .then(async (r) => ws.send(await r.body.text()))
      .catch(() => ws.close(1011));
  });
});
server.listen(Number(process.env.BENCH_PORT ?? 0), '127.0.0.1', () => console.log('ready'));
