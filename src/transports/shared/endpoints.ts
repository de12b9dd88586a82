// Which chain endpoint a request is for: by Host header, by path prefix, or both
// (a route with both needs both). Longest prefix wins; prefixes match whole path
// segments only, so /hub/rest never captures /hub/rest-archive.

export interface Routed<T> {
  readonly target: T;
  /** The path below the prefix, starting with '/'. */
  readonly rest: string;
}

interface Entry<T> {
  readonly prefix: string;
  readonly host: string | undefined;
  readonly target: T;
}

export class EndpointTable<T> {
  private readonly entries: Entry<T>[];

  constructor(routes: ReadonlyArray<{ path: string | undefined; host: string | undefined; target: T }>) {
    this.entries = routes
      .map((r) => ({ prefix: r.path ?? '', host: r.host, target: r.target }))
      // Longest prefix first; among equal prefixes, host-bound routes first.
      .sort((a, b) => b.prefix.length - a.prefix.length || (a.host === undefined ? 1 : 0) - (b.host === undefined ? 1 : 0));
  }

  get size(): number {
    return this.entries.length;
  }

  match(hostHeader: string | undefined, path: string): Routed<T> | undefined {
    let host = hostHeader?.toLowerCase();
    for (const e of this.entries) {
      if (e.host !== undefined) {
        if (host === undefined) continue;
        if (host !== e.host) {
          // "l1.example.com:8080" matches a route host written without a port.
          const colon = host.lastIndexOf(':');
          if (colon < 0 || e.host.includes(':') || host.slice(0, colon) !== e.host) continue;
          host = host.slice(0, colon);
        }
      }
      if (e.prefix === '') return { target: e.target, rest: path === '' ? '/' : path };
      if (path === e.prefix) return { target: e.target, rest: '/' };
      if (path.startsWith(e.prefix) && path.charCodeAt(e.prefix.length) === 47) {
        return { target: e.target, rest: path.slice(e.prefix.length) };
      }
    }
    return undefined;
  }
}
