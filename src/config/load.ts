// Reading a config file: YAML → ${ENV} → plugins resolved → strict validation →
// PORT/ADMIN_PORT overrides. Errors come back as one ConfigError listing every
// problem, each prefixed with the file.

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { loadPlugins } from '../plugin/loader.js';
import { isTree } from './reader.js';
import { interpolate } from './interpolate.js';
import { validateConfig } from './schema.js';
import type { GatewayConfig } from './types.js';

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super(`${file}: invalid configuration\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function pluginNames(tree: unknown): string[] {
  if (!isTree(tree) || !isTree(tree.chains)) return [];
  const names = new Set<string>();
  for (const c of Object.values(tree.chains)) {
    if (isTree(c) && typeof c.plugin === 'string' && c.plugin !== '') names.add(c.plugin);
  }
  return [...names];
}

function applyEnvOverrides(config: GatewayConfig, env: NodeJS.ProcessEnv, file: string): GatewayConfig {
  const override = (name: string, current: number): number => {
    const v = env[name];
    if (v === undefined || v === '') return current;
    if (!/^\d+$/.test(v) || Number(v) > 65535) throw new ConfigError(file, [`${name}=${v} must be a port number from 0 to 65535`]);
    return Number(v);
  };
  const port = override('PORT', config.server.port);
  const adminPort = override('ADMIN_PORT', config.server.adminPort);
  if (port === config.server.port && adminPort === config.server.adminPort) return config;
  return Object.freeze({ ...config, server: Object.freeze({ ...config.server, port, adminPort }) });
}

/** Parse and validate config text; `file` names it in messages and anchors relative paths. */
export async function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0)
    throw new ConfigError(
      file,
      doc.errors.map((e) => `YAML: ${e.message.split('\n')[0]}`),
    );
  const problems: string[] = [];
  const tree = interpolate(doc.toJS(), env, '', problems);
  if (problems.length > 0) throw new ConfigError(file, problems);
  const { plugins, problems: pluginProblems } = await loadPlugins(pluginNames(tree));
  const result = validateConfig(tree, file, (name) => plugins.get(name));
  const all = [...pluginProblems, ...(result.problems ?? [])];
  if (all.length > 0 || result.config === undefined) throw new ConfigError(file, all);
  return applyEnvOverrides(result.config, env, file);
}

export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(file, [code === 'ENOENT' ? 'file not found' : `cannot be read (${code ?? String(err)})`]);
  }
  return parseConfig(text, file, env);
}
