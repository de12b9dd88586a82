// Resolves plugin names from config: built-in families from plugins/<name>, any
// other name as an installed npm package whose default export is a ChainPlugin.
// Loaded plugins are cached for the process (reloads reuse them).

import type { ChainPlugin } from './plugin.js';
import evm from '../plugins/evm/index.js';
import objectx from '../plugins/objectx/index.js';
import sdkGrpc from '../plugins/sdk-grpc/index.js';
import sdkRest from '../plugins/sdk-rest/index.js';
import sdkRpc from '../plugins/sdk-rpc/index.js';

const BUILT_IN: ReadonlyMap<string, ChainPlugin> = new Map<string, ChainPlugin>([
  ['evm', evm],
  ['objectx', objectx],
  ['sdk-rpc', sdkRpc],
  ['sdk-rest', sdkRest],
  ['sdk-grpc', sdkGrpc],
]);

const loaded = new Map<string, ChainPlugin>(BUILT_IN);

function isPlugin(v: unknown): v is ChainPlugin {
  return (
    v !== null && typeof v === 'object' && typeof (v as ChainPlugin).name === 'string' && typeof (v as ChainPlugin).create === 'function'
  );
}

export function builtInPlugin(name: string): ChainPlugin | undefined {
  return BUILT_IN.get(name);
}

/** A plugin already resolved by loadPlugins (config loading does that first). */
export function loadedPlugin(name: string): ChainPlugin {
  const p = loaded.get(name);
  if (p === undefined) throw new Error(`plugin "${name}" has not been loaded`);
  return p;
}

export async function loadPlugins(names: readonly string[]): Promise<{ plugins: ReadonlyMap<string, ChainPlugin>; problems: string[] }> {
  const problems: string[] = [];
  for (const name of names) {
    if (loaded.has(name)) continue;
    try {
      const mod = (await import(name)) as { default?: unknown; plugin?: unknown };
      const candidate = mod.default ?? mod.plugin;
      if (isPlugin(candidate)) loaded.set(name, candidate);
      else problems.push(`plugin "${name}" was found but does not export a chain plugin (default export with name and create)`);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ERR_MODULE_NOT_FOUND') problems.push(`plugin "${name}" failed to load: ${(err as Error).message}`);
      // Not installed: validation reports it against chains.<name>.plugin.
    }
  }
  return { plugins: loaded, problems };
}
