// Usage as the record's rows hold it, and back, the same for SQLite and PostgreSQL: a
// row per key, UTC day and chain, and what a row counts, kept by each store to write
// only the rows that changed since its last write.

import type { UsageRow } from '../quota/usage.js';

export interface UsageDayRow {
  key_id: string;
  day: string;
  chain: string;
  calls: number;
  errors: number;
  limited: number;
  invalid: number;
}

export const USAGE_COLUMNS = 'key_id, day, chain, calls, errors, limited, invalid';

export function usageRowOf(r: UsageDayRow): UsageRow {
  const row: UsageRow = { day: r.day, chain: r.chain, calls: r.calls, errors: r.errors, limited: r.limited };
  // As the book writes its rows: `invalid` only where there were any.
  if (r.invalid > 0) row.invalid = r.invalid;
  return row;
}

/** Rows by key, in the order given: what the book loads (the file store's snapshot shape). */
export function usageByKey(rows: Iterable<UsageDayRow>): Record<string, UsageRow[]> {
  const out: Record<string, UsageRow[]> = {};
  for (const r of rows) (out[r.key_id] ??= []).push(usageRowOf(r));
  return out;
}

/** Where a row is kept: its key, day and chain. */
export const usageSlot = (keyId: string, r: UsageRow): string => `${keyId}\u0000${r.day}\u0000${r.chain}`;

/** What a row counts, to compare with what was last written. */
export const usageCounts = (r: UsageRow): string => `${r.calls},${r.errors},${r.limited},${r.invalid ?? 0}`;
