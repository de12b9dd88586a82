// `noderouter store migrate|export|import`: the config's record as a whole. `migrate`
// applies the schema's migrations (a gateway applies them at start too) and, with
// --from, adopts the file or Redis store of earlier versions (hashes move, never
// values: every key keeps working); `export` and `import` move every row between
// records as JSON lines. Rows that differ from what the record holds refuse the whole
// write unless --force replaces them.

import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { openRecordRows } from '../app/open-record.js';
import type { GatewayConfig } from '../config/types.js';
import { readFileStore } from '../record/adopt-file.js';
import { readRedisStore } from '../record/adopt-redis.js';
import {
  countRows,
  describeCounts,
  encodeRow,
  EXPORT_HEADER,
  parseExport,
  type RecordRow,
  type RecordRows,
  type WriteReport,
} from '../record/record-rows.js';
import { UsageError, option, type ParsedArgs } from './args.js';
import { commandConfig, out } from './common.js';
import { readStdin } from './key-records.js';

type StoreCommand = (args: ParsedArgs, config: GatewayConfig, record: RecordRows) => Promise<void>;

const COMMANDS: Readonly<Record<string, StoreCommand>> = { migrate, export: exportRows, import: importRows };

export async function storeCommand(args: ParsedArgs): Promise<number> {
  const sub = args.positional[1];
  const command = sub !== undefined && Object.hasOwn(COMMANDS, sub) ? COMMANDS[sub] : undefined;
  if (command === undefined) throw new UsageError(`unknown store command "${sub ?? ''}" (migrate, export, import)`);
  const config = await commandConfig(args);
  const record = await openRecordRows(config.store.record);
  try {
    await command(args, config, record);
    return 0;
  } finally {
    await record.close();
  }
}

function onlyWith(args: ParsedArgs, name: string, where: string): void {
  if (args.options.has(name)) throw new UsageError(`--${name} is only taken by ${where}`);
}

async function migrate(args: ParsedArgs, _config: GatewayConfig, record: RecordRows): Promise<void> {
  const applied = record.applied.length === 0 ? 'up to date' : `applied now: ${record.applied.join(', ')}`;
  out(`record ${record.name}: schema version ${record.version} (${applied})`);
  const from = option(args, 'from');
  if (from === undefined) {
    onlyWith(args, 'prefix', 'store migrate --from redis://…');
    onlyWith(args, 'force', 'store migrate --from and store import');
    return;
  }
  const redis = /^rediss?:\/\//.test(from);
  if (!redis) onlyWith(args, 'prefix', 'store migrate --from redis://…');
  const prefix = option(args, 'prefix') ?? 'noderouter:';
  const source = redis ? `the Redis store under "${prefix}"` : resolve(from);
  const rows = redis ? await readRedisStore(from, prefix) : await readFileStore(resolve(from));
  if (rows.length === 0) {
    throw new UsageError(
      redis
        ? `found nothing under the prefix "${prefix}" in that Redis: --prefix is the old store.prefix (default noderouter:)`
        : `${source} holds no key, account, usage or hold: nothing to adopt`,
    );
  }
  const report = await record.write(rows, { force: args.options.has('force'), source });
  out(`adopted from ${source}:`);
  printReport(rows, report);
  const retired = rows.reduce((n, r) => n + (r.kind === 'key' ? r.key.retired.length : 0), 0);
  out(
    `every key keeps working: ${countRows(rows).key} keys moved as their hashes (and ${retired} retired values still in their grace), never a value`,
  );
}

function printReport(rows: readonly RecordRow[], report: WriteReport): void {
  out(`  read:          ${describeCounts(countRows(rows))}`);
  out(`  new:           ${describeCounts(report.added)}`);
  out(`  already there: ${describeCounts(report.same)}`);
  const replaced = Object.values(report.replaced).some((n) => n > 0);
  if (replaced) out(`  replaced:      ${describeCounts(report.replaced)}`);
}

/** Lines to a file or stdout, waiting whenever the stream asks to (an export may be large). */
async function writeLines(lines: Iterable<string>, stream: Writable): Promise<void> {
  let chunk = '';
  for (const line of lines) {
    chunk += `${line}\n`;
    if (chunk.length >= 65_536) {
      if (!stream.write(chunk)) await once(stream, 'drain');
      chunk = '';
    }
  }
  if (chunk !== '' && !stream.write(chunk)) await once(stream, 'drain');
}

async function exportRows(args: ParsedArgs, _config: GatewayConfig, record: RecordRows): Promise<void> {
  onlyWith(args, 'force', 'store migrate --from and store import');
  onlyWith(args, 'prefix', 'store migrate --from redis://…');
  const rows = await record.read();
  const lines = [JSON.stringify({ ...EXPORT_HEADER, exportedAt: new Date().toISOString(), from: record.name }), ...rows.map(encodeRow)];
  const file = option(args, 'out');
  const summary = `exported ${describeCounts(countRows(rows))} from ${record.name}`;
  if (file === undefined) {
    await writeLines(lines, process.stdout);
    // stdout is the export: the summary goes to stderr.
    process.stderr.write(`${summary}\n`);
    return;
  }
  const stream = createWriteStream(file, { mode: 0o600 });
  await writeLines(lines, stream);
  stream.end();
  await once(stream, 'close');
  out(`${summary} to ${resolve(file)}`);
}

async function importRows(args: ParsedArgs, _config: GatewayConfig, record: RecordRows): Promise<void> {
  onlyWith(args, 'prefix', 'store migrate --from redis://…');
  const file = args.positional[2];
  if (file === undefined) throw new UsageError('store import needs a file of `store export` (or - for stdin)');
  const rows = parseExport(file === '-' ? await readStdin() : await readFile(file, 'utf8'));
  const source = file === '-' ? 'the input' : resolve(file);
  const report = await record.write(rows, { force: args.options.has('force'), source });
  out(`imported from ${source} into ${record.name}:`);
  printReport(rows, report);
}
