// Resolves plugin names from config. Built-in families are discovered: every folder
// of the package's plugins/ with an index module is a plugin of that folder's name, so
// a new family is one folder and nothing here lists it. Any other name is imported as
// an installed npm package whose default (or `plugin`) export is a ChainPlugin.
// Loaded plugins are cached for the process (reloads reuse them). The devnet finds its
// families the same way, by a folder's devnet module (pluginModules).

import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { CONTRACT_VERSION, type ChainPlugin } from './contract.js';

/** plugins/ beside src/: the source tree under tsx, dist/plugins under `npm start`. */
const PLUGINS_DIR = fileURLToPath(new URL('../../plugins/', import.meta.url));

const loaded = new Map<string, ChainPlugin>();
const folderModules = new Map<string, ReadonlyMap<string, string>>();

/**
 * Folder name → path of its module `stem` (`index`, `devnet` …) for every folder of
 * plugins/ that has one, as `<stem>.js`, `<stem>.ts`, or `<stem>/index.{js,ts}` (read
 * once per stem).
 */
export function pluginModules(stem: string): ReadonlyMap<string, string> {
  const known = folderModules.get(stem);
  if (known !== undefined) return known;
  const found = new Map<string, string>();
  for (const entry of readdirSync(PLUGINS_DIR, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    for (const file of [`${stem}.js`, `${stem}.ts`, `${stem}/index.js`, `${stem}/index.ts`]) {
      const path = join(PLUGINS_DIR, entry.name, file);
      if (existsSync(path)) {
        found.set(entry.name, path);
        break;
      }
    }
  }
  folderModules.set(stem, found);
  return found;
}

function isPlugin(v: unknown): v is ChainPlugin {
  return (
    v !== null && typeof v === 'object' && typeof (v as ChainPlugin).name === 'string' && typeof (v as ChainPlugin).create === 'function'
  );
}

/** Folder name → index module path of every built-in family. */
export function builtInFamilies(): ReadonlyMap<string, string> {
  return pluginModules('index');
}

/** A plugin already resolved by loadPlugins (config loading does that first). */
export function loadedPlugin(name: string): ChainPlugin {
  const p = loaded.get(name);
  if (p === undefined) throw new Error(`plugin "${name}" has not been loaded`);
  return p;
}

async function importPlugin(name: string, specifier: string): Promise<ChainPlugin | string> {
  const mod = (await import(specifier)) as { default?: unknown; plugin?: unknown };
  const candidate = mod.default ?? mod.plugin;
  if (!isPlugin(candidate)) return `plugin "${name}" was found but does not export a chain plugin (default export with name and create)`;
  const contract = (candidate as { contract?: unknown }).contract;
  if (contract !== CONTRACT_VERSION) {
    const written = contract === undefined ? 'an earlier plugin contract (it names none)' : `plugin contract ${String(contract)}`;
    return `plugin "${name}" is written for ${written}; this noderouter loads plugins of contract ${CONTRACT_VERSION} (docs/plugins.md says what changed)`;
  }
  return candidate;
}

export async function loadPlugins(names: readonly string[]): Promise<{ plugins: ReadonlyMap<string, ChainPlugin>; problems: string[] }> {
  const problems: string[] = [];
  const families = builtInFamilies();
  for (const name of names) {
    if (loaded.has(name)) continue;
    const builtIn = families.get(name);
    try {
      const p = await importPlugin(name, builtIn === undefined ? name : pathToFileURL(builtIn).href);
      if (typeof p === 'string') problems.push(p);
      else loaded.set(name, p);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (builtIn !== undefined || code !== 'ERR_MODULE_NOT_FOUND')
        problems.push(`plugin "${name}" failed to load: ${(err as Error).message}`);
      // Not installed: validation reports it against chains.<name>.plugin.
    }
  }
  return { plugins: loaded, problems };
}
