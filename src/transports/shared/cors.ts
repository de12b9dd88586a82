// CORS for the traffic endpoints, so pages on other origins can call them: which
// origins an endpoint answers (server.cors, or the chain's own list), the answer to
// a preflight (given without a key: browsers never send one on it), and the headers
// every answer to a page carries so its script can read the answer, errors included,
// and the RateLimit-*, Retry-After and x-request-id headers. Keys are headers, never
// cookies, so credentials are never allowed. A request without Origin costs nothing here.

import { OriginMatcher } from '../../auth/origin-patterns.js';

/** Headers a page's script may read besides the CORS-safelisted ones. */
const EXPOSED = 'ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after, x-request-id, x-cache';
const METHODS = 'GET, POST';
/** Always allowed: the key's header and JSON bodies. */
const BASE_HEADERS = 'apikey, content-type';
/**
 * Request headers a page may also send when its preflight asks: the request id and what
 * browsers add, and those the endpoint's plugin declares its family's clients send
 * (`corsHeaders`: a height header, an SDK's client headers). Nothing else: the gateway
 * reads no other header, and a page needs no other.
 */
const SAFE_HEADERS: ReadonlySet<string> = new Set(['accept', 'accept-language', 'content-language', 'x-request-id']);

const policies = new WeakMap<readonly string[], OriginMatcher>();

/** The origins an endpoint answers, compiled once per config list (a reload brings a new list). */
export function corsPolicy(origins: readonly string[]): OriginMatcher {
  let p = policies.get(origins);
  if (p === undefined) {
    p = new OriginMatcher(origins);
    policies.set(origins, p);
  }
  return p;
}

/** A CORS preflight: OPTIONS with Origin and Access-Control-Request-Method. */
export function isPreflight(method: string | undefined, requestMethod: string | string[] | undefined): boolean {
  return method === 'OPTIONS' && requestMethod !== undefined;
}

/** Add what lets the page at `origin` read this answer, as flat header pairs. */
export function allowOrigin(headers: string[], origin: string): void {
  headers.push('access-control-allow-origin', origin, 'access-control-expose-headers', EXPOSED);
}

/** The allowed request headers: the base ones, and those asked for that are safe (others are left out: the browser then refuses). */
function allowedHeaders(asked: string | string[] | undefined, family: readonly string[]): string {
  if (typeof asked !== 'string' || asked === '') return BASE_HEADERS;
  const extra: string[] = [];
  for (const part of asked.split(',')) {
    const name = part.trim().toLowerCase();
    if ((SAFE_HEADERS.has(name) || family.includes(name)) && !extra.includes(name)) extra.push(name);
  }
  return extra.length === 0 ? BASE_HEADERS : `${BASE_HEADERS}, ${extra.join(', ')}`;
}

/** Headers of a preflight's 204 for an allowed origin; `family`: the request headers the endpoint's plugin declares. */
export function preflightHeaders(
  origin: string,
  askedHeaders: string | string[] | undefined,
  privateNetwork: string | string[] | undefined,
  maxAgeSeconds: number,
  family: readonly string[] = [],
): string[] {
  const h = [
    'access-control-allow-origin',
    origin,
    'access-control-allow-methods',
    METHODS,
    'access-control-allow-headers',
    allowedHeaders(askedHeaders, family),
    'access-control-max-age',
    String(maxAgeSeconds),
    'vary',
    'origin, access-control-request-method, access-control-request-headers',
  ];
  // Chromium asks before a public page may call an address on a private network (Private Network Access).
  if (privateNetwork === 'true') h.push('access-control-allow-private-network', 'true');
  return h;
}
