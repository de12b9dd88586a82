// A closed-loop WebSocket load: `connections` sockets, each sending one JSON-RPC
// message and the next as soon as the answer comes, for `seconds`. Reports messages
// per second, latency percentiles and errors, like autocannon does for HTTP.

import WebSocket from 'ws';
import { percentile } from './measure.js';

export interface WsLoadResult {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
}

export async function wsLoad(
  url: string,
  headers: Record<string, string>,
  body: string,
  connections: number,
  seconds: number,
): Promise<WsLoadResult> {
  const sockets = await Promise.all(
    Array.from(
      { length: connections },
      () =>
        new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(url, { headers, perMessageDeflate: false });
          ws.once('open', () => resolve(ws));
          ws.once('error', reject);
        }),
    ),
  );
  const latencies: number[] = [];
  let errors = 0;
  let running = true;
  const done = sockets.map(
    (ws) =>
      new Promise<void>((resolve) => {
        let sent = 0;
        ws.on('message', (data) => {
          latencies.push(performance.now() - sent);
          if ((data as Buffer).includes('"error"')) errors++;
          if (!running) return resolve();
          sent = performance.now();
          ws.send(body);
        });
        ws.on('close', () => resolve());
        sent = performance.now();
        ws.send(body);
      }),
  );
  const started = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  running = false;
  // Sockets that never answer again are given 2 s; the wait ends with the last answer.
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(done), new Promise((r) => (grace = setTimeout(r, 2_000)))]);
  clearTimeout(grace);
  const elapsed = (performance.now() - started) / 1000;
  for (const ws of sockets) ws.terminate();
  const sorted = Float64Array.from(latencies).sort();
  return { rps: latencies.length / elapsed, p50: percentile(sorted, 50), p99: percentile(sorted, 99), errors };
}
