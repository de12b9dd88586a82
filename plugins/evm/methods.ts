// The EVM method tables: where each method carries its block parameter, how each
// known method is routed and cached, and the words of a pruned-state answer. Names
// are the part after the namespace; the known set bounds the metric labels.

/**
 * How a method is routed: by block parameter, by getLogs range, or by kind alone;
 * filters kept on the node that made them; reads of a transaction sent first to the
 * nodes that accepted it.
 */
export type Kind =
  | 'plain'
  | 'archive'
  | 'constant'
  | 'head'
  | 'hash'
  | 'logs'
  | 'block'
  | 'submit'
  | 'filter-new'
  | 'filter-use'
  | 'filter-drop'
  | 'tx-read';

/** Position of the block parameter, by method name after the namespace. */
export const BLOCK_PARAM: ReadonlyMap<string, number> = new Map([
  ['getBalance', 1],
  ['getCode', 1],
  ['getTransactionCount', 1],
  ['call', 1],
  ['estimateGas', 1],
  ['createAccessList', 1],
  ['getStorageAt', 2],
  ['getProof', 2],
  ['getBlockByNumber', 0],
  ['getBlockTransactionCountByNumber', 0],
  ['getUncleCountByBlockNumber', 0],
  ['getTransactionByBlockNumberAndIndex', 0],
  ['getUncleByBlockNumberAndIndex', 0],
  ['getBlockReceipts', 0],
  // The newest block of the range.
  ['feeHistory', 1],
]);

/** Known methods of the configured namespaces (eth, evm, …), after the namespace. */
export const KNOWN: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ...[...BLOCK_PARAM.keys()].map((name): [string, Kind] => [name, 'block']),
  ['chainId', 'constant'],
  ['blockNumber', 'head'],
  ['gasPrice', 'head'],
  ['maxPriorityFeePerGas', 'head'],
  ['blobBaseFee', 'head'],
  // Hash-addressed: never changes; the pruned answer of a full node goes on to archive.
  ['getBlockByHash', 'hash'],
  ['getBlockTransactionCountByHash', 'hash'],
  ['getUncleCountByBlockHash', 'hash'],
  ['getTransactionByBlockHashAndIndex', 'hash'],
  ['getUncleByBlockHashAndIndex', 'hash'],
  ['getLogs', 'logs'],
  // A transaction is sent once: a node that may have taken it is never asked again.
  ['sendRawTransaction', 'submit'],
  ['sendTransaction', 'submit'],
  ['newFilter', 'filter-new'],
  ['newBlockFilter', 'filter-new'],
  ['newPendingTransactionFilter', 'filter-new'],
  ['getFilterChanges', 'filter-use'],
  ['getFilterLogs', 'filter-use'],
  ['uninstallFilter', 'filter-drop'],
  ['getTransactionByHash', 'tx-read'],
  ['getTransactionReceipt', 'tx-read'],
  ...['syncing', 'accounts', 'coinbase', 'mining', 'hashrate', 'protocolVersion', 'subscribe', 'unsubscribe'].map(
    (name): [string, Kind] => [name, 'plain'],
  ),
]);

const archive = (names: string[]): Array<[string, Kind]> => names.map((n) => [n, 'archive']);

/** Namespaces every EVM chain answers to as themselves, with their known methods. */
export const EXTRA_NAMESPACES: ReadonlyMap<string, ReadonlyMap<string, Kind>> = new Map([
  [
    'net',
    new Map<string, Kind>([
      ['version', 'constant'],
      ['listening', 'plain'],
      ['peerCount', 'plain'],
    ]),
  ],
  [
    'web3',
    new Map<string, Kind>([
      ['clientVersion', 'plain'],
      ['sha3', 'plain'],
    ]),
  ],
  // Tracing re-executes blocks: it needs the state an archive node keeps.
  [
    'debug',
    new Map(
      archive([
        'traceTransaction',
        'traceCall',
        'traceBlock',
        'traceBlockByNumber',
        'traceBlockByHash',
        'getRawTransaction',
        'getRawReceipts',
        'getRawBlock',
        'getRawHeader',
        'storageRangeAt',
        'accountRange',
        'getBadBlocks',
      ]),
    ),
  ],
  [
    'trace',
    new Map(
      archive([
        'block',
        'transaction',
        'filter',
        'get',
        'call',
        'callMany',
        'rawTransaction',
        'replayTransaction',
        'replayBlockTransactions',
      ]),
    ),
  ],
]);

/**
 * What nodes say when they lack the state a call needs: geth ("missing trie node",
 * "header not found", "historical state … is not available", "state histories
 * haven't been fully indexed yet"), erigon and reth ("pruned", "old data not
 * available", "required historical state unavailable"), nethermind and op-geth
 * ("BlockOutOfRangeError", "distance to target block exceeds maximum").
 */
export const PRUNED =
  /missing trie node|header not found|BlockOutOfRange|historical state|is not available|pruned|state histories haven't been fully indexed|required historical state unavailable|old data not available|distance to target block exceeds maximum/i;

/**
 * Methods that administer the node rather than read the chain (geth, erigon, reth,
 * nethermind): peers, accounts and keys, mining, light-client serving, the consensus
 * engine API, and the debug_ methods that change the node, profile it, or read or
 * write files on its host (debug_traceBlockFromFile reads a path the client names and
 * its error tells whether it exists; debug_standardTrace*ToFile and the profile
 * writers write files). Refused unless allowed per chain (options.allowMethods).
 */
export const NODE_ADMIN: readonly string[] = [
  'admin_*',
  'personal_*',
  'miner_*',
  'clique_*',
  'les_*',
  'engine_*',
  'parity_*',
  'debug_*File',
  'debug_set*',
  'debug_start*',
  'debug_stop*',
  'debug_write*',
  'debug_*Profile',
  'debug_goTrace',
  'debug_freeOSMemory',
  'debug_chaindb*',
  'debug_db*',
  'debug_verbosity',
  'debug_vmodule',
  'debug_backtraceAt',
  'debug_stacks',
  'debug_memStats',
  'debug_gcStats',
];

/**
 * Methods of the node's keystore, after the namespace (eth_sign …): they sign with keys
 * the node holds, and eth_sendTransaction would then be sent to every full node. Refused
 * unless allowed per chain. eth_accounts stays served: it lists addresses (public
 * anyway, usually none) and libraries ask for it.
 */
export const KEYSTORE: readonly string[] = ['sign', 'signTransaction', 'signTypedData*', 'sendTransaction'];
