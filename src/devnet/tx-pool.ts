// One node's pool of submitted transactions (its mempool). A transaction is accepted
// once; the network's next block includes it if the node is following the chain then
// (a stalled node keeps its pool until its head moves again). Pending transactions are
// known only to the nodes they were sent to; an included one to every node of the
// network that has its block. Transactions are bytes under a hash the family chooses.

import type { IncludedTx } from './chain.js';
import type { NodeView } from './family.js';

/** What a submission found: new to this node, already in its pool, or in a block it has. */
export type Submission = 'accepted' | 'pending' | 'included';

export class TxPool {
  private readonly pool = new Map<string, Buffer>();
  private readonly acceptListeners: Array<(hash: string) => void> = [];
  private readonly waiters = new Map<string, Array<(tx: IncludedTx) => void>>();

  constructor(private readonly node: NodeView) {
    node.chain.onSeal((height) => this.seal(height));
    node.chain.onBlocks(() => this.wake());
  }

  submit(hash: string, bytes: Buffer): Submission {
    if (this.pool.has(hash)) return 'pending';
    if (this.included(hash) !== undefined) return 'included';
    this.pool.set(hash, bytes);
    for (const l of this.acceptListeners) l(hash);
    return 'accepted';
  }

  /** A transaction waiting in this node's pool. */
  pending(hash: string): Buffer | undefined {
    return this.pool.get(hash);
  }

  /** A transaction in a block this node has. */
  included(hash: string): IncludedTx | undefined {
    const tx = this.node.chain.tx(hash);
    return tx !== undefined && tx.height <= this.node.height() ? tx : undefined;
  }

  /** Called with each newly accepted hash (pending-transaction filters). */
  onAccepted(listener: (hash: string) => void): void {
    this.acceptListeners.push(listener);
  }

  /** Resolves once a block this node has includes the transaction, or with undefined after `timeoutMs`. */
  whenIncluded(hash: string, timeoutMs: number): Promise<IncludedTx | undefined> {
    const now = this.included(hash);
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const list = this.waiters.get(hash) ?? [];
        list.splice(list.indexOf(done), 1);
        if (list.length === 0) this.waiters.delete(hash);
        resolve(undefined);
      }, timeoutMs).unref();
      const done = (tx: IncludedTx): void => {
        clearTimeout(timer);
        resolve(tx);
      };
      const list = this.waiters.get(hash) ?? [];
      list.push(done);
      this.waiters.set(hash, list);
    });
  }

  private seal(height: number): void {
    if (this.pool.size === 0 || this.node.height() < height) return;
    for (const [hash, bytes] of this.pool) this.node.chain.include(hash, bytes, height);
    this.pool.clear();
  }

  private wake(): void {
    for (const [hash, list] of this.waiters) {
      const tx = this.included(hash);
      if (tx === undefined) continue;
      this.waiters.delete(hash);
      for (const done of list) done(tx);
    }
  }
}
