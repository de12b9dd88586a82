// Holds kept in the record and announced through the Redis hot state: every change
// this instance makes is written to the record, then published on `<prefix>node-holds`
// so every other instance reads the holds again at once (and again after a reconnect,
// when announcements may have been missed). The record is the truth: an announcement
// lost while Redis is away waits for the next periodic re-read (ops/holds/node-holds.ts).

import type { RedisChannels } from '../../store/redis-channels.js';
import type { HoldStore, NodeHoldRecord } from './hold-store.js';

export class AnnouncedHoldStore implements HoldStore {
  private readonly listeners: Array<() => void> = [];
  private readonly channel: string;

  private constructor(
    private readonly record: HoldStore,
    private readonly channels: RedisChannels,
    prefix: string,
  ) {
    this.channel = `${prefix}node-holds`;
  }

  /** `listen`: hear other instances' changes (the gateway; the CLI only writes). */
  static async open(record: HoldStore, channels: RedisChannels, prefix: string, listen: boolean): Promise<AnnouncedHoldStore> {
    const store = new AnnouncedHoldStore(record, channels, prefix);
    if (listen) await channels.listen(store.channel, { message: () => store.emit(), resync: () => store.emit() });
    return store;
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }

  all(): Promise<Map<string, NodeHoldRecord>> {
    return this.record.all();
  }

  async set(id: string, hold: NodeHoldRecord | undefined): Promise<void> {
    await this.record.set(id, hold);
    // Redis away: the others read the record again on their interval.
    await this.channels.publish(this.channel, { id }).catch(() => undefined);
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    await this.record.close();
  }
}
