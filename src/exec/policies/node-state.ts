// What the gateway remembers so stateful calls stay on the node that holds their
// state: node state (EVM filters) under ids of the gateway's own, made and expired as
// the plugin's convention says, scoped to the key that made it, so one key can never
// poll another's; and which nodes accepted a recent submit, so reads of it right after
// go there first. Both are bounded and expire.

import { LRUCache } from 'lru-cache';
import type { StateConvention } from '../../plugin/contract.js';
import type { PoolNode } from '../../pool/pool-node.js';

const STATES_MAX = 100_000;
const ACCEPTED_MS = 60_000;
const ACCEPTED_MAX = 10_000;

/** The convention of a family that keeps no node state: the state stage never runs, and nothing is added. */
const NO_STATE: Pick<StateConvention, 'newId' | 'idleMs'> = Object.freeze({
  newId(): string {
    throw new Error("this chain's family keeps no node state");
  },
  idleMs: 1,
});

interface Held {
  readonly node: PoolNode;
  /** The node's id of the state (raw JSON). */
  readonly nodeId: string;
  readonly keyId: string;
}

/** Node state by the gateway's ids, named and forgotten by the family's convention (the plugin's `jsonrpc.state`). */
export class NodeStates {
  private readonly held: LRUCache<string, Held>;
  private readonly newId: () => string;

  constructor(convention: Pick<StateConvention, 'newId' | 'idleMs'> = NO_STATE) {
    // Forgotten once the node would have forgotten it too.
    this.held = new LRUCache<string, Held>({ max: STATES_MAX, ttl: convention.idleMs, updateAgeOnGet: true });
    this.newId = convention.newId;
  }

  /** Remember state `nodeId` made on `node` for `keyId`; the client's id for it (raw JSON). */
  add(node: PoolNode, nodeId: string, keyId: string): string {
    const id = this.newId();
    this.held.set(id, { node, nodeId, keyId });
    return id;
  }

  /** The state behind a client's id (raw JSON), for this key only. */
  get(id: string, keyId: string): Held | undefined {
    const h = this.held.get(id);
    return h !== undefined && h.keyId === keyId ? h : undefined;
  }

  forget(id: string): void {
    this.held.delete(id);
  }
}

export class Accepted {
  private readonly byId = new LRUCache<string, PoolNode[]>({ max: ACCEPTED_MAX, ttl: ACCEPTED_MS });

  add(id: string, nodes: PoolNode[]): void {
    if (nodes.length > 0) this.byId.set(id, nodes);
  }

  nodes(id: string): readonly PoolNode[] | undefined {
    return this.byId.get(id);
  }
}
