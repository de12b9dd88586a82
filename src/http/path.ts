// Normalising a request path before routing: doubled slashes collapse, `.` and `..`
// segments (also percent-encoded) are resolved, so a path can never climb out of a
// chain endpoint's prefix or its node's base path. Encoded slashes and backslashes
// are refused: decoding them would change which resource is meant.

import { GatewayError } from '../errors.js';

const NEEDS_WORK = /\/\/|\/\.|%|\\/;
const ENCODED_SEPARATOR = /%2f|%5c/i;
const ENCODED_DOT = /%2e/gi;

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
    const seg = raw.includes('%') ? raw.replace(ENCODED_DOT, '.') : raw;
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0) throw new GatewayError('INVALID_REQUEST', { message: 'Path climbs above the root' });
      out.pop();
      continue;
    }
    out.push(raw);
  }
  const trailing = path.endsWith('/') && out.length > 0 ? '/' : '';
  return `/${out.join('/')}${trailing}`;
}
