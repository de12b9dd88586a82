// Heights of SDK chains (CometBFT RPC and Cosmos REST): decimal strings on the wire,
// 0 meaning "latest". Nodes report the earliest height they keep, so routing pins a
// call to nodes holding its height and sends it to archive below the full nodes'.

import { GatewayError } from '../../src/errors.js';
import type { PoolView } from '../../src/plugin.js';
import { FINAL_TTL_MS } from './cache.js';

const DECIMAL = /^\d{1,15}$/;

/** The header (REST) and metadata (gRPC) in which SDK clients pin a query to a height. */
export const HEIGHT_HEADER = 'x-cosmos-block-height';

/** What the SDK or CometBFT says when a node no longer holds a height's state. */
export const PRUNED = /version does not exist|is not available|pruned|lowest height is/i;

/** Reads the height header: decimal digits only, else the request is refused. */
export function headerHeight(v: string | string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !DECIMAL.test(v)) {
    throw new GatewayError('INVALID_REQUEST', { message: `${HEIGHT_HEADER} must be a decimal height` });
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

export interface HeightRouting {
  readonly archive: boolean;
  readonly minHeight: number;
  readonly cost: number;
  readonly label: string;
  readonly cacheTtlMs?: number;
  readonly cacheHeight?: number;
}

/**
 * Routing of a read pinned to height `h`. Below the head, the state at a height is
 * final (CometBFT has instant finality), so the answer may be kept long.
 */
export function atHeight(h: number, view: PoolView, fullHistory: number, cost: number, label: string, cache: boolean): HeightRouting {
  const floor = fullFloor(view, fullHistory);
  const archive = floor !== undefined && h < floor;
  if (cache && view.head !== undefined && h < view.head) {
    return { archive, minHeight: h, cost, label, cacheTtlMs: FINAL_TTL_MS, cacheHeight: h };
  }
  return { archive, minHeight: h, cost, label };
}
