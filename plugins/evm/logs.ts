// eth_getLogs ranges: where a filter's range starts and ends (tags resolved at the
// pool's head), parts of a range that each fit what nodes accept, and one answer made
// from the parts' answers (their log arrays, in block order, under the caller's id).
// What providers answer when a range or its results are too big for them, and the
// range to tell a client to use when the gateway will not cut a call further.

import { memberRaw, withParams, type JsonRpcCall, type SplitPolicy } from 'noderouter/plugin';

// Go nodes read a "0X" prefix as hex too. At most 2^52: heights stay exact JS numbers.
export const HEX = /^0[xX][0-9a-fA-F]{1,13}$/;
// A block number as some node reads a client's: hex with leading zeros (Reth), decimal
// digits (erigon); 66 characters are a block hash to geth, never a number.
const CLIENT_HEX = /^0[xX]0*[0-9a-fA-F]{1,13}$/;
const CLIENT_DECIMAL = /^0*[0-9]{1,15}$/;
export const BLOCK_HASH = /^0[xX][0-9a-fA-F]{64}$/;

/** The height a client's block number means to any node that executes it, or undefined when it is no number. */
export function blockNumberOf(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  if (typeof v !== 'string' || v.length === 66) return undefined;
  if (CLIENT_HEX.test(v)) return parseInt(v, 16);
  return CLIENT_DECIMAL.test(v) ? parseInt(v, 10) : undefined;
}

/**
 * A node refusing a getLogs call as too big (geth, erigon, reth, Alchemy, Infura,
 * QuickNode wordings): the gateway then cuts it in halves.
 */
export const OVERSIZE =
  /exceeds? (the )?max(imum)? (block )?range|block range (is )?too (large|wide|big)|range too (large|wide)|returned more than \d+ results|response size (exceeded|should not)|too many (results|logs)|query timeout exceeded|limit exceeded/i;

export interface LogFilter {
  readonly fromBlock?: unknown;
  readonly toBlock?: unknown;
  readonly blockHash?: unknown;
}

/** A filter's range as block numbers, tags resolved at `head`; undefined when it cannot be known (hash, no head). */
export function rangeOf(f: LogFilter, head: number | undefined): { from: number; to: number } | undefined {
  if (f.blockHash !== undefined) return undefined;
  const at = (v: unknown): number | undefined => {
    if (v === undefined || v === 'latest' || v === 'safe' || v === 'finalized' || v === 'pending') return head;
    if (v === 'earliest') return 0;
    return blockNumberOf(v);
  };
  const from = at(f.fromBlock);
  const to = at(f.toBlock);
  return from === undefined || to === undefined ? undefined : { from, to };
}

const hex = (n: number): string => `0x${n.toString(16)}`;

/**
 * The block range a node's refusal names as its limit (geth/erigon "max block range N",
 * "maximum block range: N", QuickNode "limited to a N range", Alchemy "up to a 2K block range").
 */
const RANGE_LIMIT = /(?:max(?:imum)? (?:block )?range:? ?|limited to an? )(\d[\d,]*)|(\d[\d,]*)(k?) block range/i;

export function rangeLimitIn(refused: string | undefined): number | undefined {
  if (refused === undefined) return undefined;
  const error = memberRaw(refused, 'error');
  const message = error === undefined ? undefined : memberRaw(error, 'message');
  const m = message === undefined ? null : RANGE_LIMIT.exec(message);
  if (m === null) return undefined;
  const n = parseInt((m[1] ?? m[2] ?? '').replace(/,/g, ''), 10) * (m[3] === undefined || m[3] === '' ? 1 : 1000);
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** What a client is told when its range needs more node calls than one call may make: the node's limit, else the parts' size. */
export function rangeAdvice(refused: string | undefined, size: number): string {
  const n = rangeLimitIn(refused) ?? size;
  return `range too large: split it into ranges of ${n} block${n === 1 ? '' : 's'}`;
}

/** The call over [from, to] in parts of at most `size` blocks, in block order. */
function parts(call: JsonRpcCall, filter: LogFilter, from: number, to: number, size: number): SplitPolicy | undefined {
  if (to < from || size < 1) return undefined;
  const calls: JsonRpcCall[] = [];
  for (let a = from; a <= to; a += size) {
    calls.push(withParams(call, [{ ...filter, fromBlock: hex(a), toBlock: hex(Math.min(to, a + size - 1)) }]));
  }
  if (calls.length < 2) return undefined;
  return { calls, join: (answers) => joinLogs(answers, call.id), tooLarge: (refused) => rangeAdvice(refused, size) };
}

/** Parts that each fit `maxRange` blocks ('fit'), or the two halves of the range ('halves'). */
export function splitLogs(call: JsonRpcCall, how: 'fit' | 'halves', maxRange: number, head: number | undefined): SplitPolicy | undefined {
  const filter = (Array.isArray(call.params) ? (call.params as unknown[])[0] : undefined) as LogFilter | undefined;
  if (filter === null || typeof filter !== 'object') return undefined;
  const range = rangeOf(filter, head);
  if (range === undefined) return undefined;
  const span = range.to - range.from + 1;
  return parts(call, filter, range.from, range.to, how === 'fit' ? maxRange : Math.ceil(span / 2));
}

/** The parts' log arrays, concatenated as the nodes sent them. */
function joinLogs(answers: readonly string[], id: string | undefined): string {
  const logs: string[] = [];
  for (const a of answers) {
    const result = memberRaw(a, 'result')?.trim() ?? '[]';
    const inner = result.slice(1, -1).trim();
    if (inner !== '') logs.push(inner);
  }
  return `{"jsonrpc":"2.0","id":${id ?? 'null'},"result":[${logs.join(',')}]}`;
}
