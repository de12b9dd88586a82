// `serve --devnet`'s demo: the dashboard account "demo" (every tier), a fresh demo key
// each start (earlier ones revoked, so none lingers) and a one-time sign-in link.

import type { AccountRecord } from '../accounts/account-store.js';
import type { GatewayConfig } from '../config/types.js';
import type { Gateway } from '../app/gateway.js';
import { signinLink } from './common.js';

const DEMO_LABEL = 'demo key (npm start)';

export interface Demo {
  /** The demo key's value, shown once. */
  readonly key: string;
  /** The demo account's sign-in link; undefined when the dashboard is off. */
  readonly link: string | undefined;
}

export async function startDemo(gateway: Gateway, config: GatewayConfig): Promise<Demo> {
  const account = await demoAccount(gateway, config);
  const key = await issueDemoKey(gateway, config, account);
  const link =
    gateway.dashboardUrl === '' ? undefined : signinLink(gateway.dashboardUrl, (await gateway.accounts.issueToken(account.id)).token);
  return { key, link };
}

function demoTier(config: GatewayConfig): string {
  return config.tiers.enterprise !== undefined ? 'enterprise' : (Object.keys(config.tiers)[0] as string);
}

/** Made on first start; demo keys of older starts become its. */
async function demoAccount(gateway: Gateway, config: GatewayConfig): Promise<AccountRecord> {
  const found = await gateway.accounts.store.getAccount('demo');
  if (found !== undefined) return found;
  const { account } = await gateway.accounts.create(
    { name: 'demo', tiers: Object.keys(config.tiers), defaultTier: demoTier(config) },
    { adoptKeys: true },
  );
  return account;
}

async function issueDemoKey(gateway: Gateway, config: GatewayConfig, account: AccountRecord): Promise<string> {
  for (const k of await gateway.store.list({ account: account.id })) {
    if (k.label === DEMO_LABEL && k.revokedAt === undefined) await gateway.store.revoke(k.id);
  }
  const { value } = await gateway.keys.create({ account: account.id, tier: demoTier(config), label: DEMO_LABEL });
  return value;
}
