// The noderouter command: serve, devnet, check-config, keys, accounts, nodes and store,
// one module each. Every command reads the same config file (cli/common.ts). Output that
// scripts read (the new key, the sign-in link) is always the last line; every refusal
// of the control plane exits with its catalogue code's status (2: the caller's mistake).

import { ConfigError } from '../config/load.js';
import { ControlError } from '../control-errors.js';
import { UsageError, parseArgs, type ParsedArgs } from './args.js';
import { accountsCommand } from './accounts.js';
import { checkConfigCommand } from './check-config.js';
import { commandConfig, out } from './common.js';
import { devnetCommand } from './devnet.js';
import { keysCommand } from './keys.js';
import { nodesCommand } from './nodes.js';
import { serveCommand } from './serve.js';
import { storeCommand } from './store.js';

const HELP = `noderouter — API-key gateway for pools of blockchain nodes

Usage:
  noderouter serve [--config FILE] [--devnet]   run the gateway (--devnet: with simulated nodes)
  noderouter devnet [--config FILE]             run only the simulated nodes of the config
  noderouter check-config [FILE]                validate a config file; exit 1 on problems
  noderouter keys create --account A --tier T [--label L] [--chains l1,hub-*]
                         [--archive true|false] [--allow PATTERNS] [--deny PATTERNS] [--expires DATE]
                         [--origins LIST] [--ips LIST] [--referrers LIST] [--contracts LIST] [--user-agents LIST]
  noderouter keys restrict ID|PREFIX [--origins LIST] [--ips LIST] [--referrers LIST] [--contracts LIST]
                         [--user-agents LIST]     where the key may be used from; "*" lifts one
  noderouter keys list [--account A] [--json]
  noderouter keys show ID|PREFIX
  noderouter keys revoke ID|PREFIX
  noderouter keys rotate ID|PREFIX [--grace SECONDS]
  noderouter keys usage ID|PREFIX [--since YYYY-MM-DD] [--by method] [--json]
                                                  usage history per UTC day and chain, or per method
                                                  (latency percentiles); as of the last usage.flushInterval
  noderouter keys export > keys.jsonl             records (hashes, never values) of every key
  noderouter keys import FILE|-                   add or replace those records in this config's store
  noderouter accounts create --name N [--email E] [--tiers free,growth] [--default-tier T] [--adopt-keys]
  noderouter accounts list [--json]
  noderouter accounts token ID|NAME [--ttl 15m]   one-time dashboard sign-in link (last line)
  noderouter accounts disable|enable|delete ID|NAME
  noderouter nodes list [--json] [--admin URL]      every node: hold, rotation, calls in flight, subscriptions
  noderouter nodes cordon|drain CHAIN NODE [--reason TEXT] [--admin URL]
  noderouter nodes uncordon CHAIN NODE [--admin URL]
                         (the running gateway's admin API; token from $NODEROUTER_ADMIN_TOKEN or admin.token)
  noderouter store migrate                        apply the record's schema migrations now (serve applies them too)
  noderouter store migrate --from FILE [--force]  adopt the file store of earlier versions (its key file,
                                                  e.g. data/keys.json): keys, accounts, usage, holds
  noderouter store migrate --from redis://HOST:PORT [--prefix P] [--force]
                                                  adopt the Redis store of earlier versions (P: its old
                                                  store.prefix, default noderouter:)
  noderouter store export [--out FILE]            every row of the record as JSON lines (stdout by default)
  noderouter store import FILE|- [--force]        rows of \`store export\` into this config's record
                         (run them before starting the gateway; rows that differ from the record's
                          refuse the whole write unless --force replaces them; key values never move)
`;

/** Options that take a value: the config, then the keys', the accounts' and the nodes' commands'. */
const VALUED = [
  'config',
  ...['account', 'tier', 'label', 'chains', 'archive', 'allow', 'deny', 'expires', 'grace', 'since', 'by'],
  ...['name', 'email', 'tiers', 'default-tier', 'ttl'],
  ...['origins', 'ips', 'referrers', 'contracts', 'user-agents'],
  ...['admin', 'reason'],
  ...['from', 'prefix', 'out'],
];
const FLAGS = ['devnet', 'json', 'help', 'adopt-keys', 'force'];

const COMMANDS: Readonly<Record<string, (args: ParsedArgs) => Promise<number>>> = {
  serve: serveCommand,
  devnet: devnetCommand,
  'check-config': checkConfigCommand,
  keys: keysCommand,
  accounts: accountsCommand,
  nodes: async (args) => nodesCommand(args, await commandConfig(args), out),
  store: storeCommand,
};

export async function main(argv: readonly string[]): Promise<number> {
  const command = argv[0];
  try {
    const args = parseArgs(argv, VALUED, FLAGS);
    if (command === undefined || command === 'help' || args.options.has('help')) {
      out(HELP);
      return 0;
    }
    const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
    if (run === undefined) throw new UsageError(`unknown command "${command}"`);
    return await run(args);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    // Every refusal of the control plane, by its catalogue code's exit (2: the caller's mistake).
    if (err instanceof ControlError) {
      process.stderr.write(`noderouter: ${err.message}\n`);
      if (err instanceof UsageError) process.stderr.write(`\n${HELP}`);
      return err.exit;
    }
    throw err;
  }
}
