// One SQLite file as the record: opened in WAL mode (readers never wait for the
// writer, so a primary and its workers, or the CLI beside a gateway, share the file),
// with a busy timeout (a writer waits for another's transaction instead of failing),
// foreign keys enforced, synchronous=FULL (a key shown to a customer once is on disk
// before it is shown: key and account writes are rare, usage is written in batches)
// and the schema brought up to date before anything else reads it. Statements are
// compiled once and kept; the stores hold what they prepared. It owns the connection,
// not what the tables mean.

import BetterSqlite3 from 'better-sqlite3';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { migrate, MIGRATIONS, type Migration } from './migrations.js';

export interface SqliteOptions {
  /** How long a writer waits for another process's transaction before failing (ms). */
  readonly busyTimeoutMs?: number;
  /** The schema to bring the file to (tests give their own). */
  readonly migrations?: readonly Migration[];
  readonly now?: () => number;
}

const BUSY_TIMEOUT_MS = 5_000;
/** An asynchronous writer's first and longest pause between tries for the write lock. */
const RETRY_FIRST_MS = 2;
const RETRY_MAX_MS = 50;

const isBusy = (err: unknown): boolean => String((err as { code?: unknown }).code).startsWith('SQLITE_BUSY');

/**
 * Puts the file in WAL mode (kept in the file: later opens find it so). Two processes
 * switching one new file at once get SQLITE_BUSY at once, without the busy timeout's
 * wait: the loser waits a moment and looks again, up to the same timeout.
 */
function walMode(db: BetterSqlite3.Database, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const mode = db.pragma('journal_mode', { simple: true }) === 'wal' ? 'wal' : db.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal') throw new Error(`${db.name} cannot be put in WAL mode (it stays in ${String(mode)} mode)`);
      return;
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
      // Opening is the start of a process: nothing else waits on its event loop yet.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

export class SqliteDatabase {
  private readonly statements = new Map<string, BetterSqlite3.Statement<unknown[], unknown>>();
  private closed = false;

  private constructor(
    readonly db: BetterSqlite3.Database,
    /** The migrations this open applied (none when the file was up to date). */
    readonly applied: readonly number[],
    /** How long a writer waits for another's transaction before failing. */
    readonly busyTimeoutMs: number,
  ) {}

  /** Opens (creating when absent) the file and applies the migrations it lacks. */
  static open(path: string, options: SqliteOptions = {}): SqliteDatabase {
    mkdirSync(dirname(path), { recursive: true });
    // Created private first: the file holds hashes of secrets, and SQLite gives its
    // -wal and -shm files the database file's mode.
    closeSync(openSync(path, 'a', 0o600));
    const busyTimeoutMs = options.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
    const db = new BetterSqlite3(path, { timeout: busyTimeoutMs });
    try {
      walMode(db, busyTimeoutMs);
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      const applied = migrate(db, options.migrations ?? MIGRATIONS, options.now);
      return new SqliteDatabase(db, applied, busyTimeoutMs);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  get path(): string {
    return this.db.name;
  }

  /** The statement for `sql`, compiled on first use and kept for the connection's life. */
  statement<P extends unknown[] = unknown[], R = unknown>(sql: string): BetterSqlite3.Statement<P, R> {
    let s = this.statements.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s as unknown as BetterSqlite3.Statement<P, R>;
  }

  /**
   * `fn` as one write transaction that takes the lock at BEGIN (IMMEDIATE): a
   * read-then-write inside it cannot be overtaken by another process, and two writers
   * wait for each other (the busy timeout) instead of failing at COMMIT.
   */
  writer<A extends unknown[], T>(fn: (...args: A) => T): (...args: A) => T {
    const tx = this.db.transaction(fn);
    return (...args: A) => tx.immediate(...args);
  }

  /**
   * `writer`'s transaction for writes off the request path (usage flushes): SQLite's
   * busy timeout waits inside the call, holding the whole event loop and every request
   * with it, so this one takes the write lock only when it is free at once and otherwise
   * waits its turn on timers, for as long as the busy timeout, before failing with
   * SQLITE_BUSY as `writer` would. A try that finds the lock taken has written nothing.
   */
  asyncWriter<A extends unknown[], T>(fn: (...args: A) => T): (...args: A) => Promise<T> {
    const tx = this.db.transaction(fn);
    const now = (args: A): T => {
      this.db.pragma('busy_timeout = 0');
      try {
        return tx.immediate(...args);
      } finally {
        this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
      }
    };
    return async (...args: A) => {
      const deadline = Date.now() + this.busyTimeoutMs;
      for (let pause = RETRY_FIRST_MS; ; pause = Math.min(pause * 2, RETRY_MAX_MS)) {
        try {
          return now(args);
        } catch (err) {
          if (!isBusy(err) || Date.now() >= deadline || this.closed) throw err;
        }
        await sleep(pause);
      }
    };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.statements.clear();
    this.db.close();
  }
}
