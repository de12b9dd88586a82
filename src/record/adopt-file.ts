// The JSON file store of earlier versions, read whole for `store migrate --from FILE`:
// the key file (records with their hashes, retired values and restrictions; last uses
// from its side file), dashboard accounts with their sign-in tokens and sessions, usage
// and operators' holds, each beside the key file under its own name. Read through the
// file store's own readers; nothing is written to the files.

import { existsSync } from 'node:fs';
import { accountsPathFor, FileAccountStore } from '../accounts/file-account-store.js';
import { openFileKeyStore } from '../auth/file-key-store.js';
import { ControlError } from '../control-errors.js';
import { FileHoldStore, holdsPathFor } from '../ops/holds/hold-store.js';
import { readUsageFile, usagePathFor } from '../quota/usage-file.js';
import type { RecordRow } from './record-rows.js';

/** Every row the file store at `path` (its key file, e.g. data/keys.json) holds. */
export async function readFileStore(path: string): Promise<RecordRow[]> {
  if (!existsSync(path)) {
    throw new ControlError(
      'INVALID_INPUT',
      `${path} does not exist: --from names the key file of the file store (store.path in the old config, e.g. data/keys.json)`,
    );
  }
  const rows: RecordRow[] = [];
  const accountsPath = accountsPathFor(path);
  if (existsSync(accountsPath)) {
    const dump = await (await FileAccountStore.open(accountsPath)).dump();
    for (const account of dump.accounts) rows.push({ kind: 'account', account });
    for (const token of dump.tokens) rows.push({ kind: 'token', token });
    for (const session of dump.sessions) rows.push({ kind: 'session', session });
  }
  const keys = await openFileKeyStore(path);
  try {
    for (const key of await keys.list()) rows.push({ kind: 'key', key });
  } finally {
    await keys.close();
  }
  for (const [keyId, list] of Object.entries(await readUsageFile(usagePathFor(path)))) {
    for (const usage of list) rows.push({ kind: 'usage', keyId, usage });
  }
  const holdsPath = holdsPathFor(path);
  if (existsSync(holdsPath)) {
    for (const [id, hold] of await (await FileHoldStore.open(holdsPath)).all()) rows.push({ kind: 'hold', id, hold });
  }
  return rows;
}
