// Normalising a request path before routing: doubled slashes collapse, `.` and `..`
// segments (also percent-encoded) are resolved, so a path can never climb out of a
// chain endpoint's prefix or its node's base path. Percent-encoded unreserved
// characters (`%61` is `a`; RFC 3986 §2.3) are decoded, so the path that is matched
// against permissions, labelled, charged and forwarded is the one a node routes.
// Encoded slashes and backslashes are refused: decoding them would change which
// resource is meant. Other encodings (`%20`, `%3A`) stay as they are.

import { GatewayError } from '../../errors.js';

const NEEDS_WORK = /\/\/|\/\.|%|\\/;
const ENCODED_SEPARATOR = /%2f|%5c/i;
/** %XX of ALPHA / DIGIT / "-" / "." / "_" / "~". */
const ENCODED_UNRESERVED = /%(?:3[0-9]|[46][1-9a-f]|[57][0-9a]|2[de]|5f|7e)/gi;

function decodeUnreserved(hex: string): string {
  return String.fromCharCode(parseInt(hex.slice(1), 16));
}

export function normalizePath(path: string, maxLength: number): string {
  if (path.length > maxLength) {
    throw new GatewayError('INVALID_REQUEST', { message: `Request path is longer than ${maxLength} characters` });
  }
  if (!NEEDS_WORK.test(path)) return path;
  if (ENCODED_SEPARATOR.test(path) || path.includes('\\')) {
    throw new GatewayError('INVALID_REQUEST', { message: 'Encoded slashes and backslashes are not allowed in paths' });
  }
  const out: string[] = [];
  for (const raw of path.split('/')) {
    const seg = raw.includes('%') ? raw.replace(ENCODED_UNRESERVED, decodeUnreserved) : raw;
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0) throw new GatewayError('INVALID_REQUEST', { message: 'Path climbs above the root' });
      out.pop();
      continue;
    }
    out.push(seg);
  }
  const trailing = path.endsWith('/') && out.length > 0 ? '/' : '';
  return `/${out.join('/')}${trailing}`;
}
