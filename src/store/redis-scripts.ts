// Server-side scripts run by name: the first call loads a script, later ones send
// only its SHA (EVALSHA), so a request carries a few dozen bytes instead of the
// script's whole text. ioredis reloads a script Redis has forgotten (NOSCRIPT).

import type { Redis } from 'ioredis';

export type ScriptCall = (...args: Array<string | number>) => Promise<unknown>;

/** A script with `keys` KEYS arguments, callable on this client; defined once per client and name. */
export function script(redis: Redis, name: string, keys: number, lua: string): ScriptCall {
  const client = redis as unknown as Record<string, ScriptCall | undefined>;
  if (client[name] === undefined) redis.defineCommand(name, { numberOfKeys: keys, lua });
  const fn = client[name] as ScriptCall;
  return (...args) => fn.apply(redis, args);
}
