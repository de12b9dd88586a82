// The noderouter command: serve, devnet, check-config, keys, accounts and nodes. Each
// command reads the same config file (--config, else $NODEROUTER_CONFIG, else
// ./config/gateway.yaml, else the one shipped with the package). Output that scripts
// read (the new key, the sign-in link) is always the last line.

import cluster from 'node:cluster';
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { accountState, type AccountRecord } from './accounts/account-store.js';
import { KeyNotFoundError, type KeyRecord } from './auth/key-store.js';
import { mergeRestrictions, RESTRICTION_FIELDS } from './auth/restrictions.js';
import { UsageError, option, parseArgs, type ParsedArgs } from './cli-args.js';
import { nodesCommand } from './cli-nodes.js';
import { ConfigError, loadConfig } from './config/load.js';
import { ControlError } from './control-errors.js';
import { describeDuration, parseDuration } from './config/duration.js';
import { REDACTED, redactUrl } from './config/redact.js';
import type { GatewayConfig } from './config/types.js';
import type { Gateway } from './gateway.js';
import { keyView } from './http/key-view.js';
import { packageRoot } from './package-root.js';
import { openServices } from './services.js';

const HELP = `noderouter — API-key gateway for pools of blockchain nodes

Usage:
  noderouter serve [--config FILE] [--devnet]   run the gateway (--devnet: with simulated nodes)
  noderouter devnet [--config FILE]             run only the simulated nodes of the config
  noderouter check-config [FILE]                validate a config file; exit 1 on problems
  noderouter keys create --account A --tier T [--label L] [--chains l1,hub-*]
                         [--archive true|false] [--allow PATTERNS] [--deny PATTERNS] [--expires DATE]
                         [--origins LIST] [--ips LIST] [--referrers LIST] [--contracts LIST] [--user-agents LIST]
  noderouter keys restrict ID|PREFIX [--origins LIST] [--ips LIST] [--referrers LIST] [--contracts LIST]
                         [--user-agents LIST]     where the key may be used from; "*" lifts one
  noderouter keys list [--account A] [--json]
  noderouter keys show ID|PREFIX
  noderouter keys revoke ID|PREFIX
  noderouter keys rotate ID|PREFIX [--grace SECONDS]
  noderouter keys usage ID|PREFIX [--since YYYY-MM-DD]
  noderouter keys export > keys.jsonl             records (hashes, never values) of every key
  noderouter keys import FILE|-                   add or replace those records in this config's store
  noderouter accounts create --name N [--email E] [--tiers free,growth] [--default-tier T] [--adopt-keys]
  noderouter accounts list [--json]
  noderouter accounts token ID|NAME [--ttl 15m]   one-time dashboard sign-in link (last line)
  noderouter accounts disable|enable|delete ID|NAME
  noderouter nodes list [--json] [--admin URL]      every node: hold, rotation, calls in flight, subscriptions
  noderouter nodes cordon|drain CHAIN NODE [--reason TEXT] [--admin URL]
  noderouter nodes uncordon CHAIN NODE [--admin URL]
                         (the running gateway's admin API; token from $NODEROUTER_ADMIN_TOKEN or admin.token)
`;

function packageConfig(): string {
  return join(packageRoot(), 'config', 'gateway.yaml');
}

export function defaultConfigPath(explicit?: string): string {
  if (explicit !== undefined) return explicit;
  const env = process.env.NODEROUTER_CONFIG;
  if (env !== undefined && env !== '') return env;
  const local = join(process.cwd(), 'config', 'gateway.yaml');
  return existsSync(local) ? local : packageConfig();
}

function out(line = ''): void {
  process.stdout.write(`${line}\n`);
}

async function serve(args: ParsedArgs): Promise<number> {
  // A worker of a cluster: its config comes from the primary.
  if (cluster.isWorker) {
    const { runWorker } = await import('./cluster/worker.js');
    await runWorker();
    return new Promise<number>(() => undefined);
  }
  const config = await loadConfig(defaultConfigPath(option(args, 'config')));
  // The server's modules load only for the commands that run it: the key and account
  // commands start in a fraction of the time.
  const [{ startConfigDevnet }, { ClusterPrimary }, { Gateway }] = await Promise.all([
    import('./devnet-from-config.js'),
    import('./cluster/primary.js'),
    import('./gateway.js'),
  ]);
  const devnet = args.options.has('devnet') ? await startConfigDevnet(config) : undefined;
  const primary = config.server.workers > 1 ? await ClusterPrimary.start(config) : undefined;
  const gateway = primary?.gateway ?? (await Gateway.start(config));
  let demoKey: string | undefined;
  let demoLink: string | undefined;
  if (devnet !== undefined) {
    const demo = await demoAccount(gateway, config);
    demoKey = await issueDemoKey(gateway, config, demo);
    if (gateway.dashboardUrl !== '') demoLink = signinLink(gateway.dashboardUrl, (await gateway.accounts.issueToken(demo.id)).token);
  }
  out('');
  out(`noderouter is serving ${gateway.url} (admin ${gateway.adminUrl})`);
  if (primary !== undefined) out(`workers: ${config.server.workers} (pids ${primary.pids().join(' ')})`);
  if (gateway.dashboardUrl !== '') out(`dashboard: ${gateway.dashboardUrl}`);
  if (devnet?.controlUrl !== undefined) out(`devnet control: ${devnet.controlUrl}`);
  out('endpoints:');
  for (const e of gateway.endpoints()) {
    const extra = e.authority !== undefined ? ` (:authority ${e.authority})` : e.ws !== undefined ? `  ${e.ws}` : '';
    out(`  ${e.chain.padEnd(18)} ${e.plugin.padEnd(9)} ${e.url}${extra}`);
  }
  if (demoKey !== undefined) {
    out('');
    out(`demo key (shown once; earlier demo keys are revoked): ${demoKey}`);
    // The first HTTP endpoint with a sample request from its plugin.
    const first = gateway.endpoints().find((e) => e.sample !== undefined && e.authority === undefined && e.url.startsWith('http'));
    const sample = first?.sample;
    if (first !== undefined && sample !== undefined) {
      const url = `${first.url}${sample.path === '/' ? '' : sample.path}`;
      if (sample.body === undefined) out(`try: curl -s -H 'apikey: ${demoKey}' ${url}`);
      else {
        out(`try: curl -s -H 'apikey: ${demoKey}' -H 'content-type: application/json' \\`);
        out(`       -d '${sample.body}' ${url}`);
      }
    }
  }
  if (demoLink !== undefined) {
    out('');
    out(`demo account sign-in link (works once, ${describeDuration(config.dashboard.signinTokenTtlMs)}):`);
    out(`  ${demoLink}`);
  }
  const reload = (): void => void (primary === undefined ? gateway.reload() : primary.reload());
  process.on('SIGHUP', reload);
  const unwatch = watchConfig(config.file, reload);
  // SIGTERM (an orchestrator) waits server.shutdownDelayMs with readiness 503 before it
  // stops accepting; SIGINT (Ctrl-C) and a second signal stop accepting at once.
  let stopping: Promise<void> | undefined;
  const stop = (signal: 'SIGINT' | 'SIGTERM'): void => {
    unwatch();
    gateway.logger.info('shutting down', { event: 'signal', signal });
    if (primary !== undefined) {
      // Every worker drains as this process would; the shared state closes after the last.
      if (stopping !== undefined) void primary.stop('SIGINT');
      stopping ??= primary
        .stop(signal)
        .then(() => devnet?.close())
        .then(() => gateway.logger.flush())
        .then(() => process.exit(0));
      return;
    }
    if (stopping !== undefined || signal === 'SIGINT') void gateway.close();
    stopping ??= (signal === 'SIGTERM' ? gateway.shutdown() : gateway.close())
      .then(() => devnet?.close())
      .then(() => gateway.logger.flush())
      .then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  return new Promise<number>(() => undefined);
}

/** Calls `onChange` (debounced) when the config file is written or replaced. */
function watchConfig(file: string, onChange: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(file), (_event, name) => {
      if (name !== null && name !== basename(file)) return;
      clearTimeout(timer);
      // Editors write in several steps: reload once they are done.
      timer = setTimeout(onChange, 250);
    });
    watcher.on('error', () => undefined);
  } catch {
    // Unwatchable filesystems still reload on SIGHUP.
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}

const DEMO_LABEL = 'demo key (npm start)';

function demoTier(config: GatewayConfig): string {
  return config.tiers.enterprise !== undefined ? 'enterprise' : (Object.keys(config.tiers)[0] as string);
}

/** The devnet's dashboard account "demo" (every tier), made on first start; demo keys of older starts become its. */
async function demoAccount(gateway: Gateway, config: GatewayConfig): Promise<AccountRecord> {
  const found = await gateway.accounts.store.getAccount('demo');
  if (found !== undefined) return found;
  const { account } = await gateway.accounts.create(
    { name: 'demo', tiers: Object.keys(config.tiers), defaultTier: demoTier(config) },
    { adoptKeys: true },
  );
  return account;
}

/** A fresh demo key each start; the previous ones are revoked, so none lingers. */
async function issueDemoKey(gateway: Gateway, config: GatewayConfig, account: AccountRecord): Promise<string> {
  for (const k of await gateway.store.list({ account: account.id })) {
    if (k.label === DEMO_LABEL && k.revokedAt === undefined) await gateway.store.revoke(k.id);
  }
  const { value } = await gateway.keys.create({ account: account.id, tier: demoTier(config), label: DEMO_LABEL });
  return value;
}

function signinLink(dashboardUrl: string, token: string): string {
  return `${dashboardUrl}/signin?token=${token}`;
}

/**
 * Where the dashboard of a config answers, for links the CLI prints: dashboard.publicUrl,
 * else its own listener or the admin listener (a wildcard address printed as loopback).
 */
function configuredDashboardUrl(config: GatewayConfig): string {
  const d = config.dashboard;
  if (d.publicUrl !== undefined) return `${d.publicUrl}/dashboard`;
  const [host, port] = d.port !== undefined ? [d.host, d.port] : [config.server.adminHost, config.server.adminPort];
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}/dashboard`;
}

async function devnetOnly(args: ParsedArgs): Promise<number> {
  const config = await loadConfig(defaultConfigPath(option(args, 'config')));
  const { startConfigDevnet } = await import('./devnet-from-config.js');
  const devnet = await startConfigDevnet(config);
  out(`devnet running: ${devnet.nodes.size} nodes${devnet.controlUrl === undefined ? '' : `, control ${devnet.controlUrl}`}`);
  for (const n of devnet.nodes.values()) out(`  ${n.name.padEnd(22)} ${n.family.padEnd(9)} ${n.role.padEnd(8)} ${n.url}`);
  const stop = (): void => void devnet.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return new Promise<number>(() => undefined);
}

async function checkConfig(args: ParsedArgs): Promise<number> {
  const file = defaultConfigPath(args.positional[1] ?? option(args, 'config'));
  const config = await loadConfig(file);
  out(`${config.file}: ok (${Object.keys(config.chains).length} chain endpoints, ${Object.keys(config.tiers).length} tiers)`);
  // What each endpoint routes to, as it may be printed: tokens in node URLs and header values are REDACTED.
  for (const c of Object.values(config.chains)) {
    const route = [c.route.host, c.route.path].filter((r) => r !== undefined).join('') || '(default gRPC chain)';
    out(`  ${c.name} (${c.plugin}) ${route}`);
    for (const n of c.nodes) {
      const names = Object.keys(n.headers);
      const ws = c.transport === 'http' && n.ws !== n.url.replace(/^http/, 'ws') ? `  ws ${redactUrl(n.ws)}` : '';
      const headers = names.length === 0 ? '' : `  headers ${names.map((h) => `${h}: ${REDACTED}`).join(', ')}`;
      out(`    ${n.name.padEnd(20)} ${(n.role ?? '(auto)').padEnd(8)} ${redactUrl(n.url)}${ws}${headers}`);
    }
  }
  return 0;
}

async function keys(args: ParsedArgs): Promise<number> {
  const [, sub, ref] = args.positional;
  const config = await loadConfig(defaultConfigPath(option(args, 'config')));
  const { bundle, keys: service } = await openServices(config, { live: false });
  const store = bundle.keys;
  const needRef = (): string => {
    if (ref === undefined) throw new UsageError(`keys ${sub} needs a key id or prefix`);
    return ref;
  };
  const show = (v: ReturnType<typeof keyView>): void => {
    for (const [k, val] of Object.entries(v))
      out(`${k.padEnd(12)} ${typeof val === 'object' && val !== null ? JSON.stringify(val) : String(val)}`);
  };
  try {
    switch (sub) {
      case 'create': {
        const archive = option(args, 'archive');
        const { record, value } = await service.create({
          account: option(args, 'account'),
          tier: option(args, 'tier'),
          label: option(args, 'label'),
          chains: option(args, 'chains'),
          archive: archive === undefined ? undefined : archive === 'true' ? true : archive === 'false' ? false : archive,
          allow: option(args, 'allow'),
          deny: option(args, 'deny'),
          expiresAt: option(args, 'expires'),
          ...restrictionOptions(args),
        });
        show(keyView(record));
        out('');
        out('The key is shown once and cannot be recovered; store it now:');
        out(value);
        return 0;
      }
      case 'list': {
        const account = option(args, 'account');
        const list = (await service.list(account === undefined ? {} : { account })).map((r) => keyView(r));
        if (args.options.has('json')) out(JSON.stringify(list, null, 2));
        else {
          out(
            `${'ID'.padEnd(18)} ${'PREFIX'.padEnd(10)} ${'ACCOUNT'.padEnd(16)} ${'TIER'.padEnd(11)} ${'STATE'.padEnd(8)} ${'LAST USED'.padEnd(24)} LABEL`,
          );
          for (const k of list) {
            out(
              `${k.id.padEnd(18)} ${k.prefix.padEnd(10)} ${k.account.padEnd(16)} ${k.tier.padEnd(11)} ${k.state.padEnd(8)} ${(k.lastUsedAt ?? '-').padEnd(24)} ${k.label}`,
            );
          }
        }
        return 0;
      }
      case 'show': {
        const record = await store.get(needRef());
        if (record === undefined) throw new KeyNotFoundError(needRef());
        show(keyView(record));
        return 0;
      }
      case 'revoke': {
        show(keyView(await service.revoke(needRef())));
        return 0;
      }
      case 'restrict': {
        show(keyView(await service.restrict(needRef(), restrictionOptions(args))));
        return 0;
      }
      case 'rotate': {
        const grace = option(args, 'grace');
        if (grace !== undefined && !/^\d+$/.test(grace)) throw new UsageError('--grace must be a number of seconds');
        const { record, value } = await service.rotate(needRef(), grace === undefined ? undefined : Number(grace));
        show(keyView(record));
        out('');
        out('The new key is shown once; the old one works until its grace ends:');
        out(value);
        return 0;
      }
      case 'usage': {
        const record = await store.get(needRef());
        if (record === undefined) throw new KeyNotFoundError(needRef());
        const rows = await bundle.limiter.usage(record.id, option(args, 'since') ?? '');
        out(
          `${'DAY'.padEnd(11)} ${'CHAIN'.padEnd(18)} ${'CALLS'.padStart(10)} ${'ERRORS'.padStart(8)} ${'LIMITED'.padStart(8)} ${'INVALID'.padStart(8)}`,
        );
        for (const r of rows) {
          out(
            `${r.day.padEnd(11)} ${r.chain.padEnd(18)} ${String(r.calls).padStart(10)} ${String(r.errors).padStart(8)} ${String(r.limited).padStart(8)} ${String(r.invalid ?? 0).padStart(8)}`,
          );
        }
        return 0;
      }
      case 'export': {
        // One record per line: hashes and metadata, never a key value (none is stored).
        for (const r of await store.list()) out(JSON.stringify(r));
        return 0;
      }
      case 'import': {
        const file = needRef();
        const text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
        let n = 0;
        for (const [i, line] of text.split('\n').entries()) {
          if (line.trim() === '') continue;
          await store.put(parseRecord(line, i + 1));
          n++;
        }
        out(`imported ${n} keys into the ${config.store.kind} store`);
        return 0;
      }
      default:
        throw new UsageError(`unknown keys command "${sub ?? ''}" (create, list, show, revoke, rotate, restrict, usage, export, import)`);
    }
  } finally {
    await bundle.close();
  }
}

async function accounts(args: ParsedArgs): Promise<number> {
  const [, sub, ref] = args.positional;
  const config = await loadConfig(defaultConfigPath(option(args, 'config')));
  const { bundle, accounts: service } = await openServices(config, { live: false });
  const needRef = (): string => {
    if (ref === undefined) throw new UsageError(`accounts ${sub} needs an account id or name`);
    return ref;
  };
  const show = (a: AccountRecord): void => {
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
  };
  try {
    switch (sub) {
      case 'create': {
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
        return 0;
      }
      case 'list': {
        const list = await service.store.listAccounts();
        const rows = await Promise.all(list.map(async (a) => ({ a, keys: (await service.keysOf(a)).length })));
        if (args.options.has('json')) {
          out(
            JSON.stringify(
              rows.map(({ a, keys: n }) => ({ ...a, email: a.email ?? null, state: accountState(a), keys: n })),
              null,
              2,
            ),
          );
          return 0;
        }
        out(
          `${'ID'.padEnd(17)} ${'NAME'.padEnd(20)} ${'STATE'.padEnd(9)} ${'TIERS'.padEnd(24)} ${'KEYS'.padStart(5)} ${'CREATED'.padEnd(24)} EMAIL`,
        );
        for (const { a, keys: n } of rows) {
          const tiers = a.tiers.map((t) => (t === a.defaultTier ? `${t}*` : t)).join(',');
          out(
            `${a.id.padEnd(17)} ${a.name.padEnd(20)} ${accountState(a).padEnd(9)} ${tiers.padEnd(24)} ${String(n).padStart(5)} ${a.createdAt.padEnd(24)} ${a.email ?? '-'}`,
          );
        }
        return 0;
      }
      case 'token': {
        const ttlText = option(args, 'ttl');
        const ttl = ttlText === undefined ? undefined : parseDuration(ttlText);
        if (ttlText !== undefined && ttl === undefined) throw new UsageError('--ttl must be a duration like 15m, 2h or 1d');
        const { token, account, expiresAt } = await service.issueToken(needRef(), ttl);
        if (!config.dashboard.enabled)
          process.stderr.write('noderouter: note: dashboard.enabled is false in this config; the link works once it is on\n');
        out(
          `Sign-in link for account ${account.name} (${account.id}): works once, until ${expiresAt} (${describeDuration(ttl ?? config.dashboard.signinTokenTtlMs)}).`,
        );
        out('Send it privately; whoever opens it first is signed in as this account.');
        out(signinLink(configuredDashboardUrl(config), token));
        return 0;
      }
      case 'disable':
      case 'enable':
      case 'delete': {
        show(await service.setState(needRef(), sub));
        if (sub === 'delete') out('its keys are revoked; the name stays taken');
        return 0;
      }
      default:
        throw new UsageError(`unknown accounts command "${sub ?? ''}" (create, list, token, disable, enable, delete)`);
    }
  } finally {
    await bundle.close();
  }
}

/** --origins, --ips, --referrers, --contracts, --user-agents as the key service reads them (absent: unchanged). */
function restrictionOptions(args: ParsedArgs): Record<string, string | undefined> {
  return {
    origins: option(args, 'origins'),
    ips: option(args, 'ips'),
    referrers: option(args, 'referrers'),
    contracts: option(args, 'contracts'),
    userAgents: option(args, 'user-agents'),
  };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const HASH = /^[0-9a-f]{64}$/;

/** A record line of `keys export`; anything that could carry a key value is refused. */
function parseRecord(line: string, n: number): KeyRecord {
  let r: KeyRecord;
  try {
    r = JSON.parse(line) as KeyRecord;
  } catch {
    throw new UsageError(`line ${n}: not a JSON key record`);
  }
  const ok =
    typeof r.id === 'string' &&
    typeof r.hash === 'string' &&
    HASH.test(r.hash) &&
    typeof r.prefix === 'string' &&
    r.prefix.length <= 8 &&
    typeof r.account === 'string' &&
    typeof r.tier === 'string' &&
    Array.isArray(r.retired) &&
    r.retired.every((x) => HASH.test(x.hash)) &&
    !('key' in r) &&
    !('value' in r);
  if (!ok) throw new UsageError(`line ${n}: not a key record of \`keys export\` (id, hash, prefix, account, tier, retired)`);
  if (r.restrictions !== undefined) {
    // Restrictions come back exactly as checked on the way in, or the line is refused.
    const fields = r.restrictions as Record<string, unknown>;
    const unknown = Object.keys(fields).filter((f) => !(RESTRICTION_FIELDS as readonly string[]).includes(f));
    if (unknown.length > 0)
      throw new UsageError(`line ${n}: restrictions.${unknown[0]} is not a restriction (${RESTRICTION_FIELDS.join(', ')})`);
    const checked = mergeRestrictions(fields, undefined, (field, message) => {
      throw new UsageError(`line ${n}: restrictions.${field}: ${message}`);
    });
    if (checked !== undefined) return { ...r, restrictions: checked };
    const { restrictions: _none, ...unrestricted } = r;
    return unrestricted;
  }
  return r;
}

export async function main(argv: readonly string[]): Promise<number> {
  const command = argv[0];
  try {
    const args = parseArgs(
      argv,
      // keys options, then accounts options, then nodes options
      [
        'config',
        'account',
        'tier',
        'label',
        'chains',
        'archive',
        'allow',
        'deny',
        'expires',
        'grace',
        'since',
        'name',
        'email',
        'tiers',
        'default-tier',
        'ttl',
        'origins',
        'ips',
        'referrers',
        'contracts',
        'user-agents',
        'admin',
        'reason',
      ],
      ['devnet', 'json', 'help', 'adopt-keys'],
    );
    if (command === undefined || command === 'help' || args.options.has('help')) {
      out(HELP);
      return 0;
    }
    switch (command) {
      case 'serve':
        return await serve(args);
      case 'devnet':
        return await devnetOnly(args);
      case 'check-config':
        return await checkConfig(args);
      case 'keys':
        return await keys(args);
      case 'accounts':
        return await accounts(args);
      case 'nodes':
        return await nodesCommand(args, await loadConfig(defaultConfigPath(option(args, 'config'))), out);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    // Every refusal of the control plane, by its catalogue code's exit (2: the caller's mistake).
    if (err instanceof ControlError) {
      process.stderr.write(`noderouter: ${err.message}\n`);
      if (err instanceof UsageError) process.stderr.write(`\n${HELP}`);
      return err.exit;
    }
    throw err;
  }
}
