// The floor for any Node gateway: node:http in, an undici Pool out, bytes relayed,
// nothing else. BENCH_TARGET is the upstream URL, BENCH_PORT the port to listen on.

import { createServer } from 'node:http';
import { Pool } from 'undici';

const pool = new Pool(process.env.BENCH_TARGET ?? 'http://127.0.0.1:1', { connections: 64, pipelining: 1 });
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    pool
      .request({
        method: req.method as 'GET' | 'POST',
        path: req.url ?? '/',
        headers: { 'content-type': 'application/json' },
        body: chunks.length === 0 ? undefined : Buffer.concat(chunks),
      })
      .then(async (r) => {
        const body = Buffer.from(await r.body.arrayBuffer());
        res.writeHead(r.statusCode, { 'content-type': 'application/json', 'content-length': body.length });
        res.end(body);
      })
      .catch(() => {
        res.writeHead(502);
        res.end();
      });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.BENCH_PORT ?? 0), '127.0.0.1', () => console.log('ready'));
