// Cosmos SDK gRPC methods the plugin knows by name: the bounded set of metric labels
// for gRPC calls (any other path is labelled "other"), and the few whose request
// message carries the height they read (field 1 of GetBlockByHeight and friends).

const TENDERMINT = 'cosmos.base.tendermint.v1beta1.Service';

const SERVICES: Readonly<Record<string, readonly string[]>> = {
  'cosmos.auth.v1beta1.Query': ['Params', 'Account', 'Accounts', 'AccountInfo', 'ModuleAccounts', 'ModuleAccountByName', 'Bech32Prefix'],
  'cosmos.bank.v1beta1.Query': [
    'Params',
    'Balance',
    'AllBalances',
    'SpendableBalances',
    'SpendableBalanceByDenom',
    'TotalSupply',
    'SupplyOf',
    'DenomMetadata',
    'DenomsMetadata',
    'DenomOwners',
  ],
  [TENDERMINT]: [
    'GetNodeInfo',
    'GetSyncing',
    'GetLatestBlock',
    'GetBlockByHeight',
    'GetLatestValidatorSet',
    'GetValidatorSetByHeight',
    'ABCIQuery',
  ],
  'cosmos.base.node.v1beta1.Service': ['Config', 'Status'],
  'cosmos.staking.v1beta1.Query': [
    'Params',
    'Pool',
    'Validators',
    'Validator',
    'ValidatorDelegations',
    'ValidatorUnbondingDelegations',
    'Delegation',
    'UnbondingDelegation',
    'DelegatorDelegations',
    'DelegatorUnbondingDelegations',
    'Redelegations',
    'DelegatorValidators',
    'DelegatorValidator',
    'HistoricalInfo',
  ],
  'cosmos.distribution.v1beta1.Query': [
    'Params',
    'ValidatorOutstandingRewards',
    'ValidatorCommission',
    'DelegationRewards',
    'DelegationTotalRewards',
    'DelegatorValidators',
    'DelegatorWithdrawAddress',
    'CommunityPool',
  ],
  'cosmos.gov.v1.Query': ['Params', 'Proposal', 'Proposals', 'Vote', 'Votes', 'Deposit', 'Deposits', 'TallyResult'],
  'cosmos.gov.v1beta1.Query': ['Params', 'Proposal', 'Proposals', 'Vote', 'Votes', 'Deposit', 'Deposits', 'TallyResult'],
  'cosmos.mint.v1beta1.Query': ['Params', 'Inflation', 'AnnualProvisions'],
  'cosmos.slashing.v1beta1.Query': ['Params', 'SigningInfo', 'SigningInfos'],
  'cosmos.tx.v1beta1.Service': ['Simulate', 'GetTx', 'BroadcastTx', 'GetTxsEvent', 'GetBlockWithTxs', 'TxDecode', 'TxEncode'],
  'cosmwasm.wasm.v1.Query': [
    'ContractInfo',
    'ContractsByCode',
    'AllContractState',
    'RawContractState',
    'SmartContractState',
    'Code',
    'Codes',
  ],
  'ibc.core.client.v1.Query': ['ClientState', 'ClientStates', 'ConsensusState', 'ClientStatus', 'ClientParams'],
  'ibc.core.channel.v1.Query': [
    'Channel',
    'Channels',
    'ConnectionChannels',
    'PacketCommitment',
    'PacketAcknowledgement',
    'UnreceivedPackets',
  ],
  'ibc.applications.transfer.v1.Query': ['Params', 'DenomTrace', 'DenomTraces', 'EscrowAddress'],
  'grpc.health.v1.Health': ['Check', 'Watch'],
};

/** Every known method path, `/package.Service/Method`. */
export const METHODS: readonly string[] = Object.entries(SERVICES).flatMap(([svc, names]) => names.map((n) => `/${svc}/${n}`));

/** Methods whose request names a height in a varint field: path → field number. */
export const HEIGHT_FIELD: ReadonlyMap<string, number> = new Map([
  [`/${TENDERMINT}/GetBlockByHeight`, 1],
  [`/${TENDERMINT}/GetValidatorSetByHeight`, 1],
]);

export const GET_LATEST_BLOCK = `/${TENDERMINT}/GetLatestBlock`;
export const GET_NODE_INFO = `/${TENDERMINT}/GetNodeInfo`;
export const NODE_STATUS = '/cosmos.base.node.v1beta1.Service/Status';
export const BROADCAST_TX = '/cosmos.tx.v1beta1.Service/BroadcastTx';
