// Accounts, sign-in tokens and sessions in one JSON file beside the key file
// (`keys.accounts.json`), of the file store of earlier versions (read now to adopt it
// into the record, `store migrate --from FILE`). Writes take the same kind of
// lock as the key file and replace the file atomically, so the CLI (accounts create,
// accounts token) and a running gateway can share it; reads re-read the file when
// its modification time changed. Expired tokens and sessions are dropped on write.

import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { withFileLock } from '../auth/file-lock.js';
import { mtimeOf, readJsonFile, writeJsonAtomic } from '../store/json-file.js';
import {
  AccountExistsError,
  AccountNotFoundError,
  expired,
  nameKey,
  type AccountDump,
  type AccountRecord,
  type AccountStore,
  type SessionRecord,
  type SigninTokenRecord,
} from './account-store.js';

interface FileShape {
  version: 1;
  accounts: AccountRecord[];
  tokens: SigninTokenRecord[];
  sessions: SessionRecord[];
}

const empty = (): FileShape => ({ version: 1, accounts: [], tokens: [], sessions: [] });

export function accountsPathFor(keyFile: string): string {
  return keyFile.replace(/(\.json)?$/, '.accounts.json');
}

export class FileAccountStore implements AccountStore {
  private shape: FileShape = empty();
  private mtimeMs = -1;
  private reading: Promise<void> | undefined;

  private constructor(
    readonly path: string,
    private readonly now: () => number,
  ) {}

  static async open(path: string, now: () => number = Date.now): Promise<FileAccountStore> {
    await mkdir(dirname(path), { recursive: true });
    const store = new FileAccountStore(path, now);
    await store.current();
    return store;
  }

  private async load(): Promise<{ shape: FileShape; mtimeMs: number }> {
    const { value, mtimeMs } = await readJsonFile<FileShape>(this.path, empty);
    if (value.version !== 1 || !Array.isArray(value.accounts) || !Array.isArray(value.tokens) || !Array.isArray(value.sessions)) {
      throw new Error(`${this.path} is not a noderouter accounts file`);
    }
    return { shape: value, mtimeMs };
  }

  /** The file's content, re-read when another process changed it; concurrent readers share one read. */
  private async current(): Promise<FileShape> {
    if ((await mtimeOf(this.path)) !== this.mtimeMs) {
      this.reading ??= this.load()
        .then(({ shape, mtimeMs }) => {
          this.shape = shape;
          this.mtimeMs = mtimeMs;
        })
        .finally(() => {
          this.reading = undefined;
        });
      await this.reading;
    }
    return this.shape;
  }

  /** Read-modify-write under the lock, from the file's current content. */
  private mutate<T>(fn: (shape: FileShape) => T): Promise<T> {
    return withFileLock(this.path, async () => {
      const { shape } = await this.load();
      const now = this.now();
      shape.tokens = shape.tokens.filter((t) => !expired(t, now));
      shape.sessions = shape.sessions.filter((s) => !expired(s, now));
      const result = fn(shape);
      await writeJsonAtomic(this.path, shape, 1);
      this.shape = shape;
      this.mtimeMs = await mtimeOf(this.path);
      return result;
    });
  }

  private static find(accounts: readonly AccountRecord[], ref: string): AccountRecord | undefined {
    return accounts.find((a) => a.id === ref) ?? accounts.find((a) => nameKey(a.name) === nameKey(ref));
  }

  async createAccount(account: AccountRecord): Promise<void> {
    await this.mutate((shape) => {
      if (shape.accounts.some((a) => nameKey(a.name) === nameKey(account.name) || a.id === account.id)) {
        throw new AccountExistsError(account.name);
      }
      shape.accounts.push(account);
    });
  }

  async getAccount(ref: string): Promise<AccountRecord | undefined> {
    return FileAccountStore.find((await this.current()).accounts, ref);
  }

  /** Everything the file holds, as it is (expired tokens and sessions included until the next write drops them). */
  async dump(): Promise<AccountDump> {
    const { accounts, tokens, sessions } = await this.current();
    return { accounts: [...accounts], tokens: [...tokens], sessions: [...sessions] };
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return [...(await this.current()).accounts].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  updateAccount(id: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord> {
    return this.mutate((shape) => {
      const i = shape.accounts.findIndex((a) => a.id === id);
      const old = shape.accounts[i];
      if (old === undefined) throw new AccountNotFoundError(id);
      const updated = { ...change(old), id: old.id, name: old.name };
      shape.accounts[i] = updated;
      return updated;
    });
  }

  async addToken(token: SigninTokenRecord): Promise<void> {
    await this.mutate((shape) => shape.tokens.push(token));
  }

  async takeToken(hash: string): Promise<SigninTokenRecord | undefined> {
    // Unknown hashes (most failed attempts) never take the lock or write the file.
    if (!(await this.current()).tokens.some((t) => t.hash === hash)) return undefined;
    return this.mutate((shape) => {
      const i = shape.tokens.findIndex((t) => t.hash === hash);
      if (i < 0) return undefined;
      const [token] = shape.tokens.splice(i, 1);
      return token;
    });
  }

  async addSession(session: SessionRecord): Promise<void> {
    await this.mutate((shape) => shape.sessions.push(session));
  }

  async getSession(hash: string): Promise<SessionRecord | undefined> {
    const s = (await this.current()).sessions.find((x) => x.hash === hash);
    return s === undefined || expired(s, this.now()) ? undefined : s;
  }

  async deleteSession(hash: string): Promise<void> {
    if (!(await this.current()).sessions.some((s) => s.hash === hash)) return;
    await this.mutate((shape) => {
      shape.sessions = shape.sessions.filter((s) => s.hash !== hash);
    });
  }

  async close(): Promise<void> {
    await this.reading?.catch(() => undefined);
  }
}
