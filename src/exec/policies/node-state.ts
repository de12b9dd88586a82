// What the gateway remembers so stateful calls stay on the node that holds their
// state: node state (EVM filters) under ids of the gateway's own, scoped to the key
// that made it, so one key can never poll another's; and which nodes accepted a recent
// submit, so reads of it right after go there first. Both are bounded and expire.

import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { PoolNode } from '../../pool/pool-node.js';

/** Filters expire on a node after 5 minutes without a poll (geth); the gateway forgets them too. */
const STATE_IDLE_MS = 5 * 60_000;
const STATES_MAX = 100_000;
const ACCEPTED_MS = 60_000;
const ACCEPTED_MAX = 10_000;

interface Held {
  readonly node: PoolNode;
  /** The node's id of the state (raw JSON). */
  readonly nodeId: string;
  readonly keyId: string;
}

export class NodeStates {
  private readonly held = new LRUCache<string, Held>({ max: STATES_MAX, ttl: STATE_IDLE_MS, updateAgeOnGet: true });

  /** Remember state `nodeId` made on `node` for `keyId`; the client's id for it (raw JSON). */
  add(node: PoolNode, nodeId: string, keyId: string): string {
    const id = `"0x${randomBytes(16).toString('hex')}"`;
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
