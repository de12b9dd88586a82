// A process of its own on a SQLite record (or a PostgreSQL schema), for tests of what
// several processes on one record do at once (a primary and its workers, the CLI
// beside a gateway, instances on machines of their own). It loads,
// prints "ready", reads from stdin the instant (epoch ms) at which every child starts,
// waits for it without yielding (so the children start within a millisecond of each
// other), does its task, prints one line of JSON and exits.
//   open <path>                       open the file (migrations): {"applied":[…]}
//   tiers <path> <account id> <tag>   add 20 tiers <tag>0…19 to one account, one update each
//   keys <path> <account> <count>     create keys: {"hashes":[…]}
//   pg-open <url> <schema>            open the PostgreSQL schema (migrations): {"applied":[…]}

import { PgDatabase } from '../../src/record/pg-database.js';
import { SqliteAccountStore } from '../../src/record/sqlite-account-store.js';
import { SqliteDatabase } from '../../src/record/sqlite-database.js';
import { openSqliteKeyStore } from '../../src/record/sqlite-key-store.js';

const [task, path, a, b] = process.argv.slice(2) as [string, string, string | undefined, string | undefined];

process.stdout.write('ready\n');
const start = await new Promise<number>((resolve) => process.stdin.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
process.stdin.pause();
while (Date.now() < start) {
  // A spin, not a timer: a timer fires whenever the event loop gets to it.
}

if (task === 'open') {
  const db = SqliteDatabase.open(path);
  process.stdout.write(`${JSON.stringify({ applied: db.applied })}\n`);
  db.close();
} else if (task === 'tiers') {
  const db = SqliteDatabase.open(path);
  const store = new SqliteAccountStore(db);
  for (let i = 0; i < 20; i++) await store.updateAccount(a as string, (old) => ({ ...old, tiers: [...old.tiers, `${b}${i}`] }));
  process.stdout.write('{}\n');
  db.close();
} else if (task === 'keys') {
  const db = SqliteDatabase.open(path);
  const store = openSqliteKeyStore(db);
  const hashes: string[] = [];
  for (let i = 0; i < Number(b); i++) hashes.push((await store.create({ account: a as string, tier: 'free' })).record.hash);
  await store.close();
  process.stdout.write(`${JSON.stringify({ hashes })}\n`);
  db.close();
} else if (task === 'pg-open') {
  const db = await PgDatabase.open({ connectionString: path, max: 1 }, { schema: a as string });
  process.stdout.write(`${JSON.stringify({ applied: db.applied })}\n`);
  await db.close();
} else {
  throw new Error(`unknown task ${task}`);
}
