// The devnet-family contract: what a plugin folder's devnet module default-exports so
// the devnet can simulate that family's nodes. An HTTP family says how one node
// answers JSON-RPC calls, plain HTTP requests and subscriptions (the devnet's node
// server does transport, recording and faults); a server family makes whole nodes of
// its own (gRPC). Types only, plus the identity helper `defineDevnetFamily`.

import type { IncomingHttpHeaders } from 'node:http';
import type { NodeRole } from '../plugin/contract.js';
import type { SimChain } from './chain.js';
import type { DevnetCredentials } from './credentials.js';
import type { SimulatedNode } from './types.js';

/** Devnet-wide settings a family's nodes read. */
export interface DevnetSettings {
  /** Blocks a full node keeps. */
  readonly fullRetention: number;
  /** A filter (or other per-client state) not polled for this long is dropped (geth: 5 minutes). */
  readonly filterTimeoutMs: number;
  /** The widest getLogs block range nodes answer; undefined: any. */
  readonly maxLogsRange: number | undefined;
}

/** One node as its family's code sees it. */
export interface NodeView {
  readonly name: string;
  readonly network: string;
  readonly role: NodeRole;
  readonly chain: SimChain;
  /** The EVM chain id the node claims (another than its network's under the otherChain fault). */
  readonly chainId: number;
  readonly settings: DevnetSettings;
  /** The devnet's clock (ms since the epoch). */
  now(): number;
  /** The network id SDK-style nodes report (`<network>-devnet-1`; `<network>-other-1` under the otherChain fault). */
  networkId(): string;
  /** Under the lie fault: the node alters balances, app hashes and EVM block headers it answers. */
  lying(): boolean;
  /** The node's head: the chain's, held back by the stalled fault or pushed ahead by headOffset. */
  height(): number;
  /** Lowest height the node still serves (1 on archive nodes). */
  earliest(): number;
  /** The getLogs range limit in force now (the maxLogsRange fault, else the setting). */
  maxLogsRange(): number | undefined;
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
  open(method: string, params: unknown): { feed: Feed; notification: string } | { error: RpcError } | undefined;
  /** Unsubscribe method names. */
  readonly closers: ReadonlySet<string>;
}

/** One node's protocol, made once per node: what the node remembers (filters, its pool) lives in it. */
export interface NodeProtocol {
  /** Answer one JSON-RPC call (a promise for calls that wait, like broadcast_tx_commit); undefined: no such method. */
  rpc(method: string, params: unknown): RpcOutcome | Promise<RpcOutcome> | undefined;
  /** Answer any other request (a promise for requests that wait); undefined means 404. */
  http?(req: DevRequest): HttpAnswer | Promise<HttpAnswer | undefined> | undefined;
  /** WebSocket subscriptions, for families whose nodes serve them. */
  readonly subscriptions?: Subscriptions;
}

/** A family served by the devnet's HTTP node server (JSON-RPC over POST and WebSocket, plain HTTP). */
export interface HttpFamily {
  readonly kind: 'http';
  /** Does a POST (or a WebSocket upgrade) to this path carry JSON-RPC? */
  rpcPath(path: string): boolean;
  node(view: NodeView): NodeProtocol;
}

/** What a node is made from (a server family gets it to make one). */
export type NodeSetup = Pick<NodeView, 'name' | 'network' | 'role' | 'chain' | 'chainId' | 'settings' | 'now'> & {
  /** The family's name (its plugin folder). */
  readonly family: string;
  readonly host: string;
  /** 0: an ephemeral port. */
  readonly port: number;
  /** What every request must carry (a provider's node); absent: nothing. */
  readonly credentials?: DevnetCredentials;
};

/** A family whose nodes are servers of their own (a gRPC server), usually built on DevnetNodeBase. */
export interface ServerFamily {
  readonly kind: 'server';
  /** A node, not yet listening. */
  createNode(setup: NodeSetup): SimulatedNode;
}

export type DevnetFamily = HttpFamily | ServerFamily;

/** Identity helper so a devnet module gets the contract's type inference. */
export function defineDevnetFamily<F extends DevnetFamily>(family: F): F {
  return family;
}

export const notFound = (method: string): RpcError => ({ code: -32601, message: `the method ${method} does not exist/is not available` });
export const invalidParams = (message: string): RpcError => ({ code: -32602, message });
