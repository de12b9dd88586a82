// What an EVM node says it serves: its chain id (eth_chainId), its client
// (web3_clientVersion), whether it holds state at block 1 (archive) or only recent state
// (full: its oldest state found by halving the range between block 1 and its head), and
// whether the debug_ and trace_ namespaces answer (a lookup of a transaction that does
// not exist: cheap, and "method not found" only where the namespace is off).

import { nodeRpc as call, type NodeClient, type NodeDescription, type NodeRpcAnswer } from 'noderouter/plugin';
import { HEX } from './logs.js';
import { PRUNED } from './methods.js';

const ZERO_ADDRESS = `0x${'0'.repeat(40)}`;
const ZERO_HASH = `0x${'0'.repeat(64)}`;
/** Heights read while looking for a full node's oldest state, at most (2^40 blocks is more than any chain has). */
const MAX_STEPS = 40;
/** JSON-RPC's "method not found"; some proxies answer a method they refuse as an invalid request. */
const NO_METHOD = new Set([-32601, -32600]);

const hexNumber = (v: unknown): number | undefined => (typeof v === 'string' && HEX.test(v) ? parseInt(v, 16) : undefined);
/** A chain id in decimal, as config writes it (ids may pass 2^53). */
const decimalId = (v: unknown): string | undefined =>
  typeof v === 'string' && /^0x[0-9a-f]{1,64}$/i.test(v) ? BigInt(v).toString() : undefined;

/** Does the namespace answer? Any answer but "no such method" says it does. */
function answers(a: PromiseSettledResult<NodeRpcAnswer>): boolean {
  if (a.status === 'rejected') return false;
  return 'result' in a.value || (!NO_METHOD.has(a.value.error.code) && !/method/i.test(a.value.error.message));
}

/** Does the node hold state at `height`? undefined when its answer says neither. */
async function stateAt(node: NodeClient, ns: string, height: number, timeoutMs: number): Promise<boolean | undefined> {
  const a = await call(node, `${ns}_getBalance`, [ZERO_ADDRESS, `0x${height.toString(16)}`], timeoutMs);
  if ('result' in a) return true;
  return PRUNED.test(a.error.message) ? false : undefined;
}

/** The oldest height with state, between `lo` (none) and `hi` (held). */
async function oldestState(node: NodeClient, ns: string, lo: number, hi: number, timeoutMs: number): Promise<number | undefined> {
  for (let step = 0; hi - lo > 1 && step < MAX_STEPS; step++) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const held = await stateAt(node, ns, mid, timeoutMs);
    if (held === undefined) return undefined;
    if (held) hi = mid;
    else lo = mid;
  }
  return hi - lo === 1 ? hi : undefined;
}

export async function describeEvm(node: NodeClient, ns: string, timeoutMs: number): Promise<NodeDescription> {
  const [chainId, client, low, debug, trace] = await Promise.allSettled([
    call(node, `${ns}_chainId`, [], timeoutMs),
    call(node, 'web3_clientVersion', [], timeoutMs),
    stateAt(node, ns, 1, timeoutMs),
    call(node, 'debug_traceTransaction', [ZERO_HASH], timeoutMs),
    call(node, 'trace_transaction', [ZERO_HASH], timeoutMs),
  ]);
  // A node that answers none of it is down: the probes say so.
  if ([chainId, client, low, debug, trace].every((r) => r.status === 'rejected')) throw new Error('the node answered nothing');
  const id = chainId.status === 'fulfilled' && 'result' in chainId.value ? decimalId(chainId.value.result) : undefined;
  const version = client.status === 'fulfilled' && 'result' in client.value ? client.value.result : undefined;
  const namespaces = [answers(debug) ? 'debug' : '', answers(trace) ? 'trace' : ''].filter((n) => n !== '');
  const d: { -readonly [K in keyof NodeDescription]: NodeDescription[K] } = { namespaces };
  if (id !== undefined) d.chainId = id;
  if (typeof version === 'string' && version !== '') d.client = version.slice(0, 200);
  if (low.status === 'fulfilled' && low.value === true) {
    d.role = 'archive';
    d.earliest = 1;
  } else if (low.status === 'fulfilled' && low.value === false) {
    d.role = 'full';
    const head = await call(node, `${ns}_blockNumber`, [], timeoutMs).then((a) => ('result' in a ? hexNumber(a.result) : undefined));
    if (head !== undefined && head > 1) {
      const earliest = await oldestState(node, ns, 1, head, timeoutMs).catch(() => undefined);
      if (earliest !== undefined) d.earliest = earliest;
    }
  }
  return d;
}
