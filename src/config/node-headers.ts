// A node's `headers`: what a provider's node wants on every call (Authorization, an API
// key header), sent on JSON-RPC, REST and URI calls, WebSocket handshakes and as gRPC
// metadata. Names are checked and kept in lower case; values are secrets: no problem
// message ever repeats one, and everything that prints a node shows them as REDACTED.

import { join, type Reader } from './reader.js';

/** An HTTP token (RFC 9110), the only shape a header name may have. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII, spaces and tabs: no CR, LF or NUL can split a request. */
const VALUE = /^[\t\x20-\x7e]+$/;

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

export function readNodeHeaders(r: Reader, v: unknown, path: string, transport: 'http' | 'grpc'): Readonly<Record<string, string>> {
  const tree = r.named(v, path);
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  if (tree === undefined) return out;
  for (const [name, value] of Object.entries(tree)) {
    const at = join(path, name);
    const lower = name.toLowerCase();
    if (!TOKEN.test(name)) {
      r.problems.add(at, "is not a valid header name (letters, digits and !#$%&'*+.^_`|~- only)");
      continue;
    }
    if (owned(lower, transport)) {
      r.problems.add(at, `cannot be set: the gateway writes ${lower} itself`);
      continue;
    }
    if (seen.has(lower)) {
      r.problems.add(at, 'is given twice (header names are the same in any case)');
      continue;
    }
    seen.add(lower);
    // YAML reads `x-api-version: 2` as a number: it is sent as written.
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    if (typeof text !== 'string' || text === '') {
      r.problems.add(at, 'must be a non-empty string, e.g. "Bearer ${NODE_TOKEN}"');
      continue;
    }
    if (!VALUE.test(text)) {
      r.problems.add(at, 'must hold printable ASCII only (no line breaks or control characters; the value is not repeated here)');
      continue;
    }
    out[lower] = text;
  }
  return out;
}
