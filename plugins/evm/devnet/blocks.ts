// What a simulated EVM node reads off the chain: block parameters resolved against its
// head, blocks and headers (hashes that are their headers' keccak-256, as on a real
// chain, so answer checks pass on honest nodes), and logs (the devnet's own, about one block in four) with
// geth's filter matching, and the getLogs answer with the limits providers put on it.

import { hexOf, seeded, type BlockHasher, type NodeView, type RpcError, type RpcOutcome, type SimChain } from 'noderouter/devnet';
import { headerHash } from '../verify/header.js';
import { toHex } from '../verify/hex.js';
import { orderedTrieRoot } from '../verify/trie.js';
import { gasOf } from './txs.js';

export const ZERO32 = `0x${'0'.repeat(64)}`;
/** keccak-256 of the RLP of an empty list (no uncles), of an empty trie, and sha256 of no requests (EIP-7685). */
const EMPTY_UNCLES = '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347';
const EMPTY_ROOT = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
const EMPTY_REQUESTS = '0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
export const LOG_ADDRESS = '0x00000000000000000000000000000000000000aa';
/** Like Infura and Alchemy: a query matching more logs than this is refused. */
const MAX_LOGS = 10_000;
const HEX_NUMBER = /^0[xX][0-9a-fA-F]+$/;

export const BAD_CRITERIA: RpcError = {
  code: -32602,
  message: 'invalid argument 0: json: cannot unmarshal into Go value of type filters.FilterCriteria',
};

export type Resolved = { height: number } | { error: RpcError } | { missing: true };
export type Log = Record<string, unknown>;

export function headerNotFound(): RpcError {
  return { code: -32000, message: 'header not found' };
}

/** Resolve a block parameter against this node; `state` reads are pruned differently. */
export function resolve(v: unknown, node: NodeView): Resolved {
  const head = node.height();
  let n: number;
  if (v === undefined || v === null || v === 'latest' || v === 'pending') n = head;
  else if (v === 'safe') n = Math.max(1, head - 32);
  else if (v === 'finalized') n = Math.max(1, head - 64);
  else if (v === 'earliest') n = 1;
  else if (typeof v === 'string' && HEX_NUMBER.test(v)) n = parseInt(v, 16);
  else if (typeof v === 'object') {
    const o = v as { blockNumber?: unknown; blockHash?: unknown };
    if (typeof o.blockHash === 'string') {
      const h = node.chain.heightOf(o.blockHash);
      if (h === undefined || h > head) return { missing: true };
      n = h;
    } else return resolve(o.blockNumber, node);
  } else return { error: { code: -32602, message: 'invalid block parameter' } };
  if (n > head) return { missing: true };
  return { height: n };
}

/** The header of the block at `n`, whose parent has `parentHash`: a Prague header, every fork's fields. */
export function header(chain: SimChain, n: number, parentHash: string): Record<string, unknown> {
  const txs = chain.txsAt(n);
  let gasUsed = 0n;
  for (const t of txs) gasUsed += gasOf(t.bytes);
  const seed = chain.seed(n);
  return {
    parentHash,
    sha3Uncles: EMPTY_UNCLES,
    miner: '0x0000000000000000000000000000000000000000',
    stateRoot: `0xaa${seed.slice(4)}`,
    transactionsRoot: txs.length === 0 ? EMPTY_ROOT : toHex(orderedTrieRoot(txs.map((t) => t.bytes))),
    receiptsRoot: EMPTY_ROOT,
    logsBloom: `0x${'0'.repeat(512)}`,
    difficulty: '0x0',
    number: hexOf(n),
    gasLimit: '0x1c9c380',
    gasUsed: hexOf(gasUsed),
    timestamp: hexOf(chain.time(n)),
    extraData: '0x',
    mixHash: `0xcc${seed.slice(4)}`,
    nonce: '0x0000000000000000',
    baseFeePerGas: '0x3b9aca00',
    withdrawalsRoot: EMPTY_ROOT,
    blobGasUsed: '0x0',
    excessBlobGas: '0x0',
    parentBeaconBlockRoot: `0xbe${seed.slice(4)}`,
    requestsHash: EMPTY_REQUESTS,
  };
}

/** The devnet's EVM block hashes: keccak-256 of the RLP header, as a real chain's. */
export function blockHasher(chain: SimChain): BlockHasher {
  return (n, parentHash) => toHex(headerHash(header(chain, n, parentHash)));
}

/**
 * A block; `transactions` is what the node's pool reads of it (hashes, or whole
 * transactions). Under the lie fault a header field is altered and the hash kept, so
 * the hash is not the header's.
 */
export function block(node: NodeView, n: number, transactions: unknown[]): Record<string, unknown> {
  const c = node.chain;
  const fields = header(c, n, c.parentHash(n));
  if (node.lying()) fields.stateRoot = `0x11${c.seed(n).slice(4)}`;
  return { ...fields, hash: c.hash(n), totalDifficulty: '0x0', size: '0x220', transactions, uncles: [], withdrawals: [] };
}

/** The head of a block as newHeads pushes it (the block without its transactions). */
export function headerOf(fullBlock: Record<string, unknown>): Record<string, unknown> {
  const { transactions: _t, uncles: _u, size: _s, totalDifficulty: _d, withdrawals: _w, ...rest } = fullBlock;
  return rest;
}

/** The devnet's logs of one block: one log in about every fourth block, from one contract. */
export function logsAt(node: NodeView, h: number): Log[] {
  if (seeded(`${node.chain.network}:log:${h}`, 4) !== 0) return [];
  return [
    {
      address: LOG_ADDRESS,
      topics: [ZERO32],
      data: '0x',
      blockNumber: hexOf(h),
      blockHash: node.chain.hash(h),
      transactionHash: node.chain.hash(h).replace(/^0x../, '0xbb'),
      transactionIndex: '0x0',
      logIndex: '0x0',
      removed: false,
    },
  ];
}

/** geth's log filter: addresses (any of), and topics by position (null: any; a list: any of). */
export type LogMatcher = (log: Log) => boolean;

function lowerList(v: unknown): string[] | undefined | 'bad' {
  if (v === undefined || v === null) return undefined;
  const list = Array.isArray(v) ? (v as unknown[]) : [v];
  if (!list.every((a) => typeof a === 'string')) return 'bad';
  return list.map((a) => a.toLowerCase());
}

export function logMatcher(filter: { address?: unknown; topics?: unknown }): LogMatcher | RpcError {
  const addresses = lowerList(filter.address);
  if (addresses === 'bad') return { code: -32602, message: 'invalid argument 0: invalid address' };
  const positions = filter.topics === undefined || filter.topics === null ? [] : filter.topics;
  if (!Array.isArray(positions)) return { code: -32602, message: 'invalid argument 0: invalid topics' };
  const topics = (positions as unknown[]).map(lowerList);
  if (topics.includes('bad')) return { code: -32602, message: 'invalid argument 0: invalid topic(s)' };
  return (log) => {
    if (addresses !== undefined && addresses.length > 0 && !addresses.includes(String(log.address))) return false;
    const logTopics = log.topics as string[];
    if (topics.length > logTopics.length) return false;
    return topics.every(
      (wanted, i) => wanted === undefined || wanted === 'bad' || wanted.length === 0 || wanted.includes(logTopics[i] as string),
    );
  };
}

/** Matching logs of heights from..to, or the error providers give for too many. */
export function logsBetween(node: NodeView, from: number, to: number, match: LogMatcher): RpcOutcome {
  const logs: Log[] = [];
  for (let h = from; h <= to; h++) {
    for (const log of logsAt(node, h)) if (match(log)) logs.push(log);
    if (logs.length > MAX_LOGS) return { error: { code: -32005, message: `query returned more than ${MAX_LOGS} results` } };
  }
  return { result: logs };
}

/** eth_getLogs (and eth_getFilterLogs): a block range or one block by hash, within the node's range limit. */
export function queryLogs(
  filter: { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown },
  match: LogMatcher,
  node: NodeView,
): RpcOutcome {
  const byHash = filter.blockHash !== undefined && filter.blockHash !== null;
  const from = byHash ? resolve({ blockHash: filter.blockHash }, node) : resolve(filter.fromBlock ?? 'latest', node);
  const to = byHash ? from : resolve(filter.toBlock ?? 'latest', node);
  if ('error' in from) return { error: from.error };
  if ('error' in to) return { error: to.error };
  if ('missing' in from) return { result: [] };
  const last = 'missing' in to ? node.height() : to.height;
  if (last < from.height) return { error: { code: -32000, message: 'invalid block range params' } };
  const limit = node.maxLogsRange();
  if (limit !== undefined && last - from.height + 1 > limit) {
    return { error: { code: -32005, message: `query exceeds max block range ${limit}` } };
  }
  if (from.height < node.earliest()) return { error: headerNotFound() };
  return logsBetween(node, from.height, last, match);
}
