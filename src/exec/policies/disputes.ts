// The record of disagreements between nodes on calls checked by agreement: a bounded
// in-memory log the admin listener shows at GET /health/disputes (newest first). An
// entry names the chain, the method's label, the outcome and each node with a short
// hash of its answer: never an answer itself, a key, or anything of the caller.

import { createHash } from 'node:crypto';

/** Entries kept; older ones fall out. */
export const DISPUTE_LOG_SIZE = 200;

export interface DisputedNode {
  readonly node: string;
  /** The first 16 hex digits of the SHA-256 of the answer's canonical form; null: no usable answer. */
  readonly answer: string | null;
  /** Its answer was the one given to the client. */
  readonly agrees: boolean;
}

export interface DisputeEntry {
  readonly at: string;
  readonly chain: string;
  readonly method: string;
  /** agreed (some nodes still differed), majority, archive, refused. */
  readonly outcome: string;
  readonly nodes: readonly DisputedNode[];
}

/** A short hash of an answer's canonical form, for telling answers apart in the log. */
export function answerHash(canonical: string): string {
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/**
 * A cluster's worker hands its disputes to the primary, which serves /health/disputes
 * and runs the probers that decide rotation for every worker.
 */
export interface DisputeRelay {
  entry(entry: DisputeEntry): void;
  /** The majority disputed `node` past the chain's rate: out of rotation until `until` (ms since the epoch). */
  takenOut(chain: string, node: string, until: number): void;
}

export class DisputeLog {
  private readonly entries: DisputeEntry[] = [];
  relay: DisputeRelay | undefined;

  constructor(private readonly size = DISPUTE_LOG_SIZE) {}

  add(entry: DisputeEntry): void {
    this.entries.push(entry);
    if (this.entries.length > this.size) this.entries.shift();
    this.relay?.entry(entry);
  }

  tookOut(chain: string, node: string, until: number): void {
    this.relay?.takenOut(chain, node, until);
  }

  /** Newest first. */
  list(): DisputeEntry[] {
    return this.entries.slice().reverse();
  }
}
