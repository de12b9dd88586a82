// A chain endpoint's subscriptions on its nodes. Identical subscriptions of many
// clients (same method, same params) share one subscription on one node; each
// client has its own id (the plugin's shape), which stays the same when the node under
// it dies, lags or leaves the pool and the subscription is made again on another node:
// clients see a gap, never a new id. Subscriptions are made through the attempt loop,
// so node selection, breakers and attempt bounds are those of every other call; a node
// socket that dies counts against its node's breaker. With no node left to carry a
// subscription, its clients are let go.

import { GatewayError, isGatewayError } from '../errors.js';
import { replyError } from '../jsonrpc/envelope.js';
import type { Notification } from '../jsonrpc/pubsub.js';
import { memberRaw } from '../jsonrpc/raw-json.js';
import { forward, type CallResult } from '../exec/attempts/attempts.js';
import type { Exchange, ForwardObserver, Sent } from '../exec/exchanges/exchange.js';
import { chainRpc, type RpcWriter } from '../exec/exchanges/jsonrpc-exchange.js';
import type { JsonRpcCall, JsonRpcCodec, Routing, SubscriptionCodec } from '../plugin/contract.js';
import { NodeFailure } from '../pool/failures.js';
import type { PoolNode } from '../pool/pool-node.js';
import type { NodePool } from '../pool/pool.js';
import { NodeSocket, NodeSocketError, type NodeSocketOwner } from './node-socket.js';

/** Whoever holds client subscriptions: a WebSocket session. */
export interface Subscriber {
  /** A notification, already under this subscriber's own subscription id. */
  deliver(text: string): void;
  /** A subscription of this subscriber cannot be carried on; close with this code. */
  lost(code: number, reason: string): void;
}

/** How a subscribe call ended: a client id, the chain's refusal (raw error object), or a gateway error. */
export type SubscribeResult = { readonly id: string } | { readonly refusal: string } | GatewayError;

export interface HubOptions {
  /** Bound of opening a node socket and of one subscribe call on it. */
  readonly timeoutMs: number;
  readonly maxMessageBytes: number;
  /** Upstream metrics of subscribe calls, as for every other call. */
  readonly observer: ForwardObserver;
  readonly events?: {
    moved?(result: 'moved' | 'dropped'): void;
    delivered?(count: number): void;
  };
}

class Shared {
  readonly clients = new Map<string, Subscriber>();
  socket: NodeSocket<Shared> | undefined;
  /** The node's id of this subscription (raw JSON) while it is live. */
  nodeId: string | undefined;
  ready: Promise<CallResult<string>> = Promise.resolve({ answer: undefined, verdict: 'ok', sure: true });

  constructor(
    readonly key: string,
    readonly call: JsonRpcCall,
    readonly params: string,
    readonly unsubscribe: string,
  ) {}
}

/** Subscriptions follow the head: any node may carry one, an archive node too when no full node can. */
const SUBSCRIBE: Routing = Object.freeze({ archive: false, cost: 0, label: '', fullHolds: true });

/** A subscribe call to one node: its socket opened (or reused), the call made, the answer read as it arrives. */
class SubscribeExchange implements Exchange<JsonRpcCall, string> {
  readonly batches = false;

  constructor(
    private readonly hub: SubscriptionHub,
    private readonly shared: Shared,
    private readonly codec: JsonRpcCodec<unknown>,
  ) {}

  async send(node: PoolNode, _calls: readonly JsonRpcCall[], timeoutMs: number): Promise<Array<Sent<string>>> {
    const { shared } = this;
    let socket: NodeSocket<Shared>;
    try {
      socket = await this.hub.socketFor(node);
    } catch (err) {
      // A socket that never opened: nothing was sent, and the node is to blame.
      throw err instanceof NodeSocketError ? new NodeFailure('connect', err.message) : err;
    }
    try {
      return [await socket.call(shared.call.method, shared.params, timeoutMs, (text) => this.read(socket, text))];
    } catch (err) {
      throw err instanceof NodeSocketError ? new NodeFailure('io', err.message) : err;
    }
  }

  /** Runs as the answer arrives, before the node's next message: the subscription is known before its first notification. */
  private read(socket: NodeSocket<Shared>, text: string): Sent<string> {
    const { shared } = this;
    const verdict = this.codec.judge(shared.call, { kind: 'jsonrpc', status: 200, text, error: replyError(text) });
    if (verdict === 'chain_error') {
      return { answer: memberRaw(text, 'error') ?? '{"code":-32603,"message":"subscription refused"}', verdict, sure: true };
    }
    const id = verdict === 'ok' ? memberRaw(text, 'result') : undefined;
    if (id === undefined || id === 'null') throw new NodeFailure('garbage', 'node answered the subscribe call unusably');
    shared.socket = socket;
    shared.nodeId = id;
    socket.subscriptions.set(id, shared);
    return { answer: undefined, verdict: 'ok', sure: true };
  }
}

export class SubscriptionHub implements NodeSocketOwner<Shared> {
  private readonly shared = new Map<string, Shared>();
  private readonly byClient = new Map<string, Shared>();
  private readonly sockets = new Map<PoolNode, NodeSocket<Shared>>();
  private closed = false;
  /** Notifications to clients and calls to nodes, in the codec's dialect. */
  private readonly rpc: RpcWriter;

  constructor(
    private readonly pool: NodePool,
    private readonly codec: JsonRpcCodec<unknown>,
    private readonly ids: SubscriptionCodec,
    private readonly options: HubOptions,
  ) {
    this.rpc = chainRpc(codec);
  }

  get subscriptions(): number {
    return this.byClient.size;
  }

  get nodeSubscriptions(): number {
    let n = 0;
    for (const s of this.shared.values()) if (s.nodeId !== undefined) n++;
    return n;
  }

  /** Subscribe a client; identical live subscriptions are shared, else one is made on a node. */
  async subscribe(subscriber: Subscriber, call: JsonRpcCall, unsubscribe: string): Promise<SubscribeResult> {
    const params = JSON.stringify(call.params ?? []);
    const key = `${call.method}\u0000${params}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      let shared = this.shared.get(key);
      if (shared === undefined) {
        const s = new Shared(key, call, params, unsubscribe);
        this.shared.set(key, s);
        s.ready = this.establish(s).then((r) => {
          if (!established(r) && s.clients.size === 0) this.forgetShared(s);
          return r;
        });
        shared = s;
      }
      const r = await shared.ready;
      if (isGatewayError(r)) return r;
      if (r.verdict !== 'ok') return { refusal: r.answer as string };
      // Dropped while we waited (its node died and none was left): make it anew once.
      if (this.shared.get(key) !== shared) continue;
      const id = this.ids.newId();
      shared.clients.set(id, subscriber);
      this.byClient.set(id, shared);
      return { id };
    }
    return new GatewayError('NO_HEALTHY_NODE', { headers: { 'retry-after': '1' } });
  }

  /** Remove a client subscription; false when the id is not live. */
  unsubscribe(id: string): boolean {
    const shared = this.byClient.get(id);
    if (shared === undefined) return false;
    this.byClient.delete(id);
    shared.clients.delete(id);
    if (shared.clients.size === 0 && shared.nodeId !== undefined) this.release(shared);
    return true;
  }

  /** Nodes that left rotation, opened their breaker, are drained or left the pool hand their subscriptions on. */
  check(): void {
    for (const [node, socket] of this.sockets) {
      if (!this.usable(node)) this.abandon(socket, 'node left rotation');
    }
  }

  /** Ping every node socket; one that did not answer the last ping is dropped. */
  sweep(): void {
    for (const socket of this.sockets.values()) socket.sweep();
  }

  /** On a reload: the successor takes every subscription; sockets to nodes it kept go with them. */
  handOver(next: SubscriptionHub): void {
    const orphans: Array<NodeSocket<Shared>> = [];
    for (const [node, socket] of this.sockets) {
      if (next.pool.nodes.includes(node)) {
        socket.owner = next;
        next.sockets.set(node, socket);
      } else orphans.push(socket);
    }
    for (const [k, s] of this.shared) next.shared.set(k, s);
    for (const [id, s] of this.byClient) next.byClient.set(id, s);
    this.sockets.clear();
    this.shared.clear();
    this.byClient.clear();
    this.closed = true;
    for (const socket of orphans) next.abandon(socket, 'node left the pool');
    next.check();
  }

  /** Let every client go with `code` and close the node sockets. */
  close(code: number, reason: string): void {
    this.closed = true;
    for (const s of [...this.shared.values()]) this.drop(s, code, reason);
    for (const socket of this.sockets.values()) socket.close();
    this.sockets.clear();
  }

  notification(socket: NodeSocket<Shared>, n: Notification): void {
    const shared = socket.subscriptions.get(n.subscription);
    if (shared === undefined) return;
    for (const [id, subscriber] of shared.clients) subscriber.deliver(this.rpc.notification(n.method, id, n.result));
    this.options.events?.delivered?.(shared.clients.size);
  }

  lost(socket: NodeSocket<Shared>, reason: string): void {
    if (this.sockets.get(socket.node) === socket) this.sockets.delete(socket.node);
    // A socket the node dropped with subscriptions on it (not one the gateway closed)
    // counts against the node. One that never opened, or had only a call in flight, is
    // counted once already, by the breaker of the attempt that was waiting on it.
    if (!socket.closedByUs && socket.subscriptions.size > 0) socket.node.recordFailure(new NodeFailure('io', reason));
    const moving = [...socket.subscriptions.values()];
    socket.subscriptions.clear();
    for (const s of moving) this.move(s, socket.node);
  }

  private usable(node: PoolNode): boolean {
    return this.pool.nodes.includes(node) && node.inRotation && node.hold !== 'draining' && node.breakerState !== 'open';
  }

  /** Node subscriptions carried on `node` now. */
  carriedBy(node: PoolNode): number {
    return this.sockets.get(node)?.subscriptions.size ?? 0;
  }

  /** Close a socket on purpose and move what it carried. */
  private abandon(socket: NodeSocket<Shared>, reason: string): void {
    socket.close();
    this.lost(socket, reason);
  }

  private move(shared: Shared, from: PoolNode): void {
    shared.socket = undefined;
    shared.nodeId = undefined;
    if (this.closed || shared.clients.size === 0) {
      this.forgetShared(shared);
      return;
    }
    shared.ready = this.establish(shared, from).then((r) => {
      if (established(r)) {
        this.options.events?.moved?.('moved');
        if (shared.clients.size === 0) this.release(shared);
      } else {
        this.options.events?.moved?.('dropped');
        this.drop(shared, 1013, 'No node can carry this subscription now; reconnect later');
      }
      return r;
    });
  }

  /** Make the subscription on a node through the attempt loop (never on `avoid`, the node it is leaving). */
  private async establish(shared: Shared, avoid?: PoolNode): Promise<CallResult<string>> {
    if (this.closed) return new GatewayError('UNAVAILABLE', { message: 'Endpoint closed' });
    const { timeoutMs, observer } = this.options;
    const exchange = new SubscribeExchange(this, shared, this.codec);
    const [r] = await forward(this.pool, exchange, [shared.call], [SUBSCRIBE], {
      deadline: Date.now() + timeoutMs * this.pool.config.maxAttempts,
      observer,
      archiveAllowed: false,
      avoid,
    });
    return r as CallResult<string>;
  }

  /** The node's socket, opened on first use (for the subscribe exchange). */
  async socketFor(node: PoolNode): Promise<NodeSocket<Shared>> {
    let socket = this.sockets.get(node);
    if (socket === undefined) {
      socket = new NodeSocket<Shared>(node, node.config.ws, this, this.options.timeoutMs, this.options.maxMessageBytes, this.rpc);
      this.sockets.set(node, socket);
    }
    await socket.opened;
    return socket;
  }

  /** No client left: end the node's subscription (and its socket once it carries nothing). */
  private release(shared: Shared): void {
    const { socket, nodeId } = shared;
    this.forgetShared(shared);
    if (socket === undefined || nodeId === undefined) return;
    socket.subscriptions.delete(nodeId);
    if (socket.subscriptions.size === 0) {
      if (this.sockets.get(socket.node) === socket) this.sockets.delete(socket.node);
      socket.close();
    } else {
      socket.call(shared.unsubscribe, this.ids.unsubscribe.params(nodeId), this.options.timeoutMs, () => undefined).catch(() => undefined);
    }
  }

  private forgetShared(shared: Shared): void {
    if (this.shared.get(shared.key) === shared) this.shared.delete(shared.key);
  }

  private drop(shared: Shared, code: number, reason: string): void {
    this.forgetShared(shared);
    for (const [id, subscriber] of shared.clients) {
      this.byClient.delete(id);
      subscriber.lost(code, reason);
    }
    shared.clients.clear();
  }
}

/** A subscription made on a node (not refused by the chain, not failed). */
function established(r: CallResult<string>): boolean {
  return !isGatewayError(r) && r.verdict === 'ok';
}
