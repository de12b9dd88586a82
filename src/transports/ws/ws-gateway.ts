// WebSocket access on the traffic listener: an upgrade to a chain endpoint's path is
// checked for its page's origin (the endpoint's CORS origins: browsers send Origin on
// every upgrade), authenticated (key in the `apikey` query parameter or header, with
// its restrictions), permitted and counted against the tier's connection caps (the
// key's, and its account's over all its keys) before it completes; anything refused
// gets an HTTP answer in the error table's shape instead.
// Open connections are pinged, rechecked when their key changes in the store, and
// closed on shutdown.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { KeyCache } from '../../auth/key-cache.js';
import type { KeyStore, StoreChange } from '../../auth/key-store.js';
import type { ChainRuntime } from '../../chain/runtime.js';
import type { ServerConfig, TierConfig } from '../../config/types.js';
import type { CallAccess } from '../../exec/access.js';
import type { CallPath } from '../../exec/call-path.js';
import type { Identifier } from '../../exec/identify.js';
import { clientFacts } from '../../exec/restrict.js';
import { outcomeOf, traceIdOf } from '../../exec/request-record.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { corsPolicy } from '../shared/cors.js';
import { clientAddress, type TrustedProxies } from '../../exec/client-address.js';
import type { EndpointTable } from '../shared/endpoints.js';
import { normalizePath } from '../shared/path.js';
import { refuseSocket } from '../shared/raw-refusal.js';
import type { Logger } from '../../ops/log.js';
import type { Metrics, WsGauges } from '../../ops/metrics/metrics.js';
import type { UsageRollup } from '../../quota/usage-rollup.js';
import { accountConnections, type ConnectionSlots } from '../../quota/connection-slots.js';
import type { Tracing } from '../../ops/trace/tracing.js';
import { WsSession } from './ws-session.js';

export interface WsGatewayDeps {
  readonly endpoints: () => EndpointTable<ChainRuntime>;
  readonly runtime: (chain: string) => ChainRuntime | undefined;
  readonly identifier: Identifier;
  readonly keys: KeyCache;
  /** Key changes only: last uses are recorded through the identifier. */
  readonly store: Pick<KeyStore, 'onChange'>;
  readonly slots: ConnectionSlots;
  readonly access: CallAccess;
  readonly path: CallPath;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly draining: () => boolean;
  /** Server limits as they are now, read when used, so a reload's apply to the next connection, message and sweep. */
  readonly limits: () => ServerConfig;
  /** Proxies whose X-Forwarded-For names the client in request log lines. */
  readonly trustedProxies: () => TrustedProxies;
  /** Spans of WebSocket messages; off when absent. */
  readonly tracing?: Tracing;
  /** Usage history of each call (usage.*); absent when the store keeps none. */
  readonly usage?: UsageRollup;
}

export class WsGateway {
  private readonly wss: WebSocketServer;
  private readonly sessions = new Set<WsSession>();
  private readonly perChain = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly deps: WsGatewayDeps) {
    this.wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      clientTracking: false,
      maxPayload: deps.limits().wsMaxMessageBytes,
    });
    deps.store.onChange((change) => this.recheck(change));
    deps.metrics.watchWs(() => this.gauges());
    this.schedule();
  }

  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => undefined);
      this.upgrade(req, socket, head).catch((err: unknown) => {
        this.deps.logger.error('WebSocket upgrade failed unexpectedly', { error: (err as Error).stack ?? String(err) });
        refuseSocket(socket, new GatewayError('UNAVAILABLE'), 'jsonrpc');
      });
    });
  }

  get connections(): number {
    return this.sessions.size;
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const { deps } = this;
    const limits = deps.limits();
    if (deps.draining() || this.stopped) {
      return refuseSocket(
        socket,
        new GatewayError('UNAVAILABLE', { message: 'Gateway is shutting down', headers: { 'retry-after': '1' } }),
        'jsonrpc',
      );
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path: string;
    try {
      path = normalizePath(q < 0 ? url : url.slice(0, q), limits.maxPathLength);
    } catch (err) {
      return refuseSocket(socket, err as GatewayError, 'rest');
    }
    const routed = deps.endpoints().match(req.headers.host, path);
    const chain = routed?.target;
    if (chain === undefined || routed?.rest !== '/' || chain.subscriptions === undefined) {
      return refuseSocket(socket, new GatewayError('ENDPOINT_NOT_FOUND', { message: 'No WebSocket endpoint at this address' }), 'rest');
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !corsPolicy(chain.config.cors.origins).matches(origin)) {
      return this.refused(
        socket,
        chain,
        new GatewayError('FORBIDDEN', { message: 'This endpoint does not answer pages from this origin' }),
      );
    }
    // What the key's restrictions are checked against, now and whenever the key changes.
    const client = clientFacts(req, deps.trustedProxies());
    let who = deps.identifier.identify(chain, req, q < 0 ? '' : url.slice(q + 1), 'ws');
    delete req.headers.apikey;
    if (who instanceof Promise) who = await who;
    if (isGatewayError(who)) return this.refused(socket, chain, who);
    const { match, hash } = who;
    const { tier } = who.principal;
    const slot = randomUUID();
    const keyId = match.record.id;
    let taken: boolean;
    try {
      taken = await deps.slots.acquire(keyId, slot, tier.wsConnections);
    } catch (err) {
      return this.refused(socket, chain, err);
    }
    if (!taken)
      return this.tooMany(socket, chain, tier, `WebSocket connections of this key are at its tier's limit of ${tier.wsConnections}`);
    // The account's cap over all its keys, so more keys buy no more connections.
    const accountCap = tier.account.wsConnections ?? Infinity;
    const accountSet = accountCap === Infinity ? undefined : accountConnections(match.record.account, tier);
    const accountSlot = `${slot}/account`;
    if (accountSet !== undefined) {
      try {
        taken = await deps.slots.acquire(accountSet, accountSlot, accountCap);
      } catch (err) {
        deps.slots.release(keyId, slot);
        return this.refused(socket, chain, err);
      }
      if (!taken) {
        deps.slots.release(keyId, slot);
        return this.tooMany(socket, chain, tier, `WebSocket connections of this account are at its tier's limit of ${accountCap}`);
      }
    }
    const release = (): void => {
      deps.slots.release(keyId, slot);
      if (accountSet !== undefined) deps.slots.release(accountSet, accountSlot);
    };
    // The client may have gone while the key was looked up.
    if (socket.destroyed || this.stopped) {
      release();
      socket.destroy();
      return;
    }
    // Read now, as the connection is made: a reload applies to the next one.
    this.wss.options.maxPayload = deps.limits().wsMaxMessageBytes;
    // ws answers a malformed handshake itself (400) and never calls back: the slot goes back then.
    let upgraded = false;
    socket.once('close', () => {
      if (!upgraded) release();
    });
    const traced = deps.tracing?.on === true ? deps.tracing.messages(req.headers) : undefined;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      upgraded = true;
      const session = new WsSession(
        ws,
        {
          access: deps.access,
          path: deps.path,
          slots: deps.slots,
          touch: (id, at) => deps.identifier.touch(id, at),
          restricted: (reason) => deps.metrics.restricted.inc({ chain: chain.name, reason }),
          runtime: deps.runtime,
          metrics: deps.metrics,
          logger: deps.logger,
          usage: deps.usage,
          now: deps.now,
          requestTimeoutMs: () => deps.limits().requestTimeoutMs,
          maxBufferedBytes: () => deps.limits().wsMaxBufferedBytes,
          peer: {
            address: clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trustedProxies()),
            userAgent: req.headers['user-agent'],
            traceId: traceIdOf(req.headers.traceparent),
          },
          traced,
          ended: (s, code) => {
            this.sessions.delete(s);
            this.perChain.set(s.chain, (this.perChain.get(s.chain) ?? 1) - 1);
            release();
            deps.logger.info('websocket closed', { event: 'ws_close', connection: s.id, chain: s.chain, keyId: s.record.id, code });
          },
        },
        slot,
        chain.name,
        hash,
        match,
        client,
      );
      this.sessions.add(session);
      this.perChain.set(chain.name, (this.perChain.get(chain.name) ?? 0) + 1);
      deps.logger.info('websocket opened', {
        event: 'ws_open',
        connection: slot,
        chain: chain.name,
        key: match.record.prefix,
        keyId: match.record.id,
      });
    });
  }

  /** A connection over a key's or an account's cap: 429 TOO_MANY_CONNECTIONS, counted as a rejection. */
  private tooMany(socket: Duplex, chain: ChainRuntime, tier: TierConfig, message: string): void {
    this.deps.metrics.rejections.inc({ chain: chain.name, tier: tier.name, reason: 'connections' });
    this.refused(socket, chain, new GatewayError('TOO_MANY_CONNECTIONS', { message }));
  }

  private refused(socket: Duplex, chain: ChainRuntime, err: unknown): void {
    const e = isGatewayError(err) ? err : new GatewayError('UNAVAILABLE', { cause: err });
    this.deps.metrics.requests.inc({ chain: chain.name, method: 'other', outcome: outcomeOf(e), transport: 'ws' });
    refuseSocket(socket, e, chain.handler.http?.errorStyle, chain.rpc);
  }

  /** A key changed in the store: its connections take the new record, or close if it no longer works. */
  private recheck(change: StoreChange): void {
    const all = 'all' in change;
    const hashes = all ? undefined : new Set(change.hashes);
    for (const s of this.sessions) {
      if (!all && hashes?.has(s.hash) !== true) continue;
      this.deps.keys.lookupHash(s.hash).then(
        (m) => s.refresh(m),
        (err: unknown) => {
          // A store that is away says nothing about the key: keep serving it.
          if (isGatewayError(err) && err.code === 'INVALID_KEY') s.refresh(undefined);
        },
      );
    }
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      for (const s of this.sessions) s.sweep();
      for (const rt of this.runtimes()) rt.subscriptions?.sweep();
      if (!this.stopped) this.schedule();
    }, this.deps.limits().wsPingIntervalMs).unref();
  }

  private runtimes(): ChainRuntime[] {
    const seen: ChainRuntime[] = [];
    for (const name of this.perChain.keys()) {
      const rt = this.deps.runtime(name);
      if (rt !== undefined) seen.push(rt);
    }
    return seen;
  }

  private gauges(): WsGauges[] {
    return this.runtimes().map((rt) => ({
      chain: rt.name,
      connections: this.perChain.get(rt.name) ?? 0,
      subscriptions: rt.subscriptions?.subscriptions ?? 0,
      nodeSubscriptions: rt.subscriptions?.nodeSubscriptions ?? 0,
    }));
  }

  /** Shutdown: every connection is told the gateway is going away (1001). */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const sessions = [...this.sessions];
    for (const s of sessions) s.close(1001, 'Gateway shutting down');
    await Promise.all(sessions.map((s) => s.done));
    this.wss.close();
  }
}
