// Operators' holds on nodes (cordon, drain) in the PostgreSQL record, one row per
// "chain/node", so they outlive reloads and restarts. As with the SQLite record, the
// record keeps them and announces nothing: instances learn of a hold another one set
// from the hot state's announcements (Redis), and read them all again at start.

import type { HoldStore, NodeHoldRecord } from '../ops/holds/hold-store.js';
import { holdsOf, type HoldRow } from './hold-rows.js';
import type { PgDatabase } from './pg-database.js';

export class PgHoldStore implements HoldStore {
  private readonly allSql: string;
  private readonly setSql: string;
  private readonly liftSql: string;

  /** Over an open record (which the caller closes, after the store). */
  constructor(private readonly db: PgDatabase) {
    const table = db.table('node_holds');
    this.allSql = `SELECT id, state, since, reason FROM ${table} ORDER BY id`;
    this.setSql = `INSERT INTO ${table} (id, state, since, reason) VALUES ($1, $2, $3::timestamptz, $4)
      ON CONFLICT (id) DO UPDATE SET state = excluded.state, since = excluded.since, reason = excluded.reason`;
    this.liftSql = `DELETE FROM ${table} WHERE id = $1`;
  }

  async all(): Promise<Map<string, NodeHoldRecord>> {
    return holdsOf(await this.db.query<HoldRow>(this.allSql, []));
  }

  async set(id: string, hold: NodeHoldRecord | undefined): Promise<void> {
    if (hold === undefined) await this.db.query(this.liftSql, [id]);
    else await this.db.query(this.setSql, [id, hold.state, hold.since, hold.reason]);
  }

  onChange(): void {
    // The record announces nothing (see above).
  }

  async close(): Promise<void> {
    // The connection belongs to whoever opened the record.
  }
}
