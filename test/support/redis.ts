// The test Redis (127.0.0.1:6379): a fresh prefix per test file, and removing
// everything written under it afterwards.

import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';

export const REDIS_URL = 'redis://127.0.0.1:6379';

export function testPrefix(): string {
  return `nrtest:${randomBytes(4).toString('hex')}:`;
}

/** Delete every key under the prefix (SCAN, so a busy Redis is not blocked). */
export async function deleteUnderPrefix(prefix: string): Promise<void> {
  const r = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

/** The keys under a prefix (SCAN). */
export async function keysUnder(prefix: string): Promise<string[]> {
  const r = new Redis(REDIS_URL);
  const found: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
  return found;
}
