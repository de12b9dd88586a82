// The filters one simulated EVM node keeps, as geth does: block, log and
// pending-transaction filters under random ids only this node knows, polled with
// eth_getFilterChanges (what is new since the last poll), read whole with
// eth_getFilterLogs, dropped by eth_uninstallFilter or after filterTimeoutMs without a
// poll (on the devnet's clock). Any other node answers geth's "filter not found".

import { randomBytes } from 'node:crypto';
import type { NodeView, RpcOutcome, TxPool } from 'noderouter/devnet';
import { BAD_CRITERIA, logMatcher, logsBetween, queryLogs, type LogMatcher } from './blocks.js';

const HEX_NUMBER = /^0[xX][0-9a-fA-F]+$/;
const NOT_FOUND: RpcOutcome = { error: { code: -32000, message: 'filter not found' } };

interface LogCriteria {
  readonly fromBlock?: unknown;
  readonly toBlock?: unknown;
  readonly blockHash?: unknown;
  readonly address?: unknown;
  readonly topics?: unknown;
}

type Filter = { deadline: number } & (
  | { readonly kind: 'blocks'; seen: number }
  | {
      readonly kind: 'logs';
      seen: number;
      readonly criteria: LogCriteria;
      readonly match: LogMatcher;
      readonly from: number;
      readonly to: number;
    }
  | { readonly kind: 'pending'; hashes: string[] }
);

/** A numeric bound of a log filter (open for tags), or 'bad'. */
function bound(v: unknown, open: number): number | 'bad' {
  if (v === undefined || v === null || v === 'latest' || v === 'pending' || v === 'safe' || v === 'finalized') return open;
  if (v === 'earliest') return 1;
  return typeof v === 'string' && HEX_NUMBER.test(v) ? parseInt(v, 16) : 'bad';
}

/** geth's ids: 16 random bytes in hex without leading zeros. */
function newId(): string {
  return `0x${randomBytes(16).toString('hex').replace(/^0+/, '') || '0'}`;
}

export class NodeFilters {
  private readonly filters = new Map<string, Filter>();

  constructor(
    private readonly node: NodeView,
    pool: TxPool,
  ) {
    pool.onAccepted((hash) => {
      this.sweep();
      for (const f of this.filters.values()) if (f.kind === 'pending') f.hashes.push(hash);
    });
  }

  newBlockFilter(): RpcOutcome {
    return this.install({ kind: 'blocks', seen: this.node.height(), deadline: 0 });
  }

  newPendingTransactionFilter(): RpcOutcome {
    return this.install({ kind: 'pending', hashes: [], deadline: 0 });
  }

  newFilter(criteria: unknown): RpcOutcome {
    if (criteria === null || typeof criteria !== 'object' || Array.isArray(criteria)) return { error: BAD_CRITERIA };
    const c = criteria as LogCriteria;
    const match = logMatcher(c);
    if (typeof match !== 'function') return { error: match };
    const from = bound(c.fromBlock, 0);
    const to = bound(c.toBlock, Number.MAX_SAFE_INTEGER);
    if (from === 'bad' || to === 'bad') return { error: { code: -32602, message: 'invalid argument 0: invalid block number' } };
    if (to < from) return { error: { code: -32000, message: 'invalid from and to block combination' } };
    return this.install({ kind: 'logs', seen: this.node.height(), criteria: c, match, from, to, deadline: 0 });
  }

  /** What is new since the last poll: block hashes, logs, or pending transaction hashes. */
  changes(id: unknown): RpcOutcome {
    const f = this.find(id);
    if (f === undefined) return NOT_FOUND;
    f.deadline = this.node.now() + this.node.settings.filterTimeoutMs;
    if (f.kind === 'pending') return { result: f.hashes.splice(0) };
    const head = this.node.height();
    const first = f.seen + 1;
    f.seen = Math.max(f.seen, head);
    if (f.kind === 'blocks') {
      const hashes: string[] = [];
      for (let h = first; h <= head; h++) hashes.push(this.node.chain.hash(h));
      return { result: hashes };
    }
    const lo = Math.max(first, f.from);
    const hi = Math.min(head, f.to);
    return lo > hi ? { result: [] } : logsBetween(this.node, lo, hi, f.match);
  }

  /** Every log the filter's criteria match now (log filters only, as geth). */
  logs(id: unknown): RpcOutcome {
    const f = this.find(id);
    if (f === undefined || f.kind !== 'logs') return NOT_FOUND;
    return queryLogs(f.criteria, f.match, this.node);
  }

  uninstall(id: unknown): RpcOutcome {
    return { result: this.find(id) !== undefined && this.filters.delete(id as string) };
  }

  private install(f: Filter): RpcOutcome {
    this.sweep();
    const id = newId();
    f.deadline = this.node.now() + this.node.settings.filterTimeoutMs;
    this.filters.set(id, f);
    return { result: id };
  }

  private find(id: unknown): Filter | undefined {
    this.sweep();
    return typeof id === 'string' ? this.filters.get(id) : undefined;
  }

  /** Drop filters not polled in time (geth checks every timeout period; here at every use). */
  private sweep(): void {
    const now = this.node.now();
    for (const [id, f] of this.filters) if (f.deadline <= now) this.filters.delete(id);
  }
}
