// Who is calling, for every transport alike: the key found in the request (header or
// query; gRPC metadata comes in as a header) and taken out of what is forwarded,
// hashed, looked up in the key cache (no promise when it is cached), its last use
// recorded, its tier on the chain endpoint, and where it may be used from (its
// restrictions, checked here once per request). The answer is the principal, or the
// error table's refusal.

import { extractKey, mayHoldKey } from '../auth/extract.js';
import type { KeyCache } from '../auth/key-cache.js';
import { hashKey } from '../auth/key-format.js';
import type { KeyMatch } from '../auth/key-store.js';
import { compiledRestrictions } from '../auth/restrictions.js';
import type { ChainRuntime } from '../chain/runtime.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { CallAccess } from './access.js';
import type { Principal } from './principal.js';
import type { TrustedProxies } from './client-address.js';
import { clientFacts, clientRefusal, restrictsClients, type RequestSource, type Transport } from './restrict.js';

export interface Identified {
  readonly principal: Principal;
  readonly match: KeyMatch;
  /** SHA-256 of the presented key: long-lived connections keep it, never the key. */
  readonly hash: string;
  /** The query without any apikey parameter: the only form of it that may be forwarded. */
  readonly query: string;
}

export interface IdentifyDeps {
  readonly keys: KeyCache;
  readonly access: CallAccess;
  /** The clock of key validity and last use (tests move it). */
  readonly now: () => number;
  /** Proxies in front of the listeners (server.trustedProxies), read per request so a reload applies. */
  readonly trustedProxies: () => TrustedProxies;
  readonly metrics: Metrics;
  /** Where last uses go: the key store, or a cluster's primary (the one writer of the memory hot state's record). */
  touch(keyId: string, at: number): void;
}

export type Identity = Identified | GatewayError;

/** The last key header a connection sent and its hash: what a repeat of it hashes to. */
interface SeenKey {
  readonly header: string;
  readonly hash: string;
}

export class Identifier {
  /**
   * Keep-alive clients send the same key on every request: each connection's last key
   * header is remembered with its hash, so a repeat costs a string comparison, not a
   * SHA-256. Only the hashing is skipped: the key cache is asked every time, so a
   * revocation applies to the connection's next request as to any other.
   */
  private readonly seen = new WeakMap<object, SeenKey>();

  constructor(private readonly deps: IdentifyDeps) {}

  /** Record a use of the key: every transport's, each request and each WebSocket message, goes through here. */
  touch(keyId: string, at = this.deps.now()): void {
    this.deps.touch(keyId, at);
  }

  /**
   * `source`: the request's headers (the key in `apikey`; gRPC metadata as headers) and
   * socket, read further only for keys with restrictions; `query`: the raw query
   * string without '?' ('' when none).
   */
  identify(chain: ChainRuntime, source: RequestSource, query: string, transport: Transport): Identity | Promise<Identity> {
    let hash: string;
    let rest = query;
    const header = source.headers.apikey;
    const socket = source.socket;
    const seen = socket == null ? undefined : this.seen.get(socket);
    if (seen !== undefined && seen.header === header && !mayHoldKey(query)) hash = seen.hash;
    else {
      try {
        const found = extractKey(header, query);
        hash = hashKey(found.key);
        rest = found.query;
      } catch (err) {
        return isGatewayError(err) ? err : new GatewayError('INVALID_KEY');
      }
      // Only a key given alone in its header is remembered: one in the query is taken from the query each time.
      if (socket != null && typeof header === 'string' && !mayHoldKey(query)) this.seen.set(socket, { header, hash });
    }
    let match: KeyMatch | undefined;
    try {
      match = this.deps.keys.peekHash(hash);
    } catch (err) {
      return err as GatewayError;
    }
    if (match !== undefined) return this.principal(chain, match, hash, rest, source, transport);
    return this.deps.keys.lookupHash(hash).then(
      (m) => this.principal(chain, m, hash, rest, source, transport),
      (err: unknown) => (isGatewayError(err) ? err : new GatewayError('UNAVAILABLE', { cause: err })),
    );
  }

  private principal(
    chain: ChainRuntime,
    match: KeyMatch,
    hash: string,
    query: string,
    source: RequestSource,
    transport: Transport,
  ): Identity {
    const { record } = match;
    this.touch(record.id);
    const tier = this.deps.access.tierFor(record, chain);
    if (isGatewayError(tier)) return tier;
    // A key without restrictions costs one property read here.
    if (record.restrictions !== undefined) {
      const c = compiledRestrictions(record.restrictions);
      const refused = restrictsClients(c)
        ? clientRefusal(record, c, clientFacts(source, this.deps.trustedProxies()), transport)
        : undefined;
      if (refused !== undefined) {
        this.deps.metrics.restricted.inc({ chain: chain.name, reason: refused.reason });
        return refused;
      }
    }
    return { principal: { record, tier }, match, hash, query };
  }
}
