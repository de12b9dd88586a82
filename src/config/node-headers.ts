// A node's `headers`: what a provider's node wants on every call (Authorization, an API
// key header), sent on JSON-RPC, REST and URI calls, WebSocket handshakes and as gRPC
// metadata. shape.ts checks names and values; here names are kept in lower case and
// the ones the gateway owns are refused. Values are secrets: no problem message ever
// repeats one, and everything that prints a node shows them as REDACTED.

import { join, type ConfigProblems } from './reader.js';

/** Headers the gateway or the protocol owns: a value here would break or smuggle requests. */
const OWNED = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);

function owned(name: string, transport: 'http' | 'grpc'): boolean {
  return OWNED.has(name) || name.startsWith('sec-websocket-') || (transport === 'grpc' && name.startsWith('grpc-'));
}

export function readNodeHeaders(
  problems: ConfigProblems,
  headers: Readonly<Record<string, string>>,
  path: string,
  transport: 'http' | 'grpc',
): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    const at = join(path, name);
    const lower = name.toLowerCase();
    if (owned(lower, transport)) {
      problems.add(at, `cannot be set: the gateway writes ${lower} itself`);
      continue;
    }
    if (seen.has(lower)) {
      problems.add(at, 'is given twice (header names are the same in any case)');
      continue;
    }
    seen.add(lower);
    out[lower] = value;
  }
  return out;
}
