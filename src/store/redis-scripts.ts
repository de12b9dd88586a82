// Server-side scripts run by name: the first call loads a script, later ones send
// only its SHA (EVALSHA), so a request carries a few dozen bytes instead of the
// script's whole text. ioredis reloads a script Redis has forgotten (NOSCRIPT).

import type { RedisClient } from './redis-connection.js';

export type ScriptCall = (...args: Array<string | number>) => Promise<unknown>;

/**
 * A script with `keys` KEYS arguments, callable on this client; defined once per
 * client and name. With `keys` 'counted', the call's first argument is the number
 * of KEYS that follow (scripts over a varying set of keys).
 */
export function script(redis: RedisClient, name: string, keys: number | 'counted', lua: string): ScriptCall {
  const client = redis as unknown as Record<string, ScriptCall | undefined>;
  if (client[name] === undefined) redis.defineCommand(name, keys === 'counted' ? { lua } : { numberOfKeys: keys, lua });
  const fn = client[name] as ScriptCall;
  return (...args) => fn.apply(redis, args);
}
