// SQLite records for tests: a new file in a temp folder per test, opened as many
// times as a test needs connections (two processes, or the CLI beside a gateway),
// every connection closed and the folder removed afterwards; and real processes on
// one file, started at the same moment.

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KeyRepository } from '../../src/auth/key-repository.js';
import type { RecordConfig } from '../../src/config/types.js';
import type { NewKey } from '../../src/auth/key-store.js';
import { SqliteDatabase, type SqliteOptions } from '../../src/record/sqlite-database.js';
import { openSqliteKeyStore } from '../../src/record/sqlite-key-store.js';
import type { UsageRow } from '../../src/quota/usage.js';
import { readUsage } from '../../src/record/sqlite-usage-store.js';

export interface TempRecord {
  readonly dir: string;
  readonly path: string;
  /** A new connection to the file (each one as another process would hold it). */
  open(options?: SqliteOptions): SqliteDatabase;
  /** Closes every connection opened here and removes the folder. */
  cleanup(): Promise<void>;
}

export async function tempRecord(): Promise<TempRecord> {
  const dir = await mkdtemp(join(tmpdir(), 'noderouter-record-'));
  const path = join(dir, 'record.sqlite');
  const opened: SqliteDatabase[] = [];
  return {
    dir,
    path,
    open(options) {
      const db = SqliteDatabase.open(path, options);
      opened.push(db);
      return db;
    },
    async cleanup() {
      for (const db of opened) db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const CHILD = fileURLToPath(new URL('./record-child.ts', import.meta.url));

/**
 * Runs each task (test/support/record-child.ts's arguments) in a process of its own,
 * started together once every process has loaded; the JSON each printed, in order.
 */
export async function runTogether(tasks: ReadonlyArray<readonly string[]>): Promise<unknown[]> {
  const children = tasks.map((args) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', CHILD, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const ready = new Promise<void>((resolve) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.startsWith('ready\n')) resolve();
      });
    });
    const done = new Promise<unknown>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code) => {
        if (code !== 0) reject(new Error(`${args.join(' ')} exited ${code}: ${err}`));
        else resolve(JSON.parse(out.slice('ready\n'.length)));
      });
    });
    return { child, ready, done };
  });
  // A child that fails before it is ready fails the run instead of leaving it waiting.
  await Promise.race([Promise.all(children.map((c) => c.ready)), Promise.all(children.map((c) => c.done))]);
  // Far enough ahead for every child to have read it.
  const start = Date.now() + 200;
  for (const c of children) c.child.stdin.end(`${start}\n`);
  return Promise.all(children.map((c) => c.done));
}

/** A key made in the SQLite record at `path` (as `keys create` makes one); its value is returned here only. */
export async function recordKey(path: string, input: NewKey): Promise<{ id: string; value: string }> {
  const db = SqliteDatabase.open(path);
  const keys = openSqliteKeyStore(db);
  try {
    const { record, value } = await keys.create(input);
    return { id: record.id, value };
  } finally {
    await keys.close();
    db.close();
  }
}

/** Every usage row the record at `path` holds, by key. */
export function recordUsage(path: string): Record<string, UsageRow[]> {
  const db = SqliteDatabase.open(path);
  try {
    return readUsage(db);
  } finally {
    db.close();
  }
}

/** The bytes of the record at `path` and its write-ahead log: what a secret must never be found in. */
export async function recordBytes(path: string): Promise<Buffer> {
  const parts = await Promise.all([path, `${path}-wal`].map((p) => readFile(p).catch(() => Buffer.alloc(0))));
  return Buffer.concat(parts);
}

/** The key store of the SQLite record at `path`, as the CLI opens it; closing it closes the file too. */
export function recordKeys(path: string): KeyRepository {
  const db = SqliteDatabase.open(path);
  const keys = openSqliteKeyStore(db);
  const close = keys.close.bind(keys);
  keys.close = async () => {
    await close();
    db.close();
  };
  return keys;
}

/** The SQLite record's file of a gateway's config (a test that reads the file runs on SQLite). */
export function sqlitePath(record: RecordConfig): string {
  if (record.kind !== 'sqlite') throw new Error(`this test reads a SQLite record's file, and the record is ${record.kind}`);
  return record.path;
}
