// The records of `keys export` read back by `keys import`: hashes and metadata, never a
// key value; anything that could carry one is refused, and restrictions come back
// exactly as they were checked on the way in (the record's own check, record-rows.ts).

import type { KeyRecord } from '../auth/key-store.js';
import { checkKeyRecord } from '../record/record-rows.js';
import { UsageError } from './args.js';

/** A record line of `keys export` (line `n`); anything that could carry a key value is refused. */
export function parseRecord(line: string, n: number): KeyRecord {
  let r: unknown;
  try {
    r = JSON.parse(line);
  } catch {
    throw new UsageError(`line ${n}: not a JSON key record`);
  }
  return checkKeyRecord(r, `line ${n}`);
}

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
