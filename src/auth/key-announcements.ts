// Key changes told to every instance through the Redis hot state: each change this
// instance commits to the record is published on `<prefix>changes` (awaited, so a
// revocation is announced before it returns), and each change another instance
// publishes drops exactly those hashes here. The record is the truth: a message lost
// while Redis is away costs nothing but time (everything is dropped after a
// reconnect, and the key cache's TTL bounds the rest).

import type { ChannelListener, RedisChannels } from '../store/redis-channels.js';
import type { KeyStore, StoreChange } from './key-store.js';

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((h) => typeof h === 'string');

/** A published change as the key store takes it; anything unreadable drops everything, which is always safe. */
export function decodeKeyChange(text: string): StoreChange {
  try {
    const v = JSON.parse(text) as { hashes?: unknown; invalid?: unknown };
    if (strings(v.hashes)) return strings(v.invalid) ? { hashes: v.hashes, invalid: v.invalid } : { hashes: v.hashes };
  } catch {
    // fall through
  }
  return { all: true };
}

/**
 * Publish this process's key changes and apply other instances'. `listen` is false in
 * the CLI, which only writes.
 */
export async function announceKeys(keys: KeyStore, channels: RedisChannels, prefix: string, listen: boolean): Promise<void> {
  const channel = `${prefix}changes`;
  keys.announceTo(async (change) => {
    // Redis away: the change is in the record; other instances read it there (their caches' TTL).
    await channels.publish(channel, { ...change }).catch(() => undefined);
  });
  if (!listen) return;
  const listener: ChannelListener = {
    message: (text) => void keys.sync(decodeKeyChange(text)),
    resync: () => void keys.sync({ all: true }),
  };
  await channels.listen(channel, listener);
}
