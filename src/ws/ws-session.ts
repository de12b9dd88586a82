// One client's WebSocket connection to a chain endpoint, after its upgrade was
// authenticated: every message is a JSON-RPC request routed, limited and counted
// like an HTTP one; subscribe and unsubscribe calls go to the endpoint's
// subscription hub. The connection keeps the key's hash, never the key, and ends
// when the key stops being valid, the client is too slow, or its node is gone.

import type { IncomingHttpHeaders } from 'node:http';
import type { RawData, WebSocket } from 'ws';
import { keyState, type KeyMatch, type KeyRecord } from '../auth/key-store.js';
import type { CallAccess } from '../calls/access.js';
import { answerJsonRpc, type OwnCalls } from '../calls/jsonrpc-calls.js';
import { newOutcome, outcomeOf, recordRequest, type RequestOutcome } from '../calls/request-record.js';
import type { ChainRuntime } from '../chain-runtime.js';
import type { TierConfig } from '../config/types.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { requestErrorText } from '../http/answers.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Call, InboundRequest } from '../plugin.js';
import type { ItemResult } from '../pool/forwarder.js';
import type { Subscriber } from './subscription-hub.js';

/** Past this much unsent data, a client is not reading: it is let go rather than buffered for. */
const SLOW_CLIENT_BYTES = 8 * 1024 * 1024;
/** Calls of one connection being answered at once; more are refused until some finish. */
const MAX_IN_FLIGHT = 256;
const CLOSE_CODES = new Set([1000, 1001, 1006, 1008, 1009, 1011, 1013]);

export interface SessionDeps {
  readonly access: CallAccess;
  /** The chain endpoint's current runtime (a reload may replace it). */
  readonly runtime: (chain: string) => ChainRuntime | undefined;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly requestTimeoutMs: () => number;
  /** Called once when the connection is over, with its close code. */
  readonly ended: (session: WsSession, code: number) => void;
}

export class WsSession implements Subscriber {
  /** Answered the last ping (the sweep drops a connection that did not). */
  alive = true;
  private readonly subs = new Set<string>();
  private subscribing = 0;
  private inFlight = 0;
  private closing = false;
  private seq = 0;
  private markDone: () => void = () => undefined;
  /** Settles once the connection is over and its subscriptions are given back. */
  readonly done = new Promise<void>((resolve) => {
    this.markDone = resolve;
  });

  constructor(
    private readonly ws: WebSocket,
    private readonly deps: SessionDeps,
    readonly id: string,
    readonly chain: string,
    /** SHA-256 of the key the connection was opened with. */
    readonly hash: string,
    private match: KeyMatch,
    private readonly headers: IncomingHttpHeaders,
  ) {
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', () => undefined);
    ws.once('close', (code) => this.ended(code));
  }

  get record(): KeyRecord {
    return this.match.record;
  }

  get subscriptions(): number {
    return this.subs.size;
  }

  /** The store changed this key: keep the new record, or end the connection if it is no longer valid. */
  refresh(match: KeyMatch | undefined): void {
    if (match !== undefined) this.match = match;
    if (match === undefined || !this.valid()) this.close(1008, 'API key revoked or expired');
  }

  valid(): boolean {
    const now = this.deps.now();
    return now < this.match.validUntil && keyState(this.match.record, now) === 'active';
  }

  /** One ping per sweep; also ends connections whose key lapsed (rotation grace, expiry). */
  sweep(): void {
    if (this.closing) return;
    if (!this.alive) {
      this.ws.terminate();
      return;
    }
    if (!this.valid()) return this.close(1008, 'API key revoked or expired');
    if (this.deps.runtime(this.chain) === undefined) return this.close(1001, 'Endpoint removed');
    this.alive = false;
    this.ws.ping();
  }

  deliver(text: string): void {
    if (this.closing) return;
    if (this.ws.bufferedAmount > SLOW_CLIENT_BYTES) return this.close(1008, 'Client too slow to read its notifications');
    this.ws.send(text);
  }

  lost(code: number, reason: string): void {
    this.close(code, reason);
  }

  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.ws.close(code, reason);
    // A client that never answers the closing handshake is cut.
    setTimeout(() => this.ws.terminate(), 2_000).unref();
  }

  private ended(code: number): void {
    this.closing = true;
    const hub = this.deps.runtime(this.chain)?.subscriptions;
    for (const id of this.subs) hub?.unsubscribe(id);
    this.subs.clear();
    this.deps.metrics.wsCloses.inc({ chain: this.chain, code: CLOSE_CODES.has(code) ? String(code) : 'other' });
    this.deps.ended(this, code);
    this.markDone();
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.closing) return;
    if (!this.valid()) return this.close(1008, 'API key revoked or expired');
    const body = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    void this.handle(body, isBinary);
  }

  private async handle(body: Buffer, isBinary: boolean): Promise<void> {
    const started = performance.now();
    const rt = this.deps.runtime(this.chain);
    if (rt === undefined) return this.close(1001, 'Endpoint removed');
    const record = this.match.record;
    const result = newOutcome();
    result.key = record;
    rt.load.inFlight++;
    this.inFlight++;
    try {
      const answer = await this.answer(rt, record, body, isBinary, result);
      if (answer !== null && !this.closing) this.ws.send(answer);
    } catch (err) {
      const e = isGatewayError(err) ? err : new GatewayError('UPSTREAM_FAILED', { cause: err });
      result.outcome = outcomeOf(e);
      if (!this.closing) this.ws.send(requestErrorText(e, 'jsonrpc', undefined, false));
      if (!isGatewayError(err))
        this.deps.logger.error('WebSocket call failed unexpectedly', { chain: rt.name, error: (err as Error).stack ?? String(err) });
    } finally {
      this.inFlight--;
      rt.load.inFlight--;
      recordRequest(this.deps.metrics, this.deps.logger, {
        requestId: `${this.id}:${++this.seq}`,
        chain: rt.name,
        transport: 'ws',
        status: undefined,
        started,
        result,
      });
    }
  }

  private async answer(
    rt: ChainRuntime,
    record: KeyRecord,
    body: Buffer,
    isBinary: boolean,
    result: RequestOutcome,
  ): Promise<string | null> {
    const refuse = (e: GatewayError, parsed?: Parameters<typeof requestErrorText>[2], batch = false): string => {
      result.outcome = outcomeOf(e);
      return requestErrorText(e, 'jsonrpc', parsed, batch);
    };
    if (isBinary) return refuse(new GatewayError('INVALID_REQUEST', { message: 'Send JSON-RPC requests as text messages' }));
    const inbound: InboundRequest = { method: 'POST', path: '/', query: '', headers: this.headers, body };
    const parsed = rt.handler.parse(inbound);
    if (parsed.kind !== 'jsonrpc')
      return refuse(new GatewayError('INVALID_REQUEST', { message: 'WebSocket messages are JSON-RPC requests' }));
    const tier = this.deps.access.tierFor(record, rt);
    if (isGatewayError(tier)) return refuse(tier, parsed.items, parsed.batch);
    if (this.inFlight > MAX_IN_FLIGHT) {
      return refuse(
        new GatewayError('RATE_LIMITED', { message: 'Too many calls in flight on this connection' }),
        parsed.items,
        parsed.batch,
      );
    }
    const deadline = Date.now() + this.deps.requestTimeoutMs();
    const a = await answerJsonRpc(this.deps.access, rt, record, tier, parsed, result, deadline, this.ownCalls(rt, tier));
    return a.body;
  }

  /** Subscribe and unsubscribe calls of the endpoint's plugin, answered here once admitted. */
  private ownCalls(rt: ChainRuntime, tier: TierConfig): OwnCalls | undefined {
    const ws = rt.handler.websocket;
    const hub = rt.subscriptions;
    if (ws === undefined || hub === undefined) return undefined;
    const unsubscribes = Object.values(ws.subscriptions);
    return {
      claims: (call) => ws.subscriptions[call.method] !== undefined || unsubscribes.includes(call.method),
      answer: async (call): Promise<ItemResult> => {
        const unsubscribe = ws.subscriptions[call.method];
        if (unsubscribe === undefined) return this.unsubscribe(call);
        // A notification could never learn its subscription's id.
        if (call.id === undefined) return undefined;
        if (this.subs.size + this.subscribing >= tier.wsSubscriptions) {
          this.deps.metrics.rejections.inc({ chain: rt.name, tier: tier.name, reason: 'subscriptions' });
          return new GatewayError('TOO_MANY_SUBSCRIPTIONS', {
            message: `Subscriptions on this connection are at the tier's limit of ${tier.wsSubscriptions}`,
          });
        }
        this.subscribing++;
        let r: Awaited<ReturnType<typeof hub.subscribe>>;
        try {
          r = await hub.subscribe(this, call, unsubscribe);
        } finally {
          this.subscribing--;
        }
        if (isGatewayError(r)) return r;
        if ('refusal' in r) return `{"jsonrpc":"2.0","id":${call.id},"error":${r.refusal}}`;
        if (this.closing) {
          hub.unsubscribe(r.id);
          return undefined;
        }
        this.subs.add(r.id);
        return `{"jsonrpc":"2.0","id":${call.id},"result":${r.id}}`;
      },
    };
  }

  private unsubscribe(call: Call): ItemResult {
    const target = Array.isArray(call.params) ? (call.params as unknown[])[0] : undefined;
    const id = typeof target === 'string' ? JSON.stringify(target) : undefined;
    const found = id !== undefined && this.subs.delete(id);
    if (found && id !== undefined) this.deps.runtime(this.chain)?.subscriptions?.unsubscribe(id);
    if (call.id === undefined) return undefined;
    // As geth answers an id it does not know.
    return found
      ? `{"jsonrpc":"2.0","id":${call.id},"result":true}`
      : `{"jsonrpc":"2.0","id":${call.id},"error":{"code":-32000,"message":"subscription not found"}}`;
  }
}
