// A simulated provider node: one that answers only requests carrying its credentials,
// as hosted node providers do — header values (an Authorization or API-key header), a
// token in the URL path (the node serves below that base path) and query parameters.
// A request without them gets 401 (UNAUTHENTICATED over gRPC), like a provider's.

/** What a node requires of every request; absent parts are not required. */
export interface DevnetCredentials {
  /** Header name (any case) → the exact value required. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The node serves only below this path ("/v2/<token>"); requests elsewhere are refused. */
  readonly basePath?: string;
  /** Query parameters every request must carry (the value exactly). */
  readonly query?: Readonly<Record<string, string>>;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

export function headersMatch(required: DevnetCredentials | undefined, headers: Headers): boolean {
  for (const [name, value] of Object.entries(required?.headers ?? {})) {
    if (headers[name.toLowerCase()] !== value) return false;
  }
  return true;
}

/**
 * The request target (path and query) as the node's family reads it: the base path
 * and the required parameters taken off; undefined when the credentials are missing.
 */
export function admit(required: DevnetCredentials | undefined, target: string, headers: Headers): string | undefined {
  if (required === undefined) return target;
  if (!headersMatch(required, headers)) return undefined;
  let path = target;
  const base = required.basePath?.replace(/\/+$/, '') ?? '';
  if (base !== '') {
    const next = path.charAt(base.length);
    if (!path.startsWith(base) || (next !== '' && next !== '/' && next !== '?')) return undefined;
    path = path.slice(base.length);
    if (!path.startsWith('/')) path = `/${path}`;
  }
  const needed = Object.entries(required.query ?? {});
  if (needed.length === 0) return path;
  const q = path.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : path.slice(q + 1));
  for (const [name, value] of needed) {
    if (params.get(name) !== value) return undefined;
    params.delete(name);
  }
  const rest = params.toString();
  return `${q < 0 ? path : path.slice(0, q)}${rest === '' ? '' : `?${rest}`}`;
}
