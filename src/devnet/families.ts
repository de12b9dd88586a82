// Finds devnet families the way the plugin loader finds plugins: every folder of the
// package's plugins/ with a devnet module (devnet.ts, or devnet/index.ts) has a devnet
// family of the folder's name, its default export; any other name is an installed
// plugin package, whose `devnet` export (when it has one) is its family. Nothing here
// lists a family.

import { pathToFileURL } from 'node:url';
import { builtInFamilies, pluginModules } from '../plugin/loader.js';
import type { DevnetFamily } from './family.js';

const loaded = new Map<string, DevnetFamily>();

function isFamily(v: unknown): v is DevnetFamily {
  if (v === null || typeof v !== 'object') return false;
  const f = v as Partial<Record<string, unknown>>;
  if (f.kind === 'http') return typeof f.rpcPath === 'function' && typeof f.node === 'function';
  return f.kind === 'server' && typeof f.createNode === 'function';
}

/** Names of the built-in families (no module is loaded). */
export function devnetFamilyNames(): ReadonlySet<string> {
  return new Set(pluginModules('devnet').keys());
}

/** The family of a name, or why there is none. */
async function find(name: string): Promise<DevnetFamily | string> {
  const path = pluginModules('devnet').get(name);
  if (path !== undefined) {
    const mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
    return isFamily(mod.default) ? mod.default : `plugins/${name}'s devnet module does not default-export a devnet family`;
  }
  const none = `no devnet family "${name}" (a plugin folder with a devnet module, or an installed plugin package with a devnet export; found: ${[...devnetFamilyNames()].join(', ')})`;
  if (builtInFamilies().has(name)) return none;
  try {
    const mod = (await import(name)) as { devnet?: unknown };
    if (mod.devnet === undefined) return none;
    return isFamily(mod.devnet) ? mod.devnet : `the devnet export of package "${name}" is not a devnet family`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') return none;
    throw err;
  }
}

/** The family of a name, loaded once; throws for a name nothing simulates. */
export async function devnetFamily(name: string): Promise<DevnetFamily> {
  const known = loaded.get(name);
  if (known !== undefined) return known;
  const found = await find(name);
  if (typeof found === 'string') throw new Error(found);
  loaded.set(name, found);
  return found;
}

/** Whether a plugin name has a devnet family (built in, or an installed package's export). */
export async function hasDevnetFamily(name: string): Promise<boolean> {
  return loaded.has(name) || typeof (await find(name)) !== 'string';
}
