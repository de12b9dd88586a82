// The Redis store of earlier versions, read whole for `store migrate --from redis://…`:
// key records (hashes, retired values, restrictions, last uses), dashboard accounts
// with the sign-in tokens and sessions Redis still holds, usage per key and day, and
// operators' holds, all under one prefix. Read through the Redis store's own readers;
// nothing under the prefix is changed.

import { Redis } from 'ioredis';
import { RedisAccountStore } from '../accounts/redis-account-store.js';
import { openRedisKeyStore } from '../auth/redis-key-store.js';
import { ControlError } from '../control-errors.js';
import { RedisHoldStore } from '../ops/holds/hold-store.js';
import { RedisLimiter } from '../quota/redis-limiter.js';
import type { RecordRow } from './record-rows.js';

/** A URL as a message may print it: without its password. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = 'REDACTED';
    return u.toString();
  } catch {
    return 'the URL given';
  }
}

/** Every row the Redis store at `url` holds under `prefix`. */
export async function readRedisStore(url: string, prefix: string): Promise<RecordRow[]> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    throw new ControlError('UNAVAILABLE', `cannot reach Redis at ${shown(url)}: ${(err as Error).message}`);
  }
  try {
    return await readUnder(redis, prefix);
  } finally {
    redis.disconnect();
  }
}

async function readUnder(redis: Redis, prefix: string): Promise<RecordRow[]> {
  const rows: RecordRow[] = [];
  const dump = await new RedisAccountStore(redis, prefix).dump();
  for (const account of dump.accounts) rows.push({ kind: 'account', account });
  for (const token of dump.tokens) rows.push({ kind: 'token', token });
  for (const session of dump.sessions) rows.push({ kind: 'session', session });
  const keys = await openRedisKeyStore(redis, { prefix });
  const usage = new RedisLimiter(redis, { prefix, onFailure: 'fail-closed', instances: 1 });
  try {
    for (const key of await keys.list()) {
      rows.push({ kind: 'key', key });
      for (const row of await usage.usage(key.id)) rows.push({ kind: 'usage', keyId: key.id, usage: row });
    }
  } finally {
    await keys.close();
    await usage.close();
  }
  const holds = await RedisHoldStore.open(redis, { prefix });
  for (const [id, hold] of await holds.all()) rows.push({ kind: 'hold', id, hold });
  await holds.close();
  return rows;
}
