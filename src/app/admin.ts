// The admin listener (health, readiness, /metrics, the admin API) and the dashboard,
// on the admin listener or on its own. Config is read through functions, so a reload
// applies at once to what is not named as needing a restart.

import { createServer, type Server } from 'node:http';
import { AccountKeys } from '../accounts/account-keys.js';
import { keyChangeGuard } from '../accounts/key-change-guard.js';
import { SigninThrottle } from '../accounts/signin-throttle.js';
import type { ChainSet } from './chain-set.js';
import { createAdminApp, type Lifecycle } from '../admin/admin-app.js';
import type { EndpointInfo } from '../admin/dashboard/account-api.js';
import { loadAssets } from '../admin/dashboard/assets.js';
import { createDashboardApp, dashboardMiddleware, type DashboardDeps } from '../admin/dashboard/dashboard.js';
import { listen, urlOf } from '../transports/shared/listeners.js';
import type { Logger } from '../ops/log.js';
import type { Metrics } from '../ops/metrics/metrics.js';
import type { NodeHolds } from '../ops/holds/node-holds.js';
import type { UsageHistory } from '../quota/usage-history.js';
import type { Services } from './services.js';
import type { LiveConfig } from './live-config.js';
import { storeFailurePolicy } from '../config/store-config.js';

export interface AdminContext {
  readonly live: LiveConfig;
  readonly chains: ChainSet;
  readonly services: Services;
  readonly holds: NodeHolds;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly lifecycle: () => Lifecycle;
  /** Every chain endpoint's public URL (the dashboard shows them). */
  readonly endpoints: () => EndpointInfo[];
  /** A cluster's primary: the /metrics of every worker with its own. */
  readonly scrape?: () => Promise<string>;
  /** Usage history the admin API reads. */
  readonly history: UsageHistory;
}

export interface AdminListeners {
  /** The admin listener, then the dashboard's own when it has one: closed last, in reverse. */
  readonly servers: readonly Server[];
  readonly url: string;
  /** The dashboard's address (`…/dashboard`, from dashboard.publicUrl when set), '' when it is off. */
  readonly dashboardUrl: string;
  /** The listener serving the dashboard (the admin listener or its own), '' when it is off. */
  readonly dashboardListenUrl: string;
  /** Sign-in attempts per minute, which a reload changes. */
  readonly throttle: SigninThrottle | undefined;
}

export async function startAdmin(ctx: AdminContext): Promise<AdminListeners> {
  const { live, services } = ctx;
  const config = live.config;
  const dashboard = config.dashboard.enabled ? await dashboardDeps(ctx) : undefined;
  const onOwnPort = dashboard !== undefined && config.dashboard.port !== undefined;
  const admin = createAdminApp({
    chains: () => ctx.chains.all,
    disputes: ctx.chains.disputes,
    metrics: ctx.metrics,
    lifecycle: ctx.lifecycle,
    store: () => ({
      record: services.bundle.record,
      hot: services.bundle.hot,
      up: services.bundle.up(),
      policy: storeFailurePolicy(config.store),
    }),
    keys: services.keys,
    keyChanges: keyChangeGuard(services.bundle.limiter, () => live.config.keys),
    limiter: services.bundle.limiter,
    history: ctx.history,
    accounts: services.bundle.accounts,
    now: ctx.now,
    holds: ctx.holds,
    scrape: ctx.scrape,
    // Read per request: a reload's new token applies to the next request.
    adminToken: () => live.config.admin.token,
    maxBodyBytes: 64 * 1024,
    dashboard: dashboard === undefined || onOwnPort ? undefined : dashboardMiddleware(dashboard),
  });
  const servers = [createServer(admin.callback())];
  const sc = config.server;
  const url = urlOf(sc.adminHost, (await listen(servers[0] as Server, sc.adminHost, sc.adminPort)).port);
  if (dashboard === undefined) return { servers, url, dashboardUrl: '', dashboardListenUrl: '', throttle: undefined };
  let base = url;
  if (onOwnPort) {
    const own = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, createDashboardApp(dashboard).callback());
    servers.push(own);
    base = urlOf(config.dashboard.host, (await listen(own, config.dashboard.host, config.dashboard.port ?? 0)).port);
  }
  const dashboardUrl = `${config.dashboard.publicUrl ?? base}/dashboard`;
  return { servers, url, dashboardUrl, dashboardListenUrl: base, throttle: dashboard.throttle };
}

/** What the dashboard reads; config is read through functions so a reload applies at once. */
async function dashboardDeps(ctx: AdminContext): Promise<DashboardDeps> {
  const { live, services, now } = ctx;
  const d = live.config.dashboard;
  return {
    accounts: services.accounts,
    accountKeys: new AccountKeys(services.keys, ctx.history, {
      tiers: () => live.config.tiers,
      chains: () => ctx.chains.all.map((c) => c.name),
      now,
      changes: keyChangeGuard(services.bundle.limiter, () => live.config.keys),
      usageLagMs: () => live.config.usage.flushIntervalMs,
    }),
    keys: services.keys,
    history: ctx.history,
    throttle: new SigninThrottle(d.signinAttemptsPerMinute, now),
    assets: await loadAssets(),
    settings: { trustProxy: d.trustProxy, publicUrl: d.publicUrl },
    tiers: () => live.config.tiers,
    endpoints: ctx.endpoints,
    adminToken: () => live.config.admin.token,
    logger: ctx.logger,
    now,
  };
}
