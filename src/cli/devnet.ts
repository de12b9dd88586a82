// `noderouter devnet`: only the simulated nodes of the config, until a signal.

import type { ParsedArgs } from './args.js';
import { commandConfig, out } from './common.js';

export async function devnetCommand(args: ParsedArgs): Promise<number> {
  const config = await commandConfig(args);
  const { startConfigDevnet } = await import('../devnet/from-config.js');
  const devnet = await startConfigDevnet(config);
  out(`devnet running: ${devnet.nodes.size} nodes${devnet.controlUrl === undefined ? '' : `, control ${devnet.controlUrl}`}`);
  for (const n of devnet.nodes.values()) out(`  ${n.name.padEnd(22)} ${n.family.padEnd(9)} ${n.role.padEnd(8)} ${n.url}`);
  const stop = (): void => void devnet.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return new Promise<number>(() => undefined);
}
