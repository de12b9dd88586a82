// `noderouter keys create|list|show|revoke|restrict|rotate|usage|export|import`: the
// config's key store, written directly (a running gateway notices the change). A new
// key's value is shown once, on the last line. `usage` reads the record's usage history.

import { readFile } from 'node:fs/promises';
import type { KeyService } from '../auth/key-service.js';
import { KeyNotFoundError, type KeyRecord, type KeyStore } from '../auth/key-store.js';
import type { GatewayConfig } from '../config/types.js';
import { keyView } from '../admin/key-view.js';
import { HOUR_MS, hourOf, LATENCY_BOUNDS_MS, type UsageHistory } from '../quota/usage-history.js';
import { dayRows, methodRows, type MethodUsage } from '../quota/usage-report.js';
import { openServices } from '../app/services.js';
import { UsageError, option, type ParsedArgs } from './args.js';
import { commandConfig, out } from './common.js';
import { parseRecord, readStdin } from './key-records.js';

interface KeysContext {
  readonly args: ParsedArgs;
  readonly config: GatewayConfig;
  readonly store: KeyStore;
  readonly service: KeyService;
  /** The record's usage history, as the gateways last wrote it (every usage.flushInterval). */
  readonly history: UsageHistory;
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
    history: bundle.history,
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

/** --since as the epoch ms of a UTC day's midnight (absent: every day the record keeps). */
function sinceOption(args: ParsedArgs): number {
  const since = option(args, 'since');
  if (since === undefined) return 0;
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(since) ? Date.parse(`${since}T00:00:00Z`) : NaN;
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== since)
    throw new UsageError(`--since must be a UTC day as YYYY-MM-DD, not "${since}"`);
  return ms;
}

const count = (n: number, width: number): string => String(n).padStart(width);
/** A percentile's bucket bound: past the last bound it is only known to be over it. */
const bound = (ms: number | null, calls: number, width: number): string =>
  (calls === 0 ? '-' : ms === null ? `>${LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]}` : String(ms)).padStart(width);

/**
 * The key's usage history per UTC day and chain, or per method (`--by method`): what the
 * gateways wrote to the record by their last flush (usage.flushInterval).
 */
async function usage(c: KeysContext): Promise<void> {
  const by = option(c.args, 'by');
  if (by !== undefined && by !== 'method') throw new UsageError(`--by takes "method" (per day and chain without it), not "${by}"`);
  const from = sinceOption(c.args);
  const record = await found(c);
  // Through the current hour: the rollups' grain.
  const to = (hourOf(Date.now()) + 1) * HOUR_MS;
  const json = c.args.options.has('json');
  if (by === 'method') {
    const rows = methodRows(await c.history.read({ keyId: record.id, from, to, by: ['method', 'outcome'], step: 'total' }));
    if (json) out(JSON.stringify(rows, null, 2));
    else printMethods(rows);
    return;
  }
  const rows = dayRows(await c.history.read({ keyId: record.id, from, to, by: ['chain', 'outcome'], step: 'day' }));
  if (json) {
    out(JSON.stringify(rows, null, 2));
    return;
  }
  out(
    `${'DAY'.padEnd(11)} ${'CHAIN'.padEnd(18)} ${'CALLS'.padStart(10)} ${'ERRORS'.padStart(8)} ${'LIMITED'.padStart(8)} ${'INVALID'.padStart(8)} ${'UNITS'.padStart(10)}`,
  );
  for (const r of rows) {
    out(
      `${r.day.padEnd(11)} ${r.chain.padEnd(18)} ${count(r.calls, 10)} ${count(r.errors, 8)} ${count(r.limited, 8)} ${count(r.invalid, 8)} ${count(r.units, 10)}`,
    );
  }
}

function printMethods(rows: readonly MethodUsage[]): void {
  const width = Math.max(18, ...rows.map((r) => r.method.length));
  out(
    `${'METHOD'.padEnd(width)} ${'CALLS'.padStart(10)} ${'UNITS'.padStart(10)} ${'ERRORS'.padStart(8)} ${'ERROR%'.padStart(7)} ${'REFUSED'.padStart(8)} ${'P50MS'.padStart(7)} ${'P95MS'.padStart(7)} ${'P99MS'.padStart(7)}`,
  );
  for (const r of rows) {
    const rate = r.errorRate === null ? '-' : (r.errorRate * 100).toFixed(1);
    out(
      `${r.method.padEnd(width)} ${count(r.calls, 10)} ${count(r.units, 10)} ${count(r.errors, 8)} ${rate.padStart(7)} ${count(r.limited + r.invalid, 8)} ${bound(r.p50Ms, r.calls, 7)} ${bound(r.p95Ms, r.calls, 7)} ${bound(r.p99Ms, r.calls, 7)}`,
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
