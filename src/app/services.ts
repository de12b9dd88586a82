// The store-backed services the gateway and the CLI share, wired once: the configured
// store (keys, limits and usage, accounts), the key service and the account service.
// `live` services watch for changes made elsewhere (the gateway); the CLI's only write.

import { AccountService, type AccountRules } from '../accounts/account-service.js';
import { KeyService } from '../auth/key-service.js';
import type { GatewayConfig } from '../config/types.js';
import { openStore, type OpenStoreOptions, type StoreBundle } from './open-store.js';

export interface Services {
  readonly bundle: StoreBundle;
  readonly keys: KeyService;
  readonly accounts: AccountService;
}

export interface ServicesOptions {
  readonly live: boolean;
  /** Clock of limits, sessions and key expiry (tests move it). */
  readonly now?: () => number;
  readonly onHealth?: (up: boolean) => void;
  readonly onFallback?: (err: unknown) => void;
  /** In a cluster's worker: the link to the primary (app/open-store.ts). */
  readonly primary?: OpenStoreOptions['primary'];
}

export function accountRules(config: GatewayConfig): AccountRules {
  return { tiers: config.tiers, sessionTtlMs: config.dashboard.sessionTtlMs, signinTokenTtlMs: config.dashboard.signinTokenTtlMs };
}

export async function openServices(config: GatewayConfig, options: ServicesOptions): Promise<Services> {
  const bundle = await openStore(config.store, options);
  const accounts = new AccountService(bundle.accounts, bundle.keys, accountRules(config), options.now);
  const keys = new KeyService(bundle.keys, config.tiers, config.keys, accounts.resolveForKeys);
  return { bundle, keys, accounts };
}

/** After a config reload: the services take the new tiers and rules. */
export function reconfigureServices(services: Services, config: GatewayConfig): void {
  services.keys.configure(config.tiers, config.keys);
  services.accounts.configure(accountRules(config));
}
