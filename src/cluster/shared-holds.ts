// Operators' holds on nodes in a cluster: the primary keeps them (its store, its
// admin API) and pushes every change to the workers, awaited before the admin API
// answers; a worker reads them only from what was pushed.

import type { HoldStore, NodeHoldRecord } from '../ops/holds/hold-store.js';

export class PushedHoldStore implements HoldStore {
  private holds = new Map<string, NodeHoldRecord>();

  /** The primary's holds, as pushed. */
  take(holds: ReadonlyMap<string, NodeHoldRecord>): void {
    this.holds = new Map(holds);
  }

  all(): Promise<Map<string, NodeHoldRecord>> {
    return Promise.resolve(new Map(this.holds));
  }

  set(): Promise<void> {
    return Promise.reject(new Error('holds are changed at the primary (its admin API)'));
  }

  onChange(): void {
    // The worker re-reads when the primary pushes.
  }

  async close(): Promise<void> {
    this.holds.clear();
  }
}
