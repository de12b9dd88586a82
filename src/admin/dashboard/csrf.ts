// Cross-site request forgery checks for every state-changing dashboard request:
// the browser must say the request comes from the dashboard's own origin (Origin,
// and Sec-Fetch-Site when sent), and, once signed in, the request must carry the
// session's CSRF token in `x-csrf-token`. Pure functions over headers, so they are
// tested without a server; the routes decide when to call them.

import type { IncomingHttpHeaders } from 'node:http';
import { sameSecret } from '../../auth/secrets.js';

export const CSRF_HEADER = 'x-csrf-token';

export type CsrfVerdict = { readonly ok: true } | { readonly ok: false; readonly message: string };

const OK: CsrfVerdict = { ok: true };

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Same-origin check. A browser sends Origin on every POST and (modern ones)
 * Sec-Fetch-Site; a request with neither is not from our page and is refused too.
 */
export function checkOrigin(headers: IncomingHttpHeaders, allowed: readonly string[]): CsrfVerdict {
  const site = one(headers['sec-fetch-site']);
  const origin = one(headers.origin);
  if (site !== undefined && site !== 'same-origin') return { ok: false, message: `cross-site request refused (Sec-Fetch-Site: ${site})` };
  if (origin !== undefined) {
    return allowed.includes(origin.toLowerCase())
      ? OK
      : { ok: false, message: 'cross-origin request refused (Origin does not match the dashboard)' };
  }
  if (site === undefined)
    return { ok: false, message: 'request refused: no Origin or Sec-Fetch-Site header (send it from the dashboard page)' };
  return OK;
}

/** The session's token, compared in constant time. */
export function checkToken(headers: IncomingHttpHeaders, expected: string): CsrfVerdict {
  const given = one(headers[CSRF_HEADER]);
  if (given === undefined || given === '') return { ok: false, message: `missing CSRF token: send the session's token in ${CSRF_HEADER}` };
  return sameSecret(given, expected) ? OK : { ok: false, message: `wrong CSRF token in ${CSRF_HEADER}` };
}
