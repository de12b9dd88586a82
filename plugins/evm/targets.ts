// The contracts an EVM call is directed at, for keys restricted to some contracts:
// the `to` of a simulated transaction (eth_call, eth_estimateGas, eth_createAccessList,
// debug_traceCall, trace_call, trace_callMany), the `address` of a log filter
// (eth_getLogs, eth_newFilter, a `logs` subscription) and trace_filter's `toAddress`.
// A call that could reach any contract — no `to` (a deployment), state overrides (any
// code at an allowed address), a filter without addresses, multi-call simulations, a
// signed transaction traced whole — names none (an empty list), which a restricted key
// may not make. Read on demand.
//
// Where each node takes overrides: eth_call, eth_estimateGas, eth_createAccessList
// params[2] (geth, erigon, reth); debug_traceCall params[2].stateOverrides (geth,
// erigon, reth); trace_call params[3] (reth: the overrides; erigon: a trace config
// that may hold them); trace_callMany params[2] (erigon's trace config). A non-empty
// object there reaches anything, whatever its members are called.

import type { Call, TargetReader } from 'noderouter/plugin';

/** The call may reach any contract. */
const ANY: readonly string[] = Object.freeze([]);

const paramsOf = (call: Call): readonly unknown[] | undefined =>
  call.kind === 'jsonrpc' && Array.isArray(call.params) ? (call.params as readonly unknown[]) : undefined;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function hasMembers(v: unknown): boolean {
  if (!isObject(v)) return false;
  for (const _ in v) return true;
  return false;
}

/** A transaction object's `to`, lower-cased; ANY without one (a deployment runs any code). */
function txTo(tx: unknown): readonly string[] {
  if (!isObject(tx) || typeof tx.to !== 'string') return ANY;
  return [tx.to.toLowerCase()];
}

/** Addresses of a filter member (`address`, `toAddress`): one or a list; ANY when absent, empty or unreadable. */
function addresses(v: unknown): readonly string[] {
  if (typeof v === 'string') return [v.toLowerCase()];
  if (!Array.isArray(v) || v.length === 0) return ANY;
  const out: string[] = [];
  for (const a of v) {
    if (typeof a !== 'string') return ANY;
    out.push(a.toLowerCase());
  }
  return out;
}

/** A transaction at params[0]; state overrides at params[overridesAt] make it reach anything. */
function simulated(overridesAt: number, overridesIn?: string): TargetReader {
  return Object.freeze({
    of(call: Call): readonly string[] {
      const p = paramsOf(call);
      if (p === undefined) return ANY;
      const o = p[overridesAt];
      if (overridesIn === undefined ? hasMembers(o) : isObject(o) && hasMembers(o[overridesIn])) return ANY;
      return txTo(p[0]);
    },
  });
}

/** A log filter at params[at]. */
function filterAt(at: number, member: string): TargetReader {
  return Object.freeze({
    of(call: Call): readonly string[] {
      const f = paramsOf(call)?.[at];
      return isObject(f) ? addresses(f[member]) : ANY;
    },
  });
}

const LOGS_FILTER = filterAt(1, 'address');

/** eth_subscribe: only `logs` subscriptions are directed at contracts. */
const SUBSCRIBE: TargetReader = Object.freeze({
  of(call: Call): readonly string[] | undefined {
    const p = paramsOf(call);
    return p?.[0] === 'logs' ? LOGS_FILTER.of(call) : undefined;
  },
});

/** trace_callMany: `[[tx, traceTypes], …]`, every `to`; erigon's trace config at params[2] may override state. */
const CALL_MANY: TargetReader = Object.freeze({
  of(call: Call): readonly string[] {
    const p = paramsOf(call);
    if (p === undefined || hasMembers(p[2])) return ANY;
    const list = p[0];
    if (!Array.isArray(list) || list.length === 0) return ANY;
    const out: string[] = [];
    for (const pair of list) {
      const to = txTo(Array.isArray(pair) ? pair[0] : undefined);
      if (to.length === 0) return ANY;
      out.push(...to);
    }
    return out;
  },
});

const ANYWHERE: TargetReader = Object.freeze({ of: (): readonly string[] => ANY });

/** Readers by method name after the namespace (eth_, evm_ …). */
export const TARGETS: ReadonlyMap<string, TargetReader> = new Map([
  ['call', simulated(2)],
  ['estimateGas', simulated(2)],
  ['createAccessList', simulated(2)],
  ['getLogs', filterAt(0, 'address')],
  ['newFilter', filterAt(0, 'address')],
  ['subscribe', SUBSCRIBE],
  // Several transactions, each with its own state: reach anything.
  ['simulateV1', ANYWHERE],
  ['callMany', ANYWHERE],
  ['callBundle', ANYWHERE],
]);

/** Readers of the debug_ and trace_ methods, by full name. */
export const EXTRA_TARGETS: ReadonlyMap<string, TargetReader> = new Map([
  ['debug_traceCall', simulated(2, 'stateOverrides')],
  ['debug_traceCallMany', ANYWHERE],
  ['trace_call', simulated(3)],
  ['trace_callMany', CALL_MANY],
  // A signed transaction, executed and traced: its `to` is inside the RLP, not read here.
  ['trace_rawTransaction', ANYWHERE],
  ['trace_filter', filterAt(0, 'toAddress')],
]);
