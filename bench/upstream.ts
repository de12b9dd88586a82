// The benchmark's node: answers JSON-RPC (single and batch, ids echoed byte for
// byte), the EVM probe, and REST GETs, as fast as node:http can, on every port
// given in BENCH_PORTS (one per simulated node). Prints "ready" when listening.

import { createServer } from 'node:http';
import { memberRaw, splitArray } from '../src/jsonrpc/raw-json.js';

const BLOCK = '{"number":"0x3e8","hash":"0x00000000000000000000000000000000000000000000000000000000000003e8"}';
const LATEST = '{"block_id":{"hash":"AA=="},"block":{"header":{"chain_id":"bench","height":"1000"}}}';
const REST =
  '{"params":{"max_memo_characters":"256","tx_sig_limit":"7","tx_size_cost_per_byte":"10","sig_verify_cost_ed25519":"590","sig_verify_cost_secp256k1":"1000"}}';

function answer(item: string): string {
  const id = memberRaw(item, 'id') ?? 'null';
  return item.includes('getBlockByNumber')
    ? `{"jsonrpc":"2.0","id":${id},"result":${BLOCK}}`
    : `{"jsonrpc":"2.0","id":${id},"result":"0x3e8"}`;
}

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    const text = req.url?.includes('/blocks/latest') === true ? LATEST : REST;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const items = body.trimStart().startsWith('[') ? splitArray(body) : undefined;
    const text = items === undefined ? answer(body) : `[${items.map(answer).join(',')}]`;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
});
server.keepAliveTimeout = 60_000;

const ports = (process.env.BENCH_PORTS ?? '0').split(',').map(Number);
let listening = 0;
for (const port of ports) {
  const s = port === ports[0] ? server : createServer(server.listeners('request')[0] as Parameters<typeof createServer>[1]);
  s.keepAliveTimeout = 60_000;
  s.listen(port, '127.0.0.1', () => {
    if (++listening === ports.length) console.log('ready');
  });
}
