// How each EVM call is routed, as data for the core: archive or not (by where its block
// parameter points), cost, label, cache lifetime, and the policies that keep a dApp on
// one chain — reads at `latest` held at the served head (pinned to its number when a
// node is ahead), head reads never ahead of it, filters kept on their node, transactions
// sent once to every full node and read back from a node that accepted them, getLogs
// within node limits, and hedging for reads; the contracts a call targets (targets.ts);
// and which calls full nodes hold all of (`fullHolds`: the head, a number within
// `fullHistory`, no history at all), the only ones an archive node may answer for a key
// without archive access. A block hash, a transaction or a filter may reach further back.

import {
  FINAL_TTL_MS,
  globMatcher,
  isJsonRpcCall,
  memberRaw,
  methodTable,
  splitMethod,
  withMemberRaw,
  withParams,
  type Call,
  type CostTable,
  type HeadReader,
  type JsonRpcCall,
  type LatestPolicy,
  type PoolView,
  type Routing,
  type TargetReader,
} from 'noderouter/plugin';
import { BLOCK_HASH, blockNumberOf, HEX, rangeOf, type LogFilter } from './logs.js';
import { BLOCK_PARAM, EXTRA_NAMESPACES, KEYSTORE, KNOWN, NODE_ADMIN, type Kind } from './methods.js';
import { EXTRA_TARGETS, TARGETS } from './targets.js';

/** getLogs costs its base cost per this many blocks of range. */
const LOG_BLOCKS_PER_COST = 1000;

export interface RoutingOptions {
  readonly namespaces: readonly string[];
  readonly fullHistory: number;
  readonly blockTimeMs: number;
  readonly finalityDepth: number;
  readonly costs: CostTable;
  /** Node administration and keystore methods the operator allowed on this chain (patterns). */
  readonly allowMethods: readonly string[];
  /** Blocks one getLogs call may span (0: no limit). */
  readonly getLogsMaxRange: number;
  /** Over the limit: split into parts that fit (true), or refuse (false). */
  readonly getLogsSplit: boolean;
}

/** Node administration and the node's keystore, never served unless the operator allows it (options.allowMethods). */
const NOT_SERVED: Routing = Object.freeze({
  archive: false,
  cost: 0,
  label: 'other',
  refuse: 'Node administration methods are not served on this endpoint',
});

/**
 * Where a block parameter points. Numbers carry their height; the rest are shared
 * constants. `unread`: nothing the gateway can place (no node we know executes it the
 * same way, or none at all): routed like a hash, never taken as held by full nodes.
 */
type BlockRef = 'latest' | 'tagged' | 'pending' | 'earliest' | 'hash' | 'unread' | number;

function blockRef(v: unknown): BlockRef {
  // An absent block parameter means "latest".
  if (v === undefined) return 'latest';
  if (typeof v === 'string') {
    if (v === 'latest') return 'latest';
    if (v === 'pending') return 'pending';
    if (v === 'earliest') return 'earliest';
    if (v === 'safe' || v === 'finalized') return 'tagged';
    if (BLOCK_HASH.test(v)) return 'hash';
  }
  const n = blockNumberOf(v);
  if (n !== undefined) return n;
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    // EIP-1898: {blockHash} cannot be placed; {blockNumber} is read like a number.
    const o = v as { blockNumber?: unknown; blockHash?: unknown };
    if (o.blockHash !== undefined) return 'hash';
    if (o.blockNumber !== undefined) return blockRef(o.blockNumber);
  }
  return 'unread';
}

const hex = (n: number): string => `0x${n.toString(16)}`;

/** Reads at a tag the call cannot be pinned from (safe, finalized, gas price): held at the served head by routing alone. */
const HELD: LatestPolicy = Object.freeze({});

/** eth_blockNumber: never above the served head (the core rewrites a higher answer). */
const HEAD_READ: LatestPolicy = Object.freeze({
  head: Object.freeze({
    height(answer: string): number | undefined {
      const r = memberRaw(answer, 'result');
      return r !== undefined && HEX.test(r.slice(1, -1)) ? parseInt(r.slice(1, -1), 16) : undefined;
    },
    withHeight: (answer: string, h: number): string => withMemberRaw(answer, 'result', `"${hex(h)}"`),
  } satisfies HeadReader),
});

/** A call whose block parameter at `at` is `latest` (or absent), pinned to a number. */
function pinParam(at: number): LatestPolicy {
  return Object.freeze({
    pin<C extends Call>(call: C, height: number): C {
      if (!isJsonRpcCall(call) || !Array.isArray(call.params)) return call;
      const params = [...(call.params as unknown[])];
      if (params.length < at) return call;
      params[at] = hex(height);
      return withParams(call, params);
    },
  });
}

/** A getLogs filter whose range ends (or starts) at `latest`, pinned to a number. */
const PIN_LOGS: LatestPolicy = Object.freeze({
  pin<C extends Call>(call: C, height: number): C {
    if (!isJsonRpcCall(call) || !Array.isArray(call.params)) return call;
    const f = (call.params as unknown[])[0] as Record<string, unknown> | undefined;
    if (f === null || typeof f !== 'object') return call;
    const pinned = { ...f };
    if (f.fromBlock === undefined || f.fromBlock === 'latest') pinned.fromBlock = hex(height);
    if (f.toBlock === undefined || f.toBlock === 'latest') pinned.toBlock = hex(height);
    return withParams(call, [pinned, ...(call.params as unknown[]).slice(1)]);
  },
});

/** What is known of one method, resolved once per chain for the known ones. */
interface MethodInfo {
  readonly label: string;
  readonly cost: number;
  readonly kind: Kind;
  /** Index of the block parameter (kind 'block'), else -1. */
  readonly at: number;
  /** Pinning a `latest` block parameter (kind 'block'). */
  readonly pin: LatestPolicy | undefined;
  /** The contracts the call is directed at, when it is directed at some. */
  readonly targets: TargetReader | undefined;
  /** The routing of a method routed by kind alone, built once: classify allocates none. */
  readonly fixed: Routing | undefined;
}

/** The chain's classify: everything per method is resolved once, here. */
export function evmRouting(o: RoutingOptions): (call: Call<undefined>, view: PoolView) => Routing {
  const { fullHistory, blockTimeMs, finalityDepth, costs } = o;
  const fixed = (kind: Kind, name: string, cost: number, label: string, targets: TargetReader | undefined): Routing | undefined => {
    switch (kind) {
      case 'archive':
        return Object.freeze({ archive: true, cost, label, targets });
      case 'constant':
        return Object.freeze({ archive: false, fullHolds: true, cost, label, cacheTtlMs: Infinity, hedge: true });
      case 'head':
        return Object.freeze({
          archive: false,
          fullHolds: true,
          cost,
          label,
          cacheTtlMs: blockTimeMs,
          hedge: true,
          latest: name === 'blockNumber' ? HEAD_READ : HELD,
        });
      case 'hash':
        return Object.freeze({ archive: false, cost, label, cacheTtlMs: FINAL_TTL_MS, hedge: true });
      case 'plain':
        return Object.freeze({ archive: false, fullHolds: true, cost, label, targets });
      case 'submit':
        return Object.freeze({ archive: false, fullHolds: true, cost, label, retry: 'never', broadcast: true });
      case 'filter-new':
        return Object.freeze({ archive: false, cost, label, targets, state: Object.freeze({ role: 'create' }) });
      default:
        return undefined;
    }
  };
  const closed = globMatcher([...NODE_ADMIN, ...o.namespaces.flatMap((ns) => KEYSTORE.map((name) => `${ns}_${name}`))]);
  const allowed = globMatcher(o.allowMethods);
  const refused = (method: string): boolean => closed(method) && !allowed(method);
  const info = (method: string, name: string, kind: Kind, targets: TargetReader | undefined): MethodInfo => {
    const cost = costs.of(method, name);
    const at = BLOCK_PARAM.get(name) ?? -1;
    const pin = at < 0 ? undefined : pinParam(at);
    // A known method may be refused too (eth_sendTransaction); allowed, it is routed as its kind says.
    const routed = refused(method) ? NOT_SERVED : fixed(kind, name, cost, method, targets);
    return { label: method, cost, kind, at, pin, targets, fixed: routed };
  };
  const known = methodTable(o.namespaces, KNOWN.keys(), (m, _ns, name) => info(m, name, KNOWN.get(name) ?? 'plain', TARGETS.get(name)));
  for (const [ns, names] of EXTRA_NAMESPACES) {
    for (const [name, kind] of names) known.set(`${ns}_${name}`, info(`${ns}_${name}`, name, kind, EXTRA_TARGETS.get(`${ns}_${name}`)));
  }

  /** Unknown methods are the main path: ordinary, labelled "other"; debug_/trace_ need archive. */
  const unknown = (method: string): Routing => {
    if (refused(method)) return NOT_SERVED;
    const [ns, name] = splitMethod(method);
    const routing: Routing = { archive: ns === 'debug' || ns === 'trace', cost: costs.of(method, name), label: 'other' };
    const targets = EXTRA_TARGETS.get(method) ?? (o.namespaces.includes(ns) ? TARGETS.get(name) : undefined);
    return targets === undefined ? routing : { ...routing, targets };
  };

  /** Is this reference older than what full nodes keep? Numbers are ordinary before the first probe. */
  const old = (ref: BlockRef, head: number | undefined): boolean =>
    ref === 'earliest' || (typeof ref === 'number' && head !== undefined && ref < head - fullHistory);

  /** Do full nodes hold this reference? The head and tags do, numbers within fullHistory once a head is known; a hash may be anywhere. */
  const held = (ref: BlockRef, head: number | undefined): boolean =>
    ref === 'latest' || ref === 'tagged' || ref === 'pending' || (typeof ref === 'number' && head !== undefined && !old(ref, head));

  /**
   * A read at a block: at or below the finalized height (head minus finalityDepth) it is
   * final; above it, or at a tag, it holds about a block time, and reads at a tag are held
   * at the served head; pending and future blocks are never kept.
   */
  const atBlock = (
    archive: boolean,
    cost: number,
    label: string,
    ref: BlockRef,
    head: number | undefined,
    pin: LatestPolicy | undefined,
    targets: TargetReader | undefined,
    fullHolds: boolean,
  ): Routing => {
    if (ref === 'pending') return { archive, fullHolds, cost, label, hedge: true, targets };
    if (ref === 'latest') return { archive, fullHolds, cost, label, cacheTtlMs: blockTimeMs, hedge: true, latest: pin ?? HELD, targets };
    if (ref === 'tagged') return { archive, fullHolds, cost, label, cacheTtlMs: blockTimeMs, hedge: true, latest: HELD, targets };
    if (ref === 'hash' || ref === 'earliest') return { archive, fullHolds, cost, label, cacheTtlMs: FINAL_TTL_MS, hedge: true, targets };
    if (ref === 'unread') return { archive, fullHolds, cost, label, hedge: true, targets };
    if (head === undefined || ref > head) return { archive, fullHolds, cost, label, hedge: true, targets };
    const cacheTtlMs = ref <= head - finalityDepth ? FINAL_TTL_MS : blockTimeMs;
    return { archive, fullHolds, cost, label, cacheTtlMs, cacheHeight: ref, hedge: true, targets };
  };

  const logs = (m: MethodInfo, params: readonly unknown[] | undefined, head: number | undefined): Routing => {
    const filter = params?.[0] as LogFilter | undefined;
    const { targets } = m;
    if (filter === null || typeof filter !== 'object') return { archive: false, cost: m.cost, label: m.label, targets };
    if (filter.blockHash !== undefined)
      return { archive: false, cost: m.cost, label: m.label, cacheTtlMs: FINAL_TTL_MS, hedge: true, targets };
    const range = rangeOf(filter, head);
    const span = range === undefined ? 1 : Math.max(1, range.to - range.from + 1);
    // A wide range costs more: the base cost per thousand blocks.
    const cost = m.cost * Math.max(1, Math.ceil(span / LOG_BLOCKS_PER_COST));
    // The lower bound decides where the range starts; the upper one how long the answer holds.
    const toRef = blockRef(filter.toBlock);
    const fromRef = blockRef(filter.fromBlock);
    const routing = atBlock(
      old(fromRef, head),
      cost,
      m.label,
      toRef,
      head,
      toRef === 'latest' || fromRef === 'latest' ? PIN_LOGS : undefined,
      targets,
      held(fromRef, head) && held(toRef, head),
    );
    const max = o.getLogsMaxRange;
    if (max === 0 || range === undefined || span <= max) return routing;
    if (o.getLogsSplit) return { ...routing, split: true };
    return { ...routing, invalid: `eth_getLogs spans ${span} blocks; this endpoint answers at most ${max} blocks per call` };
  };

  /** The first param as raw JSON: a filter id or a transaction hash. */
  const firstParam = (call: JsonRpcCall<undefined>): string =>
    JSON.stringify(Array.isArray(call.params) ? (call.params as unknown[])[0] : null);

  return (call, view) => {
    const m = known.get(call.method);
    if (m === undefined) return unknown(call.method);
    if (m.fixed !== undefined) return m.fixed;
    if (call.kind !== 'jsonrpc') return unknown(call.method);
    const { cost, label } = m;
    switch (m.kind) {
      case 'logs':
        return logs(m, Array.isArray(call.params) ? call.params : undefined, view.head);
      case 'filter-use':
        return { archive: false, cost, label, state: { role: 'use', id: firstParam(call) } };
      case 'filter-drop':
        return { archive: false, cost, label, state: { role: 'use', id: firstParam(call), release: true } };
      case 'tx-read':
        return { archive: false, cost, label, hedge: true, after: firstParam(call) };
      default: {
        // kind 'block'
        if (!Array.isArray(call.params)) return { archive: false, cost, label, targets: m.targets };
        const ref = blockRef((call.params as readonly unknown[])[m.at]);
        return atBlock(old(ref, view.head), cost, label, ref, view.head, m.pin, m.targets, held(ref, view.head));
      }
    }
  };
}
