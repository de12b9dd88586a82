// Where a request comes from, against where its key may be used from: the Origin,
// Referer and User-Agent it sent and the client's address (the peer's, or behind
// server.trustedProxies the address they saw, client-address.ts),
// checked once per request after the key is known and before anything is charged;
// and the contracts a call names (its plugin reads them) against the key's list. A
// refusal is FORBIDDEN saying which restriction, counted by reason.

import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import type { KeyRecord } from '../auth/key-store.js';
import { addressAllowed, userAgentAllowed, type CompiledRestrictions } from '../auth/restrictions.js';
import { GatewayError } from '../errors.js';
import { clientAddress, type TrustedProxies } from './client-address.js';

/** Only what is surely an address or a contract is named in a refusal: never arbitrary client text. */
const SHOWN_CONTRACT = /^0x[0-9a-f]{1,64}$/;

export type RestrictionReason = 'origin' | 'referrer' | 'ip' | 'user_agent' | 'contract';

/** The transports a request comes in by: which of the request's headers a restriction can read depends on it. */
export type Transport = 'http' | 'ws' | 'grpc';

/** FORBIDDEN by a key restriction: the reason says which (an origin refusal gets no CORS headers, so browsers refuse it too). */
export class RestrictedError extends GatewayError {
  constructor(
    readonly reason: RestrictionReason,
    message: string,
    /** The key refused, for the request's log line. */
    readonly key: KeyRecord,
  ) {
    super('FORBIDDEN', { message });
  }
}

/** What identify reads of a request for a restricted key: its headers and the socket it came on. */
export interface RequestSource {
  readonly headers: IncomingHttpHeaders;
  readonly socket: { readonly remoteAddress?: string | undefined } | null | undefined;
}

/** What a restriction compares: the request's own headers and the client's address. */
export interface ClientFacts {
  readonly origin: string | undefined;
  readonly referer: string | undefined;
  readonly userAgent: string | undefined;
  /** The client's address as text; undefined when it could not be read. */
  readonly address: string | undefined;
}

/** One value of a header; a repeated one (joined, or a list over HTTP/2) counts as none. */
function single(v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function clientFacts(source: RequestSource, proxies: TrustedProxies): ClientFacts {
  const h = source.headers;
  return {
    origin: single(h.origin),
    referer: single(h.referer),
    userAgent: single(h['user-agent']),
    address: clientAddress(source.socket?.remoteAddress, h['x-forwarded-for'], proxies),
  };
}

/** Does the key restrict where requests come from (not only the contracts of calls)? */
export function restrictsClients(c: CompiledRestrictions): boolean {
  return c.origins !== undefined || c.referrers !== undefined || c.ips !== undefined || c.userAgents !== undefined;
}

/**
 * The first restriction this request breaks, or undefined. Origins apply to HTTP and
 * WebSocket (browsers send `Origin` on both), referrers to HTTP only (browsers send
 * no `Referer` on WebSocket handshakes), addresses and user agents to every transport;
 * gRPC has no browsers, so neither origins nor referrers apply there.
 */
export function clientRefusal(
  key: KeyRecord,
  c: CompiledRestrictions,
  facts: ClientFacts,
  transport: Transport,
): RestrictedError | undefined {
  const refuse = (reason: RestrictionReason, message: string): RestrictedError => new RestrictedError(reason, message, key);
  if (c.origins !== undefined && transport !== 'grpc') {
    if (facts.origin === undefined) return refuse('origin', 'API key restricted to certain origins: the request has no Origin header');
    if (!c.origins.matches(facts.origin)) return refuse('origin', 'API key not permitted from this origin');
  }
  if (c.referrers !== undefined && transport === 'http') {
    if (facts.referer === undefined) return refuse('referrer', 'API key restricted to certain pages: the request has no Referer header');
    if (!c.referrers.matches(facts.referer)) return refuse('referrer', 'API key not permitted from this page (Referer)');
  }
  if (c.ips !== undefined && !addressAllowed(c.ips, facts.address)) {
    return refuse(
      'ip',
      facts.address !== undefined && isIP(facts.address) !== 0
        ? `API key not permitted from address ${facts.address}`
        : 'API key restricted to certain addresses: the client address could not be read',
    );
  }
  if (c.userAgents !== undefined && !userAgentAllowed(c.userAgents, facts.userAgent)) {
    return refuse('user_agent', 'API key not permitted for this User-Agent');
  }
  return undefined;
}

/** A call naming `targets` (empty: it may reach any contract) against the key's contracts. */
export function contractRefusal(key: KeyRecord, allowed: ReadonlySet<string>, targets: readonly string[]): RestrictedError | undefined {
  const refuse = (message: string): RestrictedError => new RestrictedError('contract', message, key);
  if (targets.length === 0) {
    return refuse('API key restricted to certain contracts: this call names no contract address (or could reach any)');
  }
  for (const t of targets) {
    if (!allowed.has(t)) return refuse(`API key not permitted to call ${SHOWN_CONTRACT.test(t) ? `contract ${t}` : 'this contract'}`);
  }
  return undefined;
}
