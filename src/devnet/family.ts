// What a simulated node family implements: JSON-RPC methods, plain HTTP routes, or
// both. The node server (node-server.ts) does transport, recording and faults.

import type { IncomingHttpHeaders } from 'node:http';
import type { SimChain } from './chain.js';

export interface NodeView {
  readonly name: string;
  readonly role: 'full' | 'archive';
  readonly chain: SimChain;
  readonly chainId: number;
  height(): number;
  earliest(): number;
}

export interface RpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** A JSON-RPC answer; `id` overrides the echoed id (CometBFT answers abci_info with -1). */
export type RpcOutcome = { readonly result: unknown; readonly id?: string } | { readonly error: RpcError; readonly id?: string };

export interface DevRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** What a subscription pushes when its node's head reaches a height (often nothing). */
export type Feed = (height: number) => unknown[];

/** Pub/sub over WebSocket, in the JSON-RPC convention ({method, params:{subscription, result}}). */
export interface Subscriptions {
  /** Open a subscription: its feed, or the error a node answers for bad params; undefined: not a subscribe method. */
  open(method: string, params: unknown, node: NodeView): { feed: Feed; notification: string } | { error: RpcError } | undefined;
  /** Unsubscribe method names. */
  readonly closers: ReadonlySet<string>;
}

export interface Family {
  /** WebSocket subscriptions, for families whose nodes serve them. */
  readonly subscriptions?: Subscriptions;
  /** Does a POST to this path carry a JSON-RPC body? */
  rpcPath(path: string): boolean;
  /** Answer one JSON-RPC call; undefined when the method does not exist. */
  rpc(method: string, params: unknown, node: NodeView): RpcOutcome | undefined;
  /** Answer any other request; undefined means 404. */
  http?(req: DevRequest, node: NodeView): HttpAnswer | undefined;
}

export const notFound = (method: string): RpcError => ({ code: -32601, message: `the method ${method} does not exist/is not available` });
export const invalidParams = (message: string): RpcError => ({ code: -32602, message });
