// Concurrent long-lived connections per key (a tier's `wsConnections`): a slot is
// taken before a WebSocket upgrade completes and given back when it closes. The
// memory slots count in this process; the Redis slots (redis-connection-slots.ts)
// count across every instance. An account's connections and subscriptions on a tier
// (`account.wsConnections`, `account.wsSubscriptions`) are slot sets of their own
// under names no key id can take, held the same way.

import type { TierConfig } from '../config/types.js';

/** The slot set of an account's WebSocket connections on a tier (no key id contains "/"). */
export function accountConnections(account: string, tier: TierConfig): string {
  return `account/${tier.name}/${account}`;
}

/** The slot set of an account's WebSocket subscriptions on a tier. */
export function accountSubscriptions(account: string, tier: TierConfig): string {
  return `account-subs/${tier.name}/${account}`;
}

export interface ConnectionSlots {
  /** Take one of `cap` slots for the key; false when all are taken. Throws UNAVAILABLE (fail-closed). */
  acquire(keyId: string, slot: string, cap: number): Promise<boolean>;
  release(keyId: string, slot: string): void;
  close(): Promise<void>;
}

export class MemoryConnectionSlots implements ConnectionSlots {
  private readonly held = new Map<string, Set<string>>();

  /** Synchronous at heart; the Redis fallback calls it directly. */
  take(keyId: string, slot: string, cap: number): boolean {
    let set = this.held.get(keyId);
    if (set === undefined) {
      set = new Set();
      this.held.set(keyId, set);
    }
    if (set.size >= cap) return false;
    set.add(slot);
    return true;
  }

  acquire(keyId: string, slot: string, cap: number): Promise<boolean> {
    return Promise.resolve(this.take(keyId, slot, cap));
  }

  release(keyId: string, slot: string): void {
    const set = this.held.get(keyId);
    if (set === undefined) return;
    set.delete(slot);
    if (set.size === 0) this.held.delete(keyId);
  }

  async close(): Promise<void> {
    this.held.clear();
  }
}
