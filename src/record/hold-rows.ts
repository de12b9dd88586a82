// Operators' holds as the record's rows hold them, the same for SQLite and PostgreSQL:
// one row per "chain/node"; a row in a state this version does not know holds nothing.

import type { NodeHoldRecord } from '../ops/holds/hold-store.js';

export interface HoldRow {
  id: string;
  state: string;
  since: string;
  reason: string;
}

export function holdsOf(rows: Iterable<HoldRow>): Map<string, NodeHoldRecord> {
  const out = new Map<string, NodeHoldRecord>();
  for (const row of rows) {
    // The table's check admits only these two; anything else holds nothing.
    if (row.state === 'cordoned' || row.state === 'draining') out.set(row.id, { state: row.state, since: row.since, reason: row.reason });
  }
  return out;
}
