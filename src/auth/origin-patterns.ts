// Origins as keys and the CORS config list them: an exact origin
// (`https://app.example.com`, `http://localhost:5173`) or every subdomain of a domain
// (`https://*.example.com`), written in one canonical form (lower case, no default
// port, no trailing slash), and matched against the `Origin` a browser sends without
// any regex: an exact origin is a set lookup, a wildcard a prefix, a suffix and a
// check that what lies between is host labels (so no port or path can hide there).

const SCHEME = /^[a-z][a-z0-9+.-]*$/;
const HOST = /^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/;
const LABELS = /^([a-z0-9-]+\.)*[a-z0-9-]+$/;
const PORT = /^[1-9][0-9]{0,4}$/;
const DEFAULT_PORT: Readonly<Record<string, string>> = { http: '80', https: '443', ws: '80', wss: '443' };
const NOT_ORIGIN_PART = /[/?#@\s]/;
const NOT_PATH_PART = /[\s#]/;
const EXAMPLE = 'like https://app.example.com, http://localhost:5173 or https://*.example.com';

/**
 * The canonical form of an origin pattern, or throws an Error saying what is wrong
 * (the caller names the field). `null` and paths are refused: any sandboxed page sends
 * `Origin: null`, and browsers never send a path.
 */
export function canonicalOrigin(input: string): string {
  let text = input.trim().toLowerCase();
  if (text.endsWith('/')) text = text.slice(0, -1);
  if (text === 'null') throw new Error('"null" cannot be allowed: every sandboxed page and local file sends it');
  const sep = text.indexOf('://');
  const scheme = sep < 0 ? '' : text.slice(0, sep);
  const rest = sep < 0 ? '' : text.slice(sep + 3);
  if (!SCHEME.test(scheme) || rest === '') throw new Error(`"${input}" is not an origin (${EXAMPLE})`);
  if (NOT_ORIGIN_PART.test(rest)) throw new Error(`"${input}" is not an origin: an origin has no path, query or user (${EXAMPLE})`);
  const wild = rest.startsWith('*.');
  const hostPort = wild ? rest.slice(2) : rest;
  const colon = hostPort.startsWith('[') ? hostPort.indexOf(']:') + 1 : hostPort.lastIndexOf(':');
  const host = colon > 0 ? hostPort.slice(0, colon) : hostPort;
  const port = colon > 0 ? hostPort.slice(colon + 1) : '';
  if (!HOST.test(host) || (wild && host.startsWith('['))) throw new Error(`"${input}" is not an origin (${EXAMPLE})`);
  if (wild && !host.includes('.'))
    throw new Error(`"${input}" would allow every site under a top-level domain: name a domain, like https://*.example.com`);
  if (port !== '' && (!PORT.test(port) || Number(port) > 65535)) throw new Error(`"${input}" has a port outside 1 to 65535`);
  const shownPort = port === '' || DEFAULT_PORT[scheme] === port ? '' : `:${port}`;
  return `${scheme}://${wild ? '*.' : ''}${host}${shownPort}`;
}

/** A list of canonical origin patterns, ready to match. */
export class OriginMatcher {
  private readonly exact = new Set<string>();
  /** Wildcards as [`https://`, `.example.com:8443`]: prefix and suffix around the subdomain labels. */
  private readonly wild: Array<readonly [string, string]> = [];
  readonly any: boolean;

  /** `patterns` are canonical (canonicalOrigin), or `*` for any origin. */
  constructor(patterns: readonly string[]) {
    let any = false;
    for (const p of patterns) {
      if (p === '*') any = true;
      else if (p.includes('://*.')) {
        const at = p.indexOf('://*.');
        this.wild.push([p.slice(0, at + 3), p.slice(at + 4)]);
      } else this.exact.add(p);
    }
    this.any = any;
  }

  /** Does the `Origin` a request sent match? Case does not matter; `null` never matches a list. */
  matches(origin: string): boolean {
    if (this.any) return true;
    if (this.exact.has(origin)) return true;
    const o = origin.toLowerCase();
    if (o !== origin && this.exact.has(o)) return true;
    for (const [prefix, suffix] of this.wild) {
      if (o.length <= prefix.length + suffix.length || !o.startsWith(prefix) || !o.endsWith(suffix)) continue;
      if (LABELS.test(o.slice(prefix.length, o.length - suffix.length))) return true;
    }
    return false;
  }
}

/**
 * A referrer pattern: an origin pattern and a path prefix (`https://app.example.com/`,
 * `https://*.example.com/shop/`). Canonical form, or throws an Error saying what is wrong.
 */
export function canonicalReferrer(input: string): string {
  const text = input.trim();
  const sep = text.indexOf('://');
  const slash = sep < 0 ? -1 : text.indexOf('/', sep + 3);
  const origin = slash < 0 ? text : text.slice(0, slash);
  const path = slash < 0 ? '/' : text.slice(slash);
  let canonical: string;
  try {
    canonical = canonicalOrigin(origin);
  } catch {
    throw new Error(`"${input}" is not a page address prefix (like https://app.example.com/ or https://*.example.com/shop/)`);
  }
  if (NOT_PATH_PART.test(path)) throw new Error(`"${input}" is not a page address prefix: no spaces or fragments`);
  // Encoded as browsers send it (what a Referer's path is compared in).
  const url = new URL(`http://x${path}`);
  return `${canonical}${url.pathname}${url.search}`;
}

/** Referrer patterns, ready to match the `Referer` a request sent. */
export class ReferrerMatcher {
  private readonly rules: Array<{ readonly origin: OriginMatcher; readonly path: string }>;

  constructor(patterns: readonly string[]) {
    this.rules = patterns.map((p) => {
      const slash = p.indexOf('/', p.indexOf('://') + 3);
      return { origin: new OriginMatcher([p.slice(0, slash)]), path: p.slice(slash) };
    });
  }

  matches(referer: string): boolean {
    let url: URL;
    try {
      url = new URL(referer);
    } catch {
      return false;
    }
    // URL puts the origin in canonical form (no default port, lower case) and the path in encoded form.
    const origin = `${url.protocol}//${url.host}`;
    const rest = `${url.pathname}${url.search}`;
    for (const r of this.rules) if (r.origin.matches(origin) && rest.startsWith(r.path)) return true;
    return false;
  }
}
