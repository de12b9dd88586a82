// What every command shares: which config file it reads (--config, else
// $NODEROUTER_CONFIG, else ./config/gateway.yaml, else the one shipped with the
// package), its output (scripts read the last line), and the dashboard links it prints.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import { packageRoot } from '../package-root.js';
import { option, type ParsedArgs } from './args.js';

export function defaultConfigPath(explicit?: string): string {
  if (explicit !== undefined) return explicit;
  const env = process.env.NODEROUTER_CONFIG;
  if (env !== undefined && env !== '') return env;
  const local = join(process.cwd(), 'config', 'gateway.yaml');
  return existsSync(local) ? local : join(packageRoot(), 'config', 'gateway.yaml');
}

/** The config of --config (or the default), validated whole. */
export function commandConfig(args: ParsedArgs): Promise<GatewayConfig> {
  return loadConfig(defaultConfigPath(option(args, 'config')));
}

export function out(line = ''): void {
  process.stdout.write(`${line}\n`);
}

export function signinLink(dashboardUrl: string, token: string): string {
  return `${dashboardUrl}/signin?token=${token}`;
}

/**
 * Where the dashboard of a config answers, for links the CLI prints: dashboard.publicUrl,
 * else its own listener or the admin listener (a wildcard address printed as loopback).
 */
export function configuredDashboardUrl(config: GatewayConfig): string {
  const d = config.dashboard;
  if (d.publicUrl !== undefined) return `${d.publicUrl}/dashboard`;
  const [host, port] = d.port !== undefined ? [d.host, d.port] : [config.server.adminHost, config.server.adminPort];
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}/dashboard`;
}
