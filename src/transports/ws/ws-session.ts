// One client's WebSocket connection to a chain endpoint, after its upgrade was
// authenticated: every message is a JSON-RPC request routed, limited and counted
// like an HTTP one; subscribe and unsubscribe calls go to the endpoint's
// subscription hub. The connection keeps the key's hash, never the key, and ends
// when the key stops being valid or its restrictions stop allowing this client, the
// client is too slow, or its node is gone.

import type { RawData, WebSocket } from 'ws';
import { keyState, type KeyMatch, type KeyRecord } from '../../auth/key-store.js';
import { compiledRestrictions } from '../../auth/restrictions.js';
import type { ChainRuntime } from '../../chain/runtime.js';
import type { TierConfig } from '../../config/types.js';
import type { CallAccess } from '../../exec/access.js';
import type { Principal } from '../../exec/principal.js';
import type { CallResult } from '../../exec/attempts/attempts.js';
import type { CallPath, OwnCalls } from '../../exec/call-path.js';
import type { RpcWriter } from '../../exec/exchanges/jsonrpc-exchange.js';
import { newOutcome, outcomeOf, recordRequest, type RequestOutcome } from '../../exec/request-record.js';
import { clientRefusal, type ClientFacts, type RestrictionReason } from '../../exec/restrict.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { errorText } from '../shared/answers.js';
import { answerJsonRpc, type RpcAnswer } from '../shared/jsonrpc-answer.js';
import type { Logger } from '../../ops/log.js';
import type { Metrics } from '../../ops/metrics/metrics.js';
import type { UsageRollup } from '../../quota/usage-rollup.js';
import { accountSubscriptions, type ConnectionSlots } from '../../quota/connection-slots.js';
import type { JsonRpcCall, JsonRpcRequest, SubscriptionCodec } from '../../plugin/contract.js';
import type { Subscriber, SubscriptionHub } from '../../subscriptions/hub.js';
import type { RequestSpan } from '../../ops/trace/request-span.js';

/** Calls of one connection being answered at once; more are refused until some finish. */
const MAX_IN_FLIGHT = 256;
const CLOSE_CODES = new Set([1000, 1001, 1006, 1008, 1009, 1011, 1013]);
const bodyOf = (a: RpcAnswer): string | null => a.body;

export interface SessionDeps {
  readonly access: CallAccess;
  readonly path: CallPath;
  /** Where an account's subscriptions over all its connections are counted (across workers and instances). */
  readonly slots: ConnectionSlots;
  /** The chain endpoint's current runtime (a reload may replace it). */
  readonly runtime: (chain: string) => ChainRuntime | undefined;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly requestTimeoutMs: () => number;
  /** Past this much unsent data, a client is not reading: it is let go rather than buffered for. */
  readonly maxBufferedBytes: () => number;
  /** Records the key's last use. */
  touch(keyId: string, at: number): void;
  /** Counts a connection ended by its key's new restrictions. */
  restricted(reason: RestrictionReason): void;
  /** Called once when the connection is over, with its close code. */
  readonly ended: (session: WsSession, code: number) => void;
  /** Who opened the connection, for its messages' request log lines. */
  readonly peer: { readonly address: string | undefined; readonly userAgent: string | undefined; readonly traceId: string | undefined };
  /** A message's span (continuing the upgrade's traceparent), when tracing is on. */
  readonly traced?: (chain: string) => RequestSpan;
  /** Usage history of each call (usage.*); absent when the store keeps none. */
  readonly usage?: UsageRollup;
}

export class WsSession implements Subscriber {
  /** Answered the last ping (the sweep drops a connection that did not). */
  alive = true;
  private readonly subs = new Set<string>();
  /** Subscription id → the account slot it holds (set and slot), when the tier caps the account's subscriptions. */
  private readonly accountSlots = new Map<string, readonly [set: string, slot: string]>();
  private subscribing = 0;
  private inFlight = 0;
  private closing = false;
  private seq = 0;
  private slotSeq = 0;
  private markDone: () => void = () => undefined;
  /** The subscription calls of the runtime and tier of the last message (a reload makes new ones). */
  private own: { rt: ChainRuntime; tier: TierConfig; calls: OwnCalls<JsonRpcCall, string> | undefined } | undefined;
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
    /** Where the upgrade came from, for the key's restrictions when they change. */
    private readonly client: ClientFacts,
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

  /** The store changed this key: keep the new record, or end the connection if it is no longer valid or no longer allows this client. */
  refresh(match: KeyMatch | undefined): void {
    if (match !== undefined) this.match = match;
    if (match === undefined || !this.valid()) return this.close(1008, 'API key revoked or expired');
    const r = match.record.restrictions;
    const refused = r === undefined ? undefined : clientRefusal(match.record, compiledRestrictions(r), this.client, 'ws');
    if (refused !== undefined) {
      this.deps.restricted(refused.reason);
      this.close(1008, 'API key restrictions no longer allow this client');
    }
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
    this.send(text, 'notifications');
  }

  /** A client that does not read what it is sent is let go, never buffered for without bound. */
  private send(text: string, what: 'answers' | 'notifications'): void {
    if (this.closing) return;
    if (this.ws.bufferedAmount > this.deps.maxBufferedBytes()) return this.close(1008, `Client too slow to read its ${what}`);
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
    for (const [set, slot] of this.accountSlots.values()) this.deps.slots.release(set, slot);
    this.accountSlots.clear();
    this.deps.metrics.wsCloses.inc({ chain: this.chain, code: CLOSE_CODES.has(code) ? String(code) : 'other' });
    this.deps.ended(this, code);
    this.markDone();
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.closing) return;
    if (!this.valid()) return this.close(1008, 'API key revoked or expired');
    const body = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    const started = performance.now();
    const rt = this.deps.runtime(this.chain);
    if (rt === undefined) return this.close(1001, 'Endpoint removed');
    const record = this.match.record;
    const result = newOutcome();
    result.key = record;
    result.traceId = this.deps.peer.traceId;
    result.bytesIn = body.length;
    if (this.deps.traced !== undefined) result.span = this.deps.traced(rt.name);
    this.deps.touch(record.id, this.deps.now());
    rt.load.inFlight++;
    this.inFlight++;
    let answer: string | null | Promise<string | null>;
    try {
      answer = this.answer(rt, record, body, isBinary, result);
    } catch (err) {
      answer = this.failed(rt, result, err);
    }
    // A message answered without a promise (a cache hit) is written and recorded at once.
    if (!(answer instanceof Promise)) return this.answered(rt, result, started, answer);
    answer.then(
      (a) => this.answered(rt, result, started, a),
      (err: unknown) => this.answered(rt, result, started, this.failed(rt, result, err)),
    );
  }

  /** The answer to a message that failed: its table error; a bug is logged too. */
  private failed(rt: ChainRuntime, result: RequestOutcome, err: unknown): string {
    const e = isGatewayError(err) ? err : new GatewayError('UPSTREAM_FAILED', { cause: err });
    result.outcome = outcomeOf(e);
    if (!isGatewayError(err))
      this.deps.logger.error('WebSocket call failed unexpectedly', { chain: rt.name, error: (err as Error).stack ?? String(err) });
    return errorText(e, 'jsonrpc', rt.rpc);
  }

  private answered(rt: ChainRuntime, result: RequestOutcome, started: number, answer: string | null): void {
    if (answer !== null) {
      result.bytesOut = Buffer.byteLength(answer);
      this.send(answer, 'answers');
    }
    this.inFlight--;
    rt.load.inFlight--;
    recordRequest(
      this.deps.metrics,
      this.deps.logger,
      {
        requestId: `${this.id}:${++this.seq}`,
        chain: rt.name,
        transport: 'ws',
        status: undefined,
        started,
        result,
        client: this.deps.peer.address,
        userAgent: this.deps.peer.userAgent,
      },
      this.deps.usage,
    );
  }

  private refuse(rt: ChainRuntime, result: RequestOutcome, e: GatewayError): string {
    result.outcome = outcomeOf(e);
    return errorText(e, 'jsonrpc', rt.rpc);
  }

  /** A message that becomes no call is charged like an HTTP request that does not (CallPath.refused). */
  private async charged(rt: ChainRuntime, result: RequestOutcome, principal: Principal, e: GatewayError): Promise<string> {
    const charged = await this.deps.path.refused(rt, principal, e.code === 'BATCH_TOO_LARGE' ? 'batch' : 'invalid', result);
    return this.refuse(rt, result, charged.error ?? e);
  }

  private answer(
    rt: ChainRuntime,
    record: KeyRecord,
    body: Buffer,
    isBinary: boolean,
    result: RequestOutcome,
  ): string | null | Promise<string | null> {
    const codec = rt.handler.jsonrpc;
    if (codec === undefined)
      return this.refuse(rt, result, new GatewayError('ENDPOINT_NOT_FOUND', { message: 'This endpoint no longer serves WebSocket' }));
    const tier = this.deps.access.tierFor(record, rt);
    if (isGatewayError(tier)) return this.refuse(rt, result, tier);
    if (this.inFlight > MAX_IN_FLIGHT)
      return this.refuse(rt, result, new GatewayError('RATE_LIMITED', { message: 'Too many calls in flight on this connection' }));
    const principal: Principal = { record, tier };
    if (isBinary)
      return this.charged(
        rt,
        result,
        principal,
        new GatewayError('INVALID_REQUEST', { message: 'Send JSON-RPC requests as text messages' }),
      );
    let request: JsonRpcRequest;
    try {
      request = codec.parse(body.toString('utf8'));
    } catch (err) {
      return this.charged(rt, result, principal, isGatewayError(err) ? err : new GatewayError('INVALID_REQUEST', { cause: err }));
    }
    const deadline = Date.now() + this.deps.requestTimeoutMs();
    const a = answerJsonRpc(this.deps.path, { chain: rt, principal, request, deadline, trace: result, own: this.ownCalls(rt, tier) });
    return a instanceof Promise ? a.then(bodyOf) : a.body;
  }

  /** Subscribe and unsubscribe calls of the endpoint's plugin, answered here once admitted; made once per runtime and tier. */
  private ownCalls(rt: ChainRuntime, tier: TierConfig): OwnCalls<JsonRpcCall, string> | undefined {
    const made = this.own;
    if (made !== undefined && made.rt === rt && made.tier === tier) return made.calls;
    const ids = rt.handler.jsonrpc?.subscriptions;
    const hub = rt.subscriptions;
    const calls = ids === undefined || hub === undefined ? undefined : this.subscriptionCalls(rt, tier, ids, hub);
    this.own = { rt, tier, calls };
    return calls;
  }

  private subscriptionCalls(
    rt: ChainRuntime,
    tier: TierConfig,
    ids: SubscriptionCodec,
    hub: SubscriptionHub,
  ): OwnCalls<JsonRpcCall, string> {
    // Subscribe method → its unsubscribe, and the unsubscribes: own entries only (no prototype names).
    const subscribes = new Map(Object.entries(ids.methods));
    const unsubscribes = new Set(subscribes.values());
    return {
      claims: (call) => subscribes.has(call.method) || unsubscribes.has(call.method),
      answer: (call) => {
        const unsubscribe = subscribes.get(call.method);
        if (unsubscribe === undefined) return Promise.resolve(this.unsubscribe(call, ids, rt.rpc));
        return this.subscribe(rt, tier, hub, call, unsubscribe);
      },
    };
  }

  private async subscribe(
    rt: ChainRuntime,
    tier: TierConfig,
    hub: SubscriptionHub,
    call: JsonRpcCall,
    unsubscribe: string,
  ): Promise<CallResult<string>> {
    // A notification could never learn its subscription's id.
    if (call.id === undefined) return { answer: undefined, verdict: 'ok', sure: false };
    if (this.subs.size + this.subscribing >= tier.wsSubscriptions) {
      this.deps.metrics.rejections.inc({ chain: rt.name, tier: tier.name, reason: 'subscriptions' });
      return new GatewayError('TOO_MANY_SUBSCRIPTIONS', {
        message: `Subscriptions on this connection are at the tier's limit of ${tier.wsSubscriptions}`,
      });
    }
    this.subscribing++;
    let r: Awaited<ReturnType<typeof hub.subscribe>>;
    let held: readonly [string, string] | undefined;
    try {
      const taken = await this.accountSlot(tier);
      if (isGatewayError(taken)) {
        if (taken.code === 'TOO_MANY_SUBSCRIPTIONS')
          this.deps.metrics.rejections.inc({ chain: rt.name, tier: tier.name, reason: 'subscriptions' });
        return taken;
      }
      held = taken;
      r = await hub.subscribe(this, call, unsubscribe);
    } finally {
      this.subscribing--;
    }
    const giveBack = (): void => {
      if (held !== undefined) this.deps.slots.release(held[0], held[1]);
    };
    if (isGatewayError(r)) {
      giveBack();
      return r;
    }
    if ('refusal' in r) {
      giveBack();
      return { answer: rt.rpc.error(call.id, r.refusal), verdict: 'chain_error', sure: false };
    }
    if (this.closing) {
      giveBack();
      hub.unsubscribe(r.id);
      return { answer: undefined, verdict: 'ok', sure: false };
    }
    this.subs.add(r.id);
    if (held !== undefined) this.accountSlots.set(r.id, held);
    return { answer: rt.rpc.result(call.id, r.id), verdict: 'ok', sure: false };
  }

  /**
   * One of the account's subscription slots (tier `account.wsSubscriptions`, over all
   * its keys and connections), undefined when the tier sets no cap, or the error to give.
   */
  private async accountSlot(tier: TierConfig): Promise<readonly [string, string] | undefined | GatewayError> {
    const { record } = this.match;
    const cap = tier.account.wsSubscriptions ?? Infinity;
    if (cap === Infinity) return undefined;
    const set = accountSubscriptions(record.account, tier);
    const slot = `${this.id}/${++this.slotSeq}`;
    let taken: boolean;
    try {
      taken = await this.deps.slots.acquire(set, slot, cap);
    } catch (err) {
      return isGatewayError(err) ? err : new GatewayError('UNAVAILABLE', { cause: err });
    }
    if (!taken)
      return new GatewayError('TOO_MANY_SUBSCRIPTIONS', { message: `Subscriptions of this account are at its tier's limit of ${cap}` });
    return [set, slot];
  }

  private unsubscribe(call: JsonRpcCall, ids: SubscriptionCodec, rpc: RpcWriter): CallResult<string> {
    const id = ids.unsubscribe.idOf(call.params);
    const found = id !== undefined && this.subs.delete(id);
    if (found && id !== undefined) {
      this.deps.runtime(this.chain)?.subscriptions?.unsubscribe(id);
      const held = this.accountSlots.get(id);
      if (held !== undefined) {
        this.accountSlots.delete(id);
        this.deps.slots.release(held[0], held[1]);
      }
    }
    if (call.id === undefined) return { answer: undefined, verdict: 'ok', sure: false };
    // As the family's nodes answer an id they do not know.
    return found
      ? { answer: rpc.result(call.id, ids.unsubscribe.done), verdict: 'ok', sure: false }
      : { answer: rpc.error(call.id, JSON.stringify(ids.unknownId)), verdict: 'chain_error', sure: false };
  }
}
