// What a cluster's worker takes from its primary: the health its probers decide, the
// operators' holds in force (both taken before the worker serves, then as pushed), and
// where the worker's records of nodes disagreeing go (the primary keeps them).

import type { ChainSet } from '../app/chain-set.js';
import type { NodeHolds } from '../ops/holds/node-holds.js';
import type { PoolHealth } from '../pool/pool.js';
import type { HoldStore, NodeHoldRecord } from '../ops/holds/hold-store.js';
import type { Channel } from './channel.js';
import { PushedHoldStore } from './shared-holds.js';

/** The parts of a worker's gateway its primary's state is applied to. */
export interface WorkerState {
  readonly chains: ChainSet;
  readonly holds: NodeHolds;
  /** The holds store of the worker's services (pushed by the primary). */
  readonly holdStore: HoldStore;
}

/** Health the primary's prober decided. */
export function adoptHealth(state: WorkerState, health: PoolHealth): void {
  state.chains.byName(health.chain)?.prober.adopt(health);
}

/** The holds the primary has in force. */
export async function adoptHolds(state: WorkerState, holds: ReadonlyMap<string, NodeHoldRecord>): Promise<void> {
  if (state.holdStore instanceof PushedHoldStore) state.holdStore.take(holds);
  await state.holds.refresh();
}

/** Before the worker serves: the health and holds the primary holds now; disputes are the primary's to keep. */
export async function joinPrimary(state: WorkerState, primary: Channel): Promise<void> {
  const [health, holds] = await Promise.all([
    primary.request<PoolHealth[]>('health.all'),
    primary.request<Map<string, NodeHoldRecord>>('holds.all'),
  ]);
  for (const h of health) adoptHealth(state, h);
  await adoptHolds(state, holds);
  state.chains.disputes.relay = {
    entry: (entry) => primary.note('disputes.add', entry),
    takenOut: (chain, node, until) => primary.note('nodes.disputed', [chain, node, until]),
  };
}
