// The records of `keys export` read back by `keys import`: hashes and metadata, never a
// key value; anything that could carry one is refused, and restrictions come back
// exactly as they were checked on the way in.

import type { KeyRecord } from '../auth/key-store.js';
import { mergeRestrictions, RESTRICTION_FIELDS } from '../auth/restrictions.js';
import { UsageError } from './args.js';

const HASH = /^[0-9a-f]{64}$/;

/** A record line of `keys export` (line `n`); anything that could carry a key value is refused. */
export function parseRecord(line: string, n: number): KeyRecord {
  let r: KeyRecord;
  try {
    r = JSON.parse(line) as KeyRecord;
  } catch {
    throw new UsageError(`line ${n}: not a JSON key record`);
  }
  if (!isExportedRecord(r))
    throw new UsageError(`line ${n}: not a key record of \`keys export\` (id, hash, prefix, account, tier, retired)`);
  if (r.restrictions === undefined) return r;
  const fields = r.restrictions as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((f) => !(RESTRICTION_FIELDS as readonly string[]).includes(f));
  if (unknown.length > 0)
    throw new UsageError(`line ${n}: restrictions.${unknown[0]} is not a restriction (${RESTRICTION_FIELDS.join(', ')})`);
  const checked = mergeRestrictions(fields, undefined, (field, message) => {
    throw new UsageError(`line ${n}: restrictions.${field}: ${message}`);
  });
  if (checked !== undefined) return { ...r, restrictions: checked };
  const { restrictions: _none, ...unrestricted } = r;
  return unrestricted;
}

function isExportedRecord(r: KeyRecord): boolean {
  return (
    typeof r.id === 'string' &&
    typeof r.hash === 'string' &&
    HASH.test(r.hash) &&
    typeof r.prefix === 'string' &&
    r.prefix.length <= 8 &&
    typeof r.account === 'string' &&
    typeof r.tier === 'string' &&
    Array.isArray(r.retired) &&
    r.retired.every((x) => HASH.test(x.hash)) &&
    !('key' in r) &&
    !('value' in r)
  );
}

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
