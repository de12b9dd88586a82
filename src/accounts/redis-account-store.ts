// Accounts, sign-in tokens and sessions in the Redis store of earlier versions (read now
// to adopt it into the record, `store migrate --from redis://…`), under the same
// prefix as key records, so signing in works on any instance. Tokens and sessions
// carry a Redis TTL (nothing to sweep) and are checked against the gateway's clock
// too. Layout under the prefix: a:<id> account, an:<lower-case name> id, accounts
// (set of ids), st:<hash> sign-in token, ss:<hash> session. Accounts change by
// compare-and-set: two instances changing one account both land.

import type { RedisClient } from '../store/redis-connection.js';
import { RedisCas } from '../store/redis-cas.js';
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

/** Claims the name and writes the account in one step: a name is never half taken. */
const CREATE = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
return 1
`;

/** GETDEL for Redis before 6.2: two instances exchanging one token cannot both get it. */
const TAKE = `
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
return v
`;

export class RedisAccountStore implements AccountStore {
  private readonly cas: RedisCas;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.cas = new RedisCas(redis);
  }

  private key(kind: string, id: string): string {
    return `${this.prefix}${kind}:${id}`;
  }

  /** Milliseconds a record has left, at least 1 (Redis refuses a TTL of 0). */
  private ttl(record: { readonly expiresAt: string }): number {
    return Math.max(1, Date.parse(record.expiresAt) - this.now());
  }

  async createAccount(account: AccountRecord): Promise<void> {
    const ok = await this.redis.eval(
      CREATE,
      3,
      this.key('an', nameKey(account.name)),
      this.key('a', account.id),
      `${this.prefix}accounts`,
      account.id,
      JSON.stringify(account),
    );
    if (ok !== 1) throw new AccountExistsError(account.name);
  }

  async getAccount(ref: string): Promise<AccountRecord | undefined> {
    // Names never start with "acc_" (account-service refuses them), so a ref is one or the other.
    const id = ref.startsWith('acc_') ? ref : await this.redis.get(this.key('an', nameKey(ref)));
    if (id === null) return undefined;
    const text = await this.redis.get(this.key('a', id));
    return text === null ? undefined : (JSON.parse(text) as AccountRecord);
  }

  /** Everything under the prefix: accounts, and the tokens and sessions Redis has not expired yet (found by SCAN). */
  async dump(): Promise<AccountDump> {
    const read = async (kind: string): Promise<string[]> => {
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${this.prefix}${kind}:*`, 'COUNT', 1000);
        if (keys.length > 0) for (const t of await this.redis.mget(keys)) if (t !== null) found.push(t);
        cursor = next;
      } while (cursor !== '0');
      return found;
    };
    return {
      accounts: await this.listAccounts(),
      tokens: (await read('st')).map((t) => JSON.parse(t) as SigninTokenRecord),
      sessions: (await read('ss')).map((t) => JSON.parse(t) as SessionRecord),
    };
  }

  async listAccounts(): Promise<AccountRecord[]> {
    const ids = await this.redis.smembers(`${this.prefix}accounts`);
    if (ids.length === 0) return [];
    const texts = await this.redis.mget(ids.map((id) => this.key('a', id)));
    return texts
      .filter((t): t is string => t !== null)
      .map((t) => JSON.parse(t) as AccountRecord)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async updateAccount(id: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord> {
    const updated = await this.cas.update<AccountRecord>(this.redis, this.key('a', id), (old) => {
      if (old === undefined) throw new AccountNotFoundError(id);
      return { ...change(old), id: old.id, name: old.name };
    });
    return updated as AccountRecord;
  }

  async addToken(token: SigninTokenRecord): Promise<void> {
    await this.redis.set(this.key('st', token.hash), JSON.stringify(token), 'PX', this.ttl(token));
  }

  async takeToken(hash: string): Promise<SigninTokenRecord | undefined> {
    const text = (await this.redis.eval(TAKE, 1, this.key('st', hash))) as string | null;
    if (text === null) return undefined;
    const token = JSON.parse(text) as SigninTokenRecord;
    return expired(token, this.now()) ? undefined : token;
  }

  async addSession(session: SessionRecord): Promise<void> {
    await this.redis.set(this.key('ss', session.hash), JSON.stringify(session), 'PX', this.ttl(session));
  }

  async getSession(hash: string): Promise<SessionRecord | undefined> {
    const text = await this.redis.get(this.key('ss', hash));
    if (text === null) return undefined;
    const session = JSON.parse(text) as SessionRecord;
    return expired(session, this.now()) ? undefined : session;
  }

  async deleteSession(hash: string): Promise<void> {
    await this.redis.del(this.key('ss', hash));
  }

  async close(): Promise<void> {
    // The connection belongs to the store bundle that opened it.
  }
}
