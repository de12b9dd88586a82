// What the devnet's parts say about a simulated node: its faults, the record of what it
// received, and the face tests and the control server use (DevnetNode). A module of its
// own so the runner, the control server and the node servers share it without
// importing each other.

import type { NodeRole } from '../plugin/contract.js';

export type { NodeRole };

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
  /** The devnet's clock (ms) when the request arrived. */
  readonly at: number;
}

export interface NodeFaults {
  latencyMs?: number;
  errorRate?: number;
  hang?: boolean;
  /** Answers wait, and are given normally once the fault is cleared (tests line calls up). */
  hold?: boolean;
  status?: number;
  html?: boolean;
  truncated?: boolean;
  stalled?: boolean;
  /** The node reports its head this many blocks above the chain's (a lying node). */
  headOffset?: number;
  down?: boolean;
  /** JSON-RPC answers carry an id the caller did not send. */
  wrongId?: boolean;
  /** Batch answers come back in reverse order (allowed by JSON-RPC). */
  reorderBatch?: boolean;
  /** Batch answers lose their last item. */
  shortBatch?: boolean;
  /** Every answer is a valid JSON-RPC answer of about 1 MB. */
  hugeBody?: boolean;
  /** The widest getLogs block range this node answers (overrides the devnet's maxLogsRange). */
  maxLogsRange?: number;
  /** The node says it is on another chain: another EVM chain id, network id or chain identifier. */
  otherChain?: boolean;
  /**
   * The node lies, for tests of answer checking: altered balances (EVM, SDK bank over REST
   * and abci_query, objectx), another app hash (CometBFT blocks, status, abci_info; SDK REST
   * blocks), EVM blocks whose hash is not their header's.
   */
  lie?: boolean;
}

/** Each fault's kind, for checking what the control server is given. */
export const FAULT_KINDS: Readonly<Record<keyof NodeFaults, 'number' | 'boolean'>> = {
  latencyMs: 'number',
  errorRate: 'number',
  hang: 'boolean',
  hold: 'boolean',
  status: 'number',
  html: 'boolean',
  truncated: 'boolean',
  stalled: 'boolean',
  headOffset: 'number',
  down: 'boolean',
  wrongId: 'boolean',
  reorderBatch: 'boolean',
  shortBatch: 'boolean',
  hugeBody: 'boolean',
  maxLogsRange: 'number',
  otherChain: 'boolean',
  lie: 'boolean',
};

/** One simulated node as tests and the control server see it. */
export interface DevnetNode {
  readonly name: string;
  readonly network: string;
  /** The devnet family (a plugin folder's name) the node simulates. */
  readonly family: string;
  readonly role: NodeRole;
  readonly url: string;
  readonly received: RecordedRequest[];
  clearReceived(): void;
  setFaults(f: NodeFaults): Promise<void>;
  clearFaults(): Promise<void>;
  currentFaults(): NodeFaults;
  height(): number;
  earliest(): number;
}

/** A node the runner starts and stops. */
export interface SimulatedNode extends DevnetNode {
  listen(): Promise<void>;
  close(): Promise<void>;
}
