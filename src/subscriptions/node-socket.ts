// One WebSocket connection from the gateway to a node, carrying the subscriptions of
// every client that the node serves: calls out with our own numeric ids, answers
// matched back by id, pushed notifications handed to the owner. A socket that
// closes, errors or stops answering pings tells its owner once, and is done.

import WebSocket from 'ws';
import { nodeSecrets, scrub } from '../config/redact.js';
import type { RpcWriter } from '../jsonrpc/dialect.js';
import { readNotification, type Notification } from '../jsonrpc/pubsub.js';
import { memberRaw } from '../jsonrpc/raw-json.js';
import type { PoolNode } from '../pool/pool-node.js';

export interface NodeSocketOwner<T> {
  notification(socket: NodeSocket<T>, n: Notification): void;
  /** The socket is gone (closed, failed, or never opened); called once. */
  lost(socket: NodeSocket<T>, reason: string): void;
}

interface Pending {
  /** Runs as the answer arrives, before any later message of the node is read. */
  resolve(text: string): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class NodeSocketError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NodeSocketError';
  }
}

export class NodeSocket<T> {
  /** The node's subscription ids (raw JSON) on this socket → what they carry, kept by the owner. */
  readonly subscriptions = new Map<string, T>();
  private readonly ws: WebSocket;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private done = false;
  /** The gateway closed this socket on purpose (not the node dropping it). */
  closedByUs = false;
  private answeredPing = true;
  readonly opened: Promise<void>;

  constructor(
    readonly node: PoolNode,
    url: string,
    public owner: NodeSocketOwner<T>,
    openTimeoutMs: number,
    maxMessageBytes: number,
    /** The family's JSON-RPC dialect, for the calls made on the socket. */
    private readonly rpc: RpcWriter,
  ) {
    // The node's headers go on the handshake; its URL's path and query are kept as they are.
    this.ws = new WebSocket(url, {
      handshakeTimeout: openTimeoutMs,
      maxPayload: maxMessageBytes,
      perMessageDeflate: false,
      headers: node.config.headers,
    });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      // Library messages may quote the URL: never a token in a log line or an error.
      this.ws.once('error', (err) => reject(new NodeSocketError(`node WebSocket failed: ${scrub(err.message, nodeSecrets(node.config))}`)));
      this.ws.once('close', () => reject(new NodeSocketError('node WebSocket closed before it opened')));
    });
    // The owner hears of failures through lost(); nobody else awaits this promise.
    this.opened.catch(() => undefined);
    this.ws.on('message', (data) => this.onMessage(data.toString()));
    this.ws.on('pong', () => {
      this.answeredPing = true;
    });
    this.ws.on('error', () => undefined);
    this.ws.on('close', (code) => this.finish(`node WebSocket closed (${code})`));
  }

  get open(): boolean {
    return !this.done && this.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Send one call. `read` turns the answer's text into the result as soon as it
   * arrives, before the node's next message is read: a subscription is known before
   * its first notification comes in, even when both arrive in one packet.
   */
  call<R>(method: string, paramsRaw: string, timeoutMs: number, read: (text: string) => R): Promise<R> {
    if (!this.open) return Promise.reject(new NodeSocketError('node WebSocket is not open'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new NodeSocketError(`node did not answer ${method} in ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (text: string): void => {
        try {
          resolve(read(text));
        } catch (err) {
          reject(err);
        }
      };
      this.pending.set(id, { resolve: done, reject, timer });
      this.ws.send(this.rpc.request(id, JSON.stringify(method), paramsRaw));
    });
  }

  /** A ping every sweep; a node that did not answer the last one is dropped. */
  sweep(): void {
    if (!this.open) return;
    if (!this.answeredPing) {
      this.ws.terminate();
      return;
    }
    this.answeredPing = false;
    this.ws.ping();
  }

  close(): void {
    this.closedByUs = true;
    this.done = true;
    this.failPending('node WebSocket closed by the gateway');
    this.ws.close(1000);
    // A node that never completes the closing handshake is cut.
    setTimeout(() => this.ws.terminate(), 1_000).unref();
  }

  private onMessage(text: string): void {
    const n = readNotification(text);
    if (n !== undefined) {
      this.owner.notification(this, n);
      return;
    }
    const id = Number(memberRaw(text, 'id'));
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(text);
  }

  private failPending(reason: string): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new NodeSocketError(reason));
    }
    this.pending.clear();
  }

  private finish(reason: string): void {
    if (this.done) return;
    this.done = true;
    this.failPending(reason);
    this.owner.lost(this, reason);
  }
}
