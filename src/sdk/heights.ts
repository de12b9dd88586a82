// Heights carried as decimal strings (CometBFT, Cosmos REST and gRPC), 0 meaning
// "latest", and routing pinned to a height: for chains whose nodes report the earliest
// height they keep, a call goes to nodes holding its height, to archive below the full
// nodes'; and the role that earliest height shows.

import { GatewayError } from '../errors.js';
import type { NodeDescription, PoolView, Routing } from '../plugin/contract.js';
import { FINAL_TTL_MS } from './cache.js';

const DECIMAL = /^\d{1,15}$/;

/** A height header or metadata entry: decimal digits only, else the request is refused. */
export function decimalHeader(v: string | string[] | undefined, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !DECIMAL.test(v)) {
    throw new GatewayError('INVALID_REQUEST', { message: `${name} must be a decimal height` });
  }
  return v;
}

/** A height from a JSON value or header (`5`, `"5"`); undefined for absent, 0 (latest) or malformed. */
export function decimalHeight(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v > 0 ? v : undefined;
  if (typeof v !== 'string' || !DECIMAL.test(v)) return undefined;
  const n = Number(v);
  return n > 0 ? n : undefined;
}

/** Lowest height full nodes hold: what they report, else head - fullHistory; undefined before any probe. */
export function fullFloor(view: PoolView, fullHistory: number): number | undefined {
  if (view.fullEarliest !== undefined) return view.fullEarliest;
  return view.head === undefined ? undefined : view.head - fullHistory;
}

export type HeightRouting = Routing & { readonly minHeight: number };

/** Spread into a routing that may be hedged; an unhedged one carries no `hedge` at all. */
const HEDGED = Object.freeze({ hedge: true as const });

/**
 * Routing of a read pinned to height `h`. Below the head, the state at a height is
 * final (CometBFT has instant finality), so the answer may be kept long (`cache`). A
 * height at or above the full nodes' floor is theirs (`fullHolds`); before the floor is
 * known, it may be anywhere. `hedge`: a second node may be asked when the first is slow
 * (a read whose losing attempt the relay can cancel).
 */
export function atHeight(
  h: number,
  view: PoolView,
  fullHistory: number,
  cost: number,
  label: string,
  cache: boolean,
  hedge = cache,
): HeightRouting {
  const floor = fullFloor(view, fullHistory);
  const archive = floor !== undefined && h < floor;
  const fullHolds = floor !== undefined && !archive;
  const hedged = hedge ? HEDGED : undefined;
  if (cache && view.head !== undefined && h < view.head) {
    return { archive, fullHolds, minHeight: h, cost, label, cacheTtlMs: FINAL_TTL_MS, cacheHeight: h, ...hedged };
  }
  return { archive, fullHolds, minHeight: h, cost, label, ...hedged };
}

/**
 * What a node's oldest retained height says of it (`describe`): one that keeps every
 * height from 1 is an archive node, one that starts later has pruned. A chain that began
 * at a later height (a new genesis after an upgrade) shows its archive nodes as full:
 * set their role in config.
 */
export function retention(earliest: number | undefined): Pick<NodeDescription, 'earliest' | 'role'> {
  if (earliest === undefined) return {};
  return { earliest, role: earliest <= 1 ? 'archive' : 'full' };
}
