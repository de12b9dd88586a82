// `noderouter keys create|list|show|revoke|restrict|rotate|usage|export|import`: the
// config's key store, written directly (a running gateway notices the change). A new
// key's value is shown once, on the last line.

import { readFile } from 'node:fs/promises';
import type { KeyService } from '../auth/key-service.js';
import { KeyNotFoundError, type KeyRecord, type KeyStore } from '../auth/key-store.js';
import type { GatewayConfig } from '../config/types.js';
import { keyView } from '../admin/key-view.js';
import type { Limiter } from '../quota/limiter.js';
import { openServices } from '../app/services.js';
import { UsageError, option, type ParsedArgs } from './args.js';
import { commandConfig, out } from './common.js';
import { parseRecord, readStdin } from './key-records.js';

interface KeysContext {
  readonly args: ParsedArgs;
  readonly config: GatewayConfig;
  readonly store: KeyStore;
  readonly service: KeyService;
  readonly limiter: Limiter;
  /** The key id or prefix the command names. */
  ref(): string;
}

type KeysCommand = (c: KeysContext) => Promise<void>;

const COMMANDS: Readonly<Record<string, KeysCommand>> = {
  create,
  list,
  show: async (c) => show(await found(c)),
  revoke: async (c) => show(await c.service.revoke(c.ref())),
  restrict: async (c) => show(await c.service.restrict(c.ref(), restrictionOptions(c.args))),
  rotate,
  usage,
  // One record per line: hashes and metadata, never a key value (none is stored).
  export: async (c) => {
    for (const r of await c.store.list()) out(JSON.stringify(r));
  },
  import: importKeys,
};

export async function keysCommand(args: ParsedArgs): Promise<number> {
  const [, sub, ref] = args.positional;
  const config = await commandConfig(args);
  const { bundle, keys: service } = await openServices(config, { live: false });
  const ctx: KeysContext = {
    args,
    config,
    store: bundle.keys,
    service,
    limiter: bundle.limiter,
    ref: () => {
      if (ref === undefined) throw new UsageError(`keys ${sub} needs a key id or prefix`);
      return ref;
    },
  };
  try {
    const command = sub !== undefined && Object.hasOwn(COMMANDS, sub) ? COMMANDS[sub] : undefined;
    if (command === undefined)
      throw new UsageError(`unknown keys command "${sub ?? ''}" (create, list, show, revoke, rotate, restrict, usage, export, import)`);
    await command(ctx);
    return 0;
  } finally {
    await bundle.close();
  }
}

function show(record: KeyRecord): void {
  for (const [k, val] of Object.entries(keyView(record)))
    out(`${k.padEnd(12)} ${typeof val === 'object' && val !== null ? JSON.stringify(val) : String(val)}`);
}

async function found(c: KeysContext): Promise<KeyRecord> {
  const record = await c.store.get(c.ref());
  if (record === undefined) throw new KeyNotFoundError(c.ref());
  return record;
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

async function create({ args, service }: KeysContext): Promise<void> {
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
  show(record);
  out('');
  out('The key is shown once and cannot be recovered; store it now:');
  out(value);
}

async function list({ args, service }: KeysContext): Promise<void> {
  const account = option(args, 'account');
  const keys = (await service.list(account === undefined ? {} : { account })).map((r) => keyView(r));
  if (args.options.has('json')) {
    out(JSON.stringify(keys, null, 2));
    return;
  }
  out(
    `${'ID'.padEnd(18)} ${'PREFIX'.padEnd(10)} ${'ACCOUNT'.padEnd(16)} ${'TIER'.padEnd(11)} ${'STATE'.padEnd(8)} ${'LAST USED'.padEnd(24)} LABEL`,
  );
  for (const k of keys) {
    out(
      `${k.id.padEnd(18)} ${k.prefix.padEnd(10)} ${k.account.padEnd(16)} ${k.tier.padEnd(11)} ${k.state.padEnd(8)} ${(k.lastUsedAt ?? '-').padEnd(24)} ${k.label}`,
    );
  }
}

async function rotate(c: KeysContext): Promise<void> {
  const grace = option(c.args, 'grace');
  if (grace !== undefined && !/^\d+$/.test(grace)) throw new UsageError('--grace must be a number of seconds');
  const { record, value } = await c.service.rotate(c.ref(), grace === undefined ? undefined : Number(grace));
  show(record);
  out('');
  out('The new key is shown once; the old one works until its grace ends:');
  out(value);
}

async function usage(c: KeysContext): Promise<void> {
  const record = await found(c);
  const rows = await c.limiter.usage(record.id, option(c.args, 'since') ?? '');
  out(
    `${'DAY'.padEnd(11)} ${'CHAIN'.padEnd(18)} ${'CALLS'.padStart(10)} ${'ERRORS'.padStart(8)} ${'LIMITED'.padStart(8)} ${'INVALID'.padStart(8)}`,
  );
  for (const r of rows) {
    out(
      `${r.day.padEnd(11)} ${r.chain.padEnd(18)} ${String(r.calls).padStart(10)} ${String(r.errors).padStart(8)} ${String(r.limited).padStart(8)} ${String(r.invalid ?? 0).padStart(8)}`,
    );
  }
}

async function importKeys(c: KeysContext): Promise<void> {
  const file = c.ref();
  const text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  let n = 0;
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    await c.store.put(parseRecord(line, i + 1));
    n++;
  }
  out(`imported ${n} keys into the ${c.config.store.record.kind} record`);
}
