// `noderouter accounts create|list|token|disable|enable|delete`: the config's dashboard
// accounts, written directly. `token` prints a one-time sign-in link on the last line.

import type { AccountService } from '../accounts/account-service.js';
import { accountState, type AccountRecord } from '../accounts/account-store.js';
import { describeDuration, parseDuration } from '../config/duration.js';
import type { GatewayConfig } from '../config/types.js';
import { openServices } from '../app/services.js';
import { UsageError, option, type ParsedArgs } from './args.js';
import { commandConfig, configuredDashboardUrl, out, signinLink } from './common.js';

interface AccountsContext {
  readonly args: ParsedArgs;
  readonly config: GatewayConfig;
  readonly service: AccountService;
  /** The account id or name the command names. */
  ref(): string;
}

type AccountsCommand = (c: AccountsContext) => Promise<void>;

const setState =
  (state: 'disable' | 'enable' | 'delete'): AccountsCommand =>
  async (c) => {
    show(await c.service.setState(c.ref(), state));
    if (state === 'delete') out('its keys are revoked; the name stays taken');
  };

const COMMANDS: Readonly<Record<string, AccountsCommand>> = {
  create,
  list,
  token,
  disable: setState('disable'),
  enable: setState('enable'),
  delete: setState('delete'),
};

export async function accountsCommand(args: ParsedArgs): Promise<number> {
  const [, sub, ref] = args.positional;
  const config = await commandConfig(args);
  const { bundle, accounts: service } = await openServices(config, { live: false });
  const ctx: AccountsContext = {
    args,
    config,
    service,
    ref: () => {
      if (ref === undefined) throw new UsageError(`accounts ${sub} needs an account id or name`);
      return ref;
    },
  };
  try {
    const command = sub !== undefined && Object.hasOwn(COMMANDS, sub) ? COMMANDS[sub] : undefined;
    if (command === undefined)
      throw new UsageError(`unknown accounts command "${sub ?? ''}" (create, list, token, disable, enable, delete)`);
    await command(ctx);
    return 0;
  } finally {
    await bundle.close();
  }
}

function show(a: AccountRecord): void {
  const fields: Array<[string, string]> = [
    ['id', a.id],
    ['name', a.name],
    ['email', a.email ?? '-'],
    ['tiers', a.tiers.join(',')],
    ['defaultTier', a.defaultTier],
    ['state', accountState(a)],
    ['createdAt', a.createdAt],
  ];
  for (const [k, v] of fields) out(`${k.padEnd(12)} ${v}`);
}

async function create({ args, service }: AccountsContext): Promise<void> {
  const { account, adopted } = await service.create(
    {
      name: option(args, 'name'),
      email: option(args, 'email'),
      tiers: option(args, 'tiers'),
      defaultTier: option(args, 'default-tier'),
    },
    { adoptKeys: args.options.has('adopt-keys') },
  );
  show(account);
  if (adopted > 0) out(`adopted ${adopted} existing key(s) whose account was "${account.name}"`);
  out('');
  out(`Next: noderouter accounts token ${account.name}   (a one-time sign-in link)`);
}

async function list({ args, service }: AccountsContext): Promise<void> {
  const accounts = await service.store.listAccounts();
  const rows = await Promise.all(accounts.map(async (a) => ({ a, keys: (await service.keysOf(a)).length })));
  if (args.options.has('json')) {
    const json = rows.map(({ a, keys }) => ({ ...a, email: a.email ?? null, state: accountState(a), keys }));
    out(JSON.stringify(json, null, 2));
    return;
  }
  out(
    `${'ID'.padEnd(17)} ${'NAME'.padEnd(20)} ${'STATE'.padEnd(9)} ${'TIERS'.padEnd(24)} ${'KEYS'.padStart(5)} ${'CREATED'.padEnd(24)} EMAIL`,
  );
  for (const { a, keys } of rows) {
    const tiers = a.tiers.map((t) => (t === a.defaultTier ? `${t}*` : t)).join(',');
    out(
      `${a.id.padEnd(17)} ${a.name.padEnd(20)} ${accountState(a).padEnd(9)} ${tiers.padEnd(24)} ${String(keys).padStart(5)} ${a.createdAt.padEnd(24)} ${a.email ?? '-'}`,
    );
  }
}

async function token(c: AccountsContext): Promise<void> {
  const { config } = c;
  const ttlText = option(c.args, 'ttl');
  const ttl = ttlText === undefined ? undefined : parseDuration(ttlText);
  if (ttlText !== undefined && ttl === undefined) throw new UsageError('--ttl must be a duration like 15m, 2h or 1d');
  const issued = await c.service.issueToken(c.ref(), ttl);
  if (!config.dashboard.enabled)
    process.stderr.write('noderouter: note: dashboard.enabled is false in this config; the link works once it is on\n');
  out(
    `Sign-in link for account ${issued.account.name} (${issued.account.id}): works once, until ${issued.expiresAt} (${describeDuration(ttl ?? config.dashboard.signinTokenTtlMs)}).`,
  );
  out('Send it privately; whoever opens it first is signed in as this account.');
  out(signinLink(configuredDashboardUrl(config), issued.token));
}
