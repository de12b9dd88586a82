// A chain endpoint's subscriptions on its nodes. Identical subscriptions of many
// clients (same method, same params) share one subscription on one node; each
// client has its own id, which stays the same when the node under it dies, lags or
// leaves the pool and the subscription is made again on another node: clients see
// a gap, never a new id. With no node left to carry it, its clients are let go.

import { randomBytes } from 'node:crypto';
import { GatewayError } from '../errors.js';
import { notificationText, type Notification } from '../jsonrpc/pubsub.js';
import { replyError } from '../jsonrpc/envelope.js';
import { memberRaw } from '../jsonrpc/raw-json.js';
import type { Call, ChainHandler, Routing } from '../plugin.js';
import type { PoolNode } from '../pool/pool-node.js';
import type { NodePool } from '../pool/pool.js';
import { NodeSocket, type NodeSocketOwner } from './node-socket.js';

/** Whoever holds client subscriptions: a WebSocket session. */
export interface Subscriber {
  /** A notification, already under this subscriber's own subscription id. */
  deliver(text: string): void;
  /** A subscription of this subscriber cannot be carried on; close with this code. */
  lost(code: number, reason: string): void;
}

/** How a subscribe call ended: a client id, the chain's refusal (raw error object), or a gateway error. */
export type SubscribeResult = { readonly id: string } | { readonly refusal: string } | GatewayError;

type Established = { readonly ok: true } | { readonly refusal: string } | GatewayError;

export interface HubOptions {
  /** Bound of opening a node socket and of one subscribe call on it. */
  readonly timeoutMs: number;
  readonly maxMessageBytes: number;
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
  ready: Promise<Established> = Promise.resolve({ ok: true });

  constructor(
    readonly key: string,
    readonly call: Call,
    readonly params: string,
    readonly unsubscribe: string,
  ) {}
}

const SUBSCRIBE: Routing = Object.freeze({ archive: false, cost: 0, label: '' });
/** A node whose socket failed is left alone this long before it is tried again. */
const BACKOFF_MS = 2_000;
/** Client subscription ids look like geth's: 0x and 32 hex digits, as a JSON string. */
const newClientId = (): string => `"0x${randomBytes(16).toString('hex')}"`;

export class SubscriptionHub implements NodeSocketOwner<Shared> {
  private readonly shared = new Map<string, Shared>();
  private readonly byClient = new Map<string, Shared>();
  private readonly sockets = new Map<PoolNode, NodeSocket<Shared>>();
  private readonly backoff = new Map<PoolNode, number>();
  private closed = false;

  constructor(
    private readonly pool: NodePool,
    private readonly handler: ChainHandler,
    private readonly options: HubOptions,
    private readonly now: () => number = Date.now,
  ) {}

  get subscriptions(): number {
    return this.byClient.size;
  }

  get nodeSubscriptions(): number {
    let n = 0;
    for (const s of this.shared.values()) if (s.nodeId !== undefined) n++;
    return n;
  }

  /** Subscribe a client; identical live subscriptions are shared, else one is made on a node. */
  async subscribe(subscriber: Subscriber, call: Call, unsubscribe: string): Promise<SubscribeResult> {
    const params = JSON.stringify(call.params ?? []);
    const key = `${call.method}\u0000${params}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      let shared = this.shared.get(key);
      if (shared === undefined) {
        const s = new Shared(key, call, params, unsubscribe);
        this.shared.set(key, s);
        s.ready = this.establish(s, new Set()).then((r) => {
          if (!('ok' in r) && s.clients.size === 0) this.forgetShared(s);
          return r;
        });
        shared = s;
      }
      const r = await shared.ready;
      if (!('ok' in r)) return r;
      // Dropped while we waited (its node died and none was left): make it anew once.
      if (this.shared.get(key) !== shared) continue;
      const id = newClientId();
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

  /** Nodes that left rotation, opened their breaker or left the pool hand their subscriptions on. */
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
    for (const [id, subscriber] of shared.clients) subscriber.deliver(notificationText(n.method, id, n.result));
    this.options.events?.delivered?.(shared.clients.size);
  }

  lost(socket: NodeSocket<Shared>, _reason: string): void {
    if (this.sockets.get(socket.node) === socket) this.sockets.delete(socket.node);
    this.backoff.set(socket.node, this.now() + BACKOFF_MS);
    const moving = [...socket.subscriptions.values()];
    socket.subscriptions.clear();
    for (const s of moving) this.move(s, socket.node);
  }

  private usable(node: PoolNode): boolean {
    return this.pool.nodes.includes(node) && node.inRotation && node.breakerState !== 'open';
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
    shared.ready = this.establish(shared, new Set([from])).then((r) => {
      if ('ok' in r) {
        this.options.events?.moved?.('moved');
        if (shared.clients.size === 0) this.release(shared);
      } else {
        this.options.events?.moved?.('dropped');
        this.drop(shared, 1013, 'No node can carry this subscription now; reconnect later');
      }
      return r;
    });
  }

  /** Make the subscription on a node: nodes in rotation, one after another, until one takes it. */
  private async establish(shared: Shared, tried: Set<PoolNode>): Promise<Established> {
    const now = this.now();
    for (const [node, until] of this.backoff) {
      if (until > now) tried.add(node);
      else this.backoff.delete(node);
    }
    let failures = 0;
    for (;;) {
      if (this.closed) return new GatewayError('UNAVAILABLE', { message: 'Endpoint closed' });
      const node = this.pool.select(SUBSCRIBE, tried);
      if (node === undefined) {
        return failures === 0
          ? new GatewayError('NO_HEALTHY_NODE', { headers: { 'retry-after': '1' } })
          : new GatewayError('UPSTREAM_FAILED');
      }
      tried.add(node);
      let outcome: Established | undefined;
      try {
        const socket = await this.socketFor(node);
        outcome = await socket.call(shared.call.method, shared.params, this.options.timeoutMs, (text) => this.taken(shared, socket, text));
      } catch {
        outcome = undefined;
      }
      if (outcome !== undefined) return outcome;
      failures++;
    }
  }

  /** Read a node's answer to a subscribe call as it arrives; undefined = try another node. */
  private taken(shared: Shared, socket: NodeSocket<Shared>, text: string): Established | undefined {
    const verdict = this.handler.judge(shared.call, { status: 200, text, error: replyError(text) });
    if (verdict === 'chain-error') return { refusal: memberRaw(text, 'error') ?? '{"code":-32603,"message":"subscription refused"}' };
    if (verdict !== 'ok') return undefined;
    const id = memberRaw(text, 'result');
    if (id === undefined || id === 'null') return undefined;
    shared.socket = socket;
    shared.nodeId = id;
    socket.subscriptions.set(id, shared);
    return { ok: true };
  }

  private async socketFor(node: PoolNode): Promise<NodeSocket<Shared>> {
    let socket = this.sockets.get(node);
    if (socket === undefined) {
      socket = new NodeSocket<Shared>(node, node.config.ws, this, this.options.timeoutMs, this.options.maxMessageBytes);
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
      socket.call(shared.unsubscribe, `[${nodeId}]`, this.options.timeoutMs, () => undefined).catch(() => undefined);
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
