// Optimistic updates of JSON records in Redis: a writer reads a record, computes the
// new one, and one script writes it (with its index entries) only if the record is
// still exactly what the writer read; otherwise nothing is written and the writer
// reads again. Two instances changing one record can therefore never lose a change.

import type { RedisClient } from './redis-connection.js';
import { script, type ScriptCall } from './redis-scripts.js';

/**
 * KEYS[1]: the record; KEYS[2..]: index keys. ARGV[1]: the record as read ('' when
 * absent), ARGV[2]: the new record, then three per index key: op, value, epoch ms.
 * Returns 1 when written, 0 when the record had changed.
 */
const COMPARE_AND_SET = `
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
local a = 3
for i = 2, #KEYS do
  local op, v = ARGV[a], ARGV[a + 1]
  if op == 'set' then redis.call('SET', KEYS[i], v)
  elseif op == 'setat' then redis.call('SET', KEYS[i], v, 'PXAT', ARGV[a + 2])
  elseif op == 'delif' then
    if redis.call('GET', KEYS[i]) == v then redis.call('DEL', KEYS[i]) end
  elseif op == 'sadd' then redis.call('SADD', KEYS[i], v)
  elseif op == 'srem' then redis.call('SREM', KEYS[i], v)
  end
  a = a + 3
end
return 1
`;

/** One index change written with the record: set (at: expires then), delete if it still holds value, set add/remove. */
export type IndexOp =
  | { readonly op: 'set'; readonly key: string; readonly value: string; readonly at?: number }
  | { readonly op: 'delif' | 'sadd' | 'srem'; readonly key: string; readonly value: string };

export class RedisCas {
  private readonly call: ScriptCall;

  constructor(redis: RedisClient) {
    this.call = script(redis, 'noderouterCompareAndSet', 'counted', COMPARE_AND_SET);
  }

  /** Write `next` at `key` (and the index ops) iff it still holds `expected` (undefined: absent). */
  async write(key: string, expected: string | undefined, next: string, ops: readonly IndexOp[] = []): Promise<boolean> {
    const keys = [key];
    const args: Array<string | number> = [expected ?? '', next];
    for (const o of ops) {
      keys.push(o.key);
      if (o.op === 'set' && o.at !== undefined) args.push('setat', o.value, Math.floor(o.at));
      else args.push(o.op, o.value, 0);
    }
    return (await this.call(keys.length, ...keys, ...args)) === 1;
  }

  /**
   * Read-change-write of one JSON record until it lands (a conflict means another
   * writer got there first: read again and re-apply). `change` sees the current record.
   */
  async update<T>(
    redis: RedisClient,
    key: string,
    change: (current: T | undefined) => T | undefined,
    attempts = 50,
  ): Promise<T | undefined> {
    for (let i = 0; i < attempts; i++) {
      const text = await redis.get(key);
      const current = text === null ? undefined : (JSON.parse(text) as T);
      const next = change(current);
      if (next === undefined || next === current) return current;
      if (await this.write(key, text ?? undefined, JSON.stringify(next))) return next;
    }
    throw new Error(`${key} kept changing under ${attempts} attempts to update it`);
  }
}
