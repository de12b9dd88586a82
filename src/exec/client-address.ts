// Who a request came from, for key restrictions (a key's `ips`) and the access log:
// the peer's address, or, when the peer is a proxy the operator trusts
// (server.trustedProxies), the address that proxy put in X-Forwarded-For. The header is read from the right: each trusted hop appends the
// address it saw, so the first address from the right that is not a trusted proxy is
// the client (anything further left was written by the client and proves nothing).

import { BlockList, isIP } from 'node:net';

export class TrustedProxies {
  private readonly list = new BlockList();
  readonly empty: boolean;

  /** `entries`: IP addresses and CIDR ranges ("10.0.0.0/8", "::1"), checked by the config. */
  constructor(entries: readonly string[]) {
    for (const e of entries) {
      const [address, bits] = e.split('/') as [string, string | undefined];
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.list.addAddress(address, family);
      else this.list.addSubnet(address, Number(bits), family);
    }
    this.empty = entries.length === 0;
  }

  trusts(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    return this.list.check(address, family === 6 ? 'ipv6' : 'ipv4');
  }
}

/** An IPv4-mapped IPv6 address (::ffff:1.2.3.4) as the IPv4 address it is. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** An X-Forwarded-For entry's address: brackets and ports some proxies add are dropped. */
function bare(entry: string): string {
  const e = entry.trim();
  if (e.startsWith('[')) {
    const end = e.indexOf(']');
    return end < 0 ? e : e.slice(1, end);
  }
  const colon = e.indexOf(':');
  // One colon: IPv4 with a port; more: an IPv6 address.
  return colon > 0 && e.indexOf(':', colon + 1) < 0 ? e.slice(0, colon) : e;
}

/**
 * The client's address: the peer's, unless the peer is trusted and the request carries
 * X-Forwarded-For; then the right-most forwarded address that is not itself trusted
 * (an entry that is not an IP address stops the walk: the hop before it is the client).
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies,
): string | undefined {
  if (peer === undefined) return undefined;
  let client = plain(peer);
  if (trusted.empty || forwardedFor === undefined || !trusted.trusts(client)) return client;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = plain(bare(hops[i] as string));
    if (isIP(hop) === 0) break;
    client = hop;
    if (!trusted.trusts(hop)) break;
  }
  return client;
}
