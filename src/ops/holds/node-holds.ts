// Operators' holds on nodes — cordon (no new calls), drain (no calls, WebSocket
// subscriptions moved off) and uncordon — as the gateway applies them. Holds are kept
// by chain and node name in the store (ops/holds/hold-store.ts): nodes a reload keeps keep
// theirs, rebuilt runtimes get theirs by name, a restart reads them back, and every
// instance sharing the Redis hot state applies a change as it is announced (and re-reads
// them all now and then, in case an announcement was lost).

import { ControlError } from '../../control-errors.js';
import type { ChainRuntime } from '../../chain/runtime.js';
import type { Logger } from '../log.js';
import type { HoldStore, NodeHoldRecord } from './hold-store.js';

export type HoldAction = 'cordon' | 'drain' | 'uncordon';

/** A refused change: no such node, a bad reason, or a store that did not take it (nothing changed). */
export class HoldError extends ControlError {
  constructor(code: 'NODE_NOT_FOUND' | 'INVALID_INPUT' | 'STORE_UNAVAILABLE', message: string) {
    super(code, message, code === 'STORE_UNAVAILABLE' ? { retryAfter: 1 } : {});
    this.name = 'HoldError';
  }
}

/** One node's hold as the admin API and `nodes list` show it. */
export interface HoldView {
  readonly chain: string;
  readonly node: string;
  readonly state: 'active' | 'cordoned' | 'draining';
  readonly since: string | null;
  readonly reason: string | null;
  /** False for a hold on a node the config no longer has (kept, in case it comes back). */
  readonly known: boolean;
}

const REASON_MAX = 200;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

const idOf = (chain: string, node: string): string => `${chain}/${node}`;

export interface NodeHoldsOptions {
  /** Re-read every hold this often (a shared store); 0: never. */
  readonly refreshMs: number;
  readonly now: () => number;
  /** Told every change of the holds in force, awaited before an operator's change returns (a cluster's workers). */
  readonly announce?: (holds: ReadonlyMap<string, NodeHoldRecord>) => Promise<void>;
}

export class NodeHolds {
  private holds = new Map<string, NodeHoldRecord>();
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly store: HoldStore,
    private readonly runtimes: () => readonly ChainRuntime[],
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly announce: NodeHoldsOptions['announce'],
  ) {}

  static async open(
    store: HoldStore,
    runtimes: () => readonly ChainRuntime[],
    logger: Logger,
    options: NodeHoldsOptions,
  ): Promise<NodeHolds> {
    const h = new NodeHolds(store, runtimes, logger, options.now, options.announce);
    h.holds = await store.all();
    store.onChange(() => void h.refresh());
    if (options.refreshMs > 0) h.timer = setInterval(() => void h.refresh(), options.refreshMs).unref();
    return h;
  }

  /** Every hold in force, by "chain/node". */
  get all(): ReadonlyMap<string, NodeHoldRecord> {
    return this.holds;
  }

  get(chain: string, node: string): NodeHoldRecord | undefined {
    return this.holds.get(idOf(chain, node));
  }

  /** Put every node of the runtimes serving now in the state its name holds; a node newly drained hands its subscriptions on. */
  apply(): void {
    for (const rt of this.runtimes()) {
      let drained = false;
      for (const n of rt.pool.nodes) {
        const state = this.holds.get(idOf(rt.name, n.name))?.state;
        if (n.hold === state) continue;
        if (state === 'draining') drained = true;
        n.hold = state;
      }
      if (drained) rt.subscriptions?.check();
    }
  }

  /** An operator's change; it is in the store (seen by every instance) before it applies here. */
  async change(chain: string, node: string, action: HoldAction, reason?: unknown): Promise<HoldView> {
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > REASON_MAX || CONTROL.test(reason))) {
      throw new HoldError('INVALID_INPUT', `reason must be a string of at most ${REASON_MAX} printable characters`);
    }
    const id = idOf(chain, node);
    const current = this.holds.get(id);
    const known = this.known(chain, node);
    // A hold on a node the config lost may still be lifted.
    if (!known && !(action === 'uncordon' && current !== undefined)) {
      throw new HoldError('NODE_NOT_FOUND', `no node "${node}" in chain endpoint "${chain}" (noderouter nodes list shows them)`);
    }
    let next: NodeHoldRecord | undefined;
    if (action !== 'uncordon') {
      const state = action === 'cordon' ? 'cordoned' : 'draining';
      next =
        current?.state === state
          ? { ...current, reason: reason ?? current.reason }
          : { state, since: new Date(this.now()).toISOString(), reason: reason ?? '' };
    }
    try {
      await this.store.set(id, next);
    } catch {
      throw new HoldError('STORE_UNAVAILABLE', 'the store did not take the change; nothing was changed, try again');
    }
    this.update(id, next);
    await this.announce?.(this.holds).catch(() => undefined);
    return this.view(chain, node, known);
  }

  /** Every node of every chain endpoint, then holds on nodes the config no longer has. */
  list(): HoldView[] {
    const out: HoldView[] = [];
    const seen = new Set<string>();
    for (const rt of this.runtimes()) {
      for (const n of rt.pool.nodes) {
        seen.add(idOf(rt.name, n.name));
        out.push(this.view(rt.name, n.name, true));
      }
    }
    for (const id of this.holds.keys()) {
      if (seen.has(id)) continue;
      const slash = id.indexOf('/');
      out.push(this.view(id.slice(0, slash), id.slice(slash + 1), false));
    }
    return out;
  }

  /** Read every hold again (another instance changed one, or a reconnect may have missed some). */
  async refresh(): Promise<void> {
    let all: Map<string, NodeHoldRecord>;
    try {
      all = await this.store.all();
    } catch {
      return; // The store's health is reported elsewhere; the holds in force stay.
    }
    const ids = new Set([...this.holds.keys(), ...all.keys()]);
    for (const id of ids) {
      const before = this.holds.get(id);
      const after = all.get(id);
      if (before?.state !== after?.state) this.tell(id, after, 'another instance');
    }
    this.holds = all;
    this.apply();
    await this.announce?.(all).catch(() => undefined);
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private known(chain: string, node: string): boolean {
    return this.runtimes().some((rt) => rt.name === chain && rt.pool.nodes.some((n) => n.name === node));
  }

  private update(id: string, next: NodeHoldRecord | undefined): void {
    const before = this.holds.get(id);
    if (next === undefined) this.holds.delete(id);
    else this.holds.set(id, next);
    if (before?.state !== next?.state) this.tell(id, next, 'admin API');
    this.apply();
  }

  private tell(id: string, hold: NodeHoldRecord | undefined, by: string): void {
    const slash = id.indexOf('/');
    const state = hold?.state ?? 'active';
    this.logger.info(state === 'active' ? 'node uncordoned' : state === 'cordoned' ? 'node cordoned' : 'node draining', {
      event: 'node_hold',
      chain: id.slice(0, slash),
      node: id.slice(slash + 1),
      state,
      reason: hold?.reason || undefined,
      by,
    });
  }

  private view(chain: string, node: string, known: boolean): HoldView {
    const h = this.holds.get(idOf(chain, node));
    return { chain, node, state: h?.state ?? 'active', since: h?.since ?? null, reason: h?.reason || null, known };
  }
}
