// Client addresses and the ranges a key may be used from: IPv4 and IPv6 addresses and
// CIDR ranges read into 16 bytes (an IPv4 address as its IPv4-mapped IPv6 form, so
// `10.0.0.0/8` matches `::ffff:10.1.2.3` as a dual-stack socket reports it), checked
// for bits past their prefix, and matched byte by byte. No regex on the request path.

import { isIPv4, isIPv6 } from 'node:net';

/** One range: the first address's 16 bytes and how many leading bits must match. */
export interface IpRange {
  readonly bytes: Uint8Array;
  readonly bits: number;
}

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;
const DECIMAL = /^(0|[1-9][0-9]{0,2})$/;

function v4Bytes(text: string, out: Uint8Array, at: number): boolean {
  const parts = text.split('.');
  if (parts.length !== 4) return false;
  for (let i = 0; i < 4; i++) {
    const p = parts[i] as string;
    // Leading zeros are refused: some stacks read "010" as octal.
    if (!DECIMAL.test(p)) return false;
    const n = Number(p);
    if (n > 255) return false;
    out[at + i] = n;
  }
  return true;
}

/** Bytes of an address `isIPv6` accepted: groups, one `::` gap, an optional IPv4 tail. */
function v6Bytes(text: string, out: Uint8Array): boolean {
  let s = text;
  let groups = 8;
  if (s.includes('.')) {
    const colon = s.lastIndexOf(':');
    if (!v4Bytes(s.slice(colon + 1), out, 12)) return false;
    s = s.slice(0, colon + 1);
    if (!s.endsWith('::')) s = s.slice(0, -1);
    groups = 6;
  }
  const gap = s.indexOf('::');
  const head = gap < 0 ? s.split(':') : s.slice(0, gap) === '' ? [] : s.slice(0, gap).split(':');
  const tail = gap < 0 ? [] : s.slice(gap + 2) === '' ? [] : s.slice(gap + 2).split(':');
  if (gap < 0 ? head.length !== groups : head.length + tail.length >= groups) return false;
  const write = (g: string, i: number): boolean => {
    if (!HEX_GROUP.test(g)) return false;
    const n = parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
    return true;
  };
  for (let i = 0; i < head.length; i++) if (!write(head[i] as string, i)) return false;
  for (let i = 0; i < tail.length; i++) if (!write(tail[i] as string, groups - tail.length + i)) return false;
  return true;
}

/** An address as 16 bytes (IPv4 mapped into IPv6), or undefined when it is not one. A zone (`%eth0`) is ignored. */
export function ipBytes(text: string): Uint8Array | undefined {
  const out = new Uint8Array(16);
  if (isIPv4(text)) {
    out[10] = 0xff;
    out[11] = 0xff;
    return v4Bytes(text, out, 12) ? out : undefined;
  }
  const zone = text.indexOf('%');
  const bare = zone < 0 ? text : text.slice(0, zone);
  if (!isIPv6(bare)) return undefined;
  return v6Bytes(bare, out) ? out : undefined;
}

/**
 * A range as a key restriction lists it: an address (`203.0.113.7`, `2001:db8::1`) or
 * a CIDR range (`10.0.0.0/8`, `2001:db8::/32`). Throws an Error whose message says
 * what is wrong (the caller names the field).
 */
export function parseRange(text: string): IpRange {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const v4 = isIPv4(address);
  // A zone (`%eth0`) names an interface of one host: no range of clients.
  const bytes = address.includes('%') ? undefined : ipBytes(address);
  if (bytes === undefined) throw new Error(`"${text}" is not an IP address or CIDR range (like 203.0.113.7, 10.0.0.0/8 or 2001:db8::/32)`);
  const max = v4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!DECIMAL.test(p) || Number(p) > max) throw new Error(`"${text}" has a prefix length outside 0 to ${max}`);
    prefix = Number(p);
  }
  const bits = v4 ? 96 + prefix : prefix;
  for (let bit = bits; bit < 128; bit++) {
    if ((bytes[bit >> 3] as number) & (0x80 >> (bit & 7))) {
      throw new Error(`"${text}" has address bits set past its /${prefix} prefix: write the range's first address`);
    }
  }
  return { bytes, bits };
}

/** Does the address (16 bytes) fall in the range? */
export function inRange(address: Uint8Array, range: IpRange): boolean {
  const { bytes, bits } = range;
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (address[i] !== bytes[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((address[whole] as number) & mask) === ((bytes[whole] as number) & mask);
}
