// Concurrent long-lived connections per key (a tier's `wsConnections`): a slot is
// taken before a WebSocket upgrade completes and given back when it closes. The
// memory slots count in this process; the Redis slots (redis-connection-slots.ts)
// count across every instance.

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
