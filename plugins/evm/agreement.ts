// When EVM nodes agree (chains.<name>.consensus): state reads at a fixed block (a
// number, a hash, `earliest`; `latest` is pinned to the served head by the core before
// this is asked) agree when their results are equal; receipts when equal; nonces and gas
// prices are numbers where the highest wins (a node that has seen a newer transaction
// is ahead, not lying). Reads at `pending`, `safe` or `finalized` may rightly differ and
// are not compared.

import { jsonRpcHighest, jsonRpcSame, type AgreementCodec, type AgreementRule, type Call } from 'noderouter/plugin';

/** Compared methods (after the namespace) → the position of their block parameter (-1: none). */
const SAME: ReadonlyMap<string, number> = new Map([
  ['getBalance', 1],
  ['call', 1],
  ['getCode', 1],
  ['getStorageAt', 2],
  ['getTransactionReceipt', -1],
  ['getTransactionByHash', -1],
]);
const HIGHEST: ReadonlyMap<string, number> = new Map([
  ['getTransactionCount', 1],
  ['gasPrice', -1],
  ['maxPriorityFeePerGas', -1],
]);
/** The methods checked by default, in each namespace. */
const DEFAULTS = ['getBalance', 'call', 'getTransactionReceipt', 'getTransactionCount', 'gasPrice'];

const NUMBER = /^0x[0-9a-fA-F]{1,16}$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;
const SAME_RULE = jsonRpcSame();

/** A block parameter naming one block whatever the node's head: a number, a hash, earliest. */
function fixedBlock(v: unknown): boolean {
  if (typeof v === 'string') return v === 'earliest' || NUMBER.test(v) || HASH.test(v);
  if (v !== null && typeof v === 'object') {
    const o = v as { blockNumber?: unknown; blockHash?: unknown };
    return typeof o.blockHash === 'string' ? HASH.test(o.blockHash) : fixedBlock(o.blockNumber);
  }
  return false;
}

export function evmAgreement(namespaces: readonly string[]): AgreementCodec {
  const ours = new Set(namespaces);
  return {
    defaults: namespaces.flatMap((ns) => DEFAULTS.map((m) => `${ns}_${m}`)),
    rule(call: Call): AgreementRule | undefined {
      if (call.kind !== 'jsonrpc') return undefined;
      const i = call.method.indexOf('_');
      if (i < 0 || !ours.has(call.method.slice(0, i))) return undefined;
      const name = call.method.slice(i + 1);
      const params = Array.isArray(call.params) ? (call.params as unknown[]) : [];
      const highest = HIGHEST.get(name);
      if (highest !== undefined) return jsonRpcHighest;
      const at = SAME.get(name);
      if (at === undefined) return undefined;
      return at < 0 || fixedBlock(params[at]) ? SAME_RULE : undefined;
    },
  };
}
