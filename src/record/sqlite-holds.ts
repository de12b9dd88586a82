// Operators' holds on nodes (cordon, drain) in the SQLite record, one row per
// "chain/node", so they outlive reloads and restarts. As with the file store, one
// process changes them (the gateway, or a cluster's primary, which pushes them to its
// workers): no other writer announces anything, so there is nothing to listen for.

import type { HoldStore, NodeHoldRecord } from '../ops/holds/hold-store.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { holdsOf, type HoldRow } from './hold-rows.js';

export class SqliteHoldStore implements HoldStore {
  private readonly allStmt;
  private readonly setStmt;
  private readonly liftStmt;

  /** Over an open record (which the caller closes, after the store). */
  constructor(db: SqliteDatabase) {
    this.allStmt = db.statement<[], HoldRow>('SELECT id, state, since, reason FROM node_holds ORDER BY id');
    this.setStmt = db.statement<[string, NodeHoldRecord['state'], string, string]>(
      `INSERT INTO node_holds (id, state, since, reason) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, since = excluded.since, reason = excluded.reason`,
    );
    this.liftStmt = db.statement<[string]>('DELETE FROM node_holds WHERE id = ?');
  }

  async all(): Promise<Map<string, NodeHoldRecord>> {
    return holdsOf(this.allStmt.all());
  }

  async set(id: string, hold: NodeHoldRecord | undefined): Promise<void> {
    if (hold === undefined) this.liftStmt.run(id);
    else this.setStmt.run(id, hold.state, hold.since, hold.reason);
  }

  onChange(): void {
    // One process changes holds; nobody else announces.
  }

  async close(): Promise<void> {
    // The connection belongs to whoever opened the record.
  }
}
