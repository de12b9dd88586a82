// A config reload: the file is read and validated whole, then swapped in. Unchanged
// chain endpoints keep their runtime; endpoints whose nodes did not change keep their
// nodes' health and breakers; replaced runtimes close after their in-flight calls. An
// invalid file is refused, logged and counted; the old config keeps serving. Every
// listener reads its limits through `limits()` when it uses them, so the swap alone
// applies them; what is read only at start (RESTART_ONLY) is named on the reload's log
// line as needing a restart, so a change that did not take is never silently kept.

import type { SigninThrottle } from '../accounts/signin-throttle.js';
import { closeChainRuntime, largestBatch, runtimeOptions } from '../chain/runtime.js';
import type { CacheStores, ChainSet } from './chain-set.js';
import { ConfigError, loadConfig } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import type { Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { NodeHolds } from '../ops/holds/node-holds.js';
import { reconfigureServices, type Services } from './services.js';
import type { LiveConfig } from './live-config.js';
import type { Probing } from './parts.js';

/** What a reload changes in a running gateway. */
export interface ReloadTarget {
  readonly live: LiveConfig;
  readonly chains: ChainSet;
  readonly caches: CacheStores;
  readonly probing: Probing;
  readonly holds: NodeHolds;
  readonly services: Services;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly throttle: SigninThrottle | undefined;
  /** It serves traffic but has no gRPC listener (none was needed at start). */
  readonly trafficWithoutGrpc: boolean;
  /** It serves the admin API (a cluster's workers do not): it says the audit line of a token change. */
  readonly servesAdmin: boolean;
}

/** The config file read and validated whole; undefined (logged, counted) when it is refused. */
export async function readConfig(file: string, metrics: Metrics, logger: Logger): Promise<GatewayConfig | undefined> {
  try {
    return await loadConfig(file);
  } catch (err) {
    metrics.configReloads.inc({ result: 'failed' });
    const problems = err instanceof ConfigError ? err.problems.join('; ') : (err as Error).message;
    logger.error('config reload refused; the previous config keeps serving', { event: 'reload', ok: false, problems });
    return undefined;
  }
}

/** Swap in a validated config; returns the settings it changed that need a restart (also on its log line). */
export async function applyConfig(t: ReloadTarget, next: GatewayConfig): Promise<string[]> {
  const now = t.live.config;
  const retired = t.chains.replace(
    next,
    t.metrics,
    t.logger,
    runtimeOptions(next.server, t.caches, largestBatch(next), t.probing, t.chains.disputes),
  );
  // Kept nodes keep their holds; nodes of rebuilt runtimes get theirs by name, before any call reaches them.
  t.holds.apply();
  const needsRestart = restartOnly(now, next);
  // gRPC endpoints need the gRPC listener, which only a start opens (a cluster's primary serves no traffic).
  if (t.trafficWithoutGrpc) for (const c of Object.values(next.chains)) if (c.transport === 'grpc') needsRestart.push(`chains.${c.name}`);
  reconfigureServices(t.services, next);
  t.throttle?.configure(next.dashboard.signinAttemptsPerMinute);
  const token = adminTokenChange(now.admin.token, next.admin.token);
  t.live.swap(next);
  // An operator rotating a leaked token must see that it took: never the token, nor anything derived from it.
  if (token !== undefined && t.servesAdmin) t.logger.warn('admin token changed', { event: 'audit', action: 'admin_token', change: token });
  t.logger.level = next.log.level;
  await Promise.all(retired.map(([old, successor]) => closeChainRuntime(old, successor)));
  t.metrics.configReloads.inc({ result: 'ok' });
  const fields = { event: 'reload', ok: true, chains: t.chains.all.length, replaced: retired.length };
  if (needsRestart.length === 0) t.logger.info('config reloaded', fields);
  else t.logger.warn('config reloaded; some changes need a restart', { ...fields, needsRestart: needsRestart.join(', ') });
  return needsRestart;
}

/**
 * Settings read once, at start: the listeners' addresses, the header cap Node's HTTP
 * parser is made with, the processes, the store and what is built on it (the key and
 * response caches, usage history), the dashboard's listener and proxy reading, the log
 * file and tracing, and the simulated nodes of `serve --devnet`. Everything else a reload
 * applies: the listeners read the rest of `server` when they use it.
 */
export const RESTART_ONLY: Readonly<Record<string, 'all' | readonly string[]>> = {
  server: ['host', 'port', 'adminHost', 'adminPort', 'grpcHost', 'grpcPort', 'publicUrl', 'maxHeaderBytes', 'workers'],
  dashboard: ['enabled', 'host', 'port', 'publicUrl', 'trustProxy'],
  store: 'all',
  keys: ['cacheTtlMs', 'cacheMaxEntries', 'negativeTtlMs', 'negativeMaxEntries'],
  cache: 'all',
  usage: 'all',
  log: ['file', 'maxBytes', 'files'],
  tracing: 'all',
  devnet: 'all',
};

/** The restart-only settings `next` changes, as `section.member`. */
export function restartOnly(now: GatewayConfig, next: GatewayConfig): string[] {
  const changed: string[] = [];
  for (const [section, members] of Object.entries(RESTART_ONLY)) {
    const a = now[section as keyof GatewayConfig] as unknown as Readonly<Record<string, unknown>>;
    const b = next[section as keyof GatewayConfig] as unknown as Readonly<Record<string, unknown>>;
    const names = members === 'all' ? [...new Set([...Object.keys(a), ...Object.keys(b)])] : members;
    for (const m of names) if (JSON.stringify(a[m]) !== JSON.stringify(b[m])) changed.push(`${section}.${m}`);
  }
  return changed;
}

/** How admin.token changed, if it did (said in the audit line; the token never is). */
function adminTokenChange(now: string | undefined, next: string | undefined): 'set' | 'changed' | 'removed' | undefined {
  if (now === next) return undefined;
  return now === undefined ? 'set' : next === undefined ? 'removed' : 'changed';
}
