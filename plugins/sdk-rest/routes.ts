// Cosmos SDK REST route templates, the bounded set of metric labels for REST calls.
// A path is matched segment by segment against a trie built once at load; `{…}`
// matches any one segment, and a literal segment wins over it (blocks/latest).

/** Routes below the SDK prefix (`/cosmos` on real nodes, `/sdk` in the spec). */
export const ROUTES: readonly string[] = [
  '/auth/v1beta1/params',
  '/auth/v1beta1/accounts',
  '/auth/v1beta1/accounts/{address}',
  '/auth/v1beta1/module_accounts',
  '/auth/v1beta1/bech32',
  '/bank/v1beta1/params',
  '/bank/v1beta1/balances/{address}',
  '/bank/v1beta1/balances/{address}/by_denom',
  '/bank/v1beta1/spendable_balances/{address}',
  '/bank/v1beta1/supply',
  '/bank/v1beta1/supply/by_denom',
  '/bank/v1beta1/denoms_metadata',
  '/bank/v1beta1/denoms_metadata/{denom}',
  '/base/tendermint/v1beta1/blocks/latest',
  '/base/tendermint/v1beta1/blocks/{height}',
  '/base/tendermint/v1beta1/validatorsets/latest',
  '/base/tendermint/v1beta1/validatorsets/{height}',
  '/base/tendermint/v1beta1/node_info',
  '/base/tendermint/v1beta1/syncing',
  '/base/tendermint/v1beta1/abci_query',
  '/base/node/v1beta1/config',
  '/base/node/v1beta1/status',
  '/staking/v1beta1/params',
  '/staking/v1beta1/pool',
  '/staking/v1beta1/validators',
  '/staking/v1beta1/validators/{validator_addr}',
  '/staking/v1beta1/validators/{validator_addr}/delegations',
  '/staking/v1beta1/validators/{validator_addr}/delegations/{delegator_addr}',
  '/staking/v1beta1/validators/{validator_addr}/unbonding_delegations',
  '/staking/v1beta1/delegations/{delegator_addr}',
  '/staking/v1beta1/delegators/{delegator_addr}/unbonding_delegations',
  '/staking/v1beta1/delegators/{delegator_addr}/redelegations',
  '/staking/v1beta1/delegators/{delegator_addr}/validators',
  '/staking/v1beta1/historical_info/{height}',
  '/distribution/v1beta1/params',
  '/distribution/v1beta1/community_pool',
  '/distribution/v1beta1/delegators/{delegator_address}/rewards',
  '/distribution/v1beta1/delegators/{delegator_address}/rewards/{validator_address}',
  '/distribution/v1beta1/delegators/{delegator_address}/validators',
  '/distribution/v1beta1/delegators/{delegator_address}/withdraw_address',
  '/distribution/v1beta1/validators/{validator_address}/commission',
  '/distribution/v1beta1/validators/{validator_address}/outstanding_rewards',
  '/gov/v1beta1/proposals',
  '/gov/v1beta1/proposals/{proposal_id}',
  '/gov/v1beta1/proposals/{proposal_id}/votes',
  '/gov/v1beta1/proposals/{proposal_id}/tally',
  '/gov/v1beta1/params/{params_type}',
  '/gov/v1/proposals',
  '/gov/v1/proposals/{proposal_id}',
  '/gov/v1/proposals/{proposal_id}/votes',
  '/gov/v1/proposals/{proposal_id}/tally',
  '/gov/v1/params/{params_type}',
  '/mint/v1beta1/params',
  '/mint/v1beta1/inflation',
  '/mint/v1beta1/annual_provisions',
  '/slashing/v1beta1/params',
  '/slashing/v1beta1/signing_infos',
  '/slashing/v1beta1/signing_infos/{cons_address}',
  '/upgrade/v1beta1/current_plan',
  '/upgrade/v1beta1/applied_plan/{name}',
  '/tx/v1beta1/txs',
  '/tx/v1beta1/txs/{hash}',
  '/tx/v1beta1/txs/block/{height}',
  '/tx/v1beta1/simulate',
  '/tx/v1beta1/decode',
  '/tx/v1beta1/encode',
];

interface Trie {
  readonly exact: Map<string, Trie>;
  wild: Trie | undefined;
  /** Index into ROUTES of the route ending here, else -1. */
  route: number;
}

const node = (): Trie => ({ exact: new Map(), wild: undefined, route: -1 });

const ROOT: Trie = node();
ROUTES.forEach((template, index) => {
  let at = ROOT;
  for (const seg of template.split('/').slice(1)) {
    if (seg.startsWith('{')) at = at.wild ??= node();
    else {
      let next = at.exact.get(seg);
      if (next === undefined) at.exact.set(seg, (next = node()));
      at = next;
    }
  }
  at.route = index;
});

function walk(at: Trie, path: string, from: number): number {
  if (from === path.length) return at.route;
  const slash = path.indexOf('/', from + 1);
  const end = slash < 0 ? path.length : slash;
  if (end === from + 1) return -1; // an empty segment (`//`, trailing `/`)
  const next = at.exact.get(path.slice(from + 1, end));
  if (next !== undefined) {
    const r = walk(next, path, end);
    if (r >= 0) return r;
  }
  return at.wild === undefined ? -1 : walk(at.wild, path, end);
}

/** Index into ROUTES of the route `path` takes from index `from` (a '/'), or -1. */
export function matchRoute(path: string, from: number): number {
  return walk(ROOT, path, from);
}
