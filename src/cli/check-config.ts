// `noderouter check-config [FILE]`: validate a config file and show where its data is
// kept and what each endpoint routes to, tokens in node URLs and header values redacted; exit 1 on problems.

import { loadConfig } from '../config/load.js';
import { REDACTED, redactUrl } from '../config/redact.js';
import { recordName, redisServersName } from '../config/store-config.js';
import { option, type ParsedArgs } from './args.js';
import { defaultConfigPath, out } from './common.js';

export async function checkConfigCommand(args: ParsedArgs): Promise<number> {
  const file = defaultConfigPath(args.positional[1] ?? option(args, 'config'));
  const config = await loadConfig(file);
  out(`${config.file}: ok (${Object.keys(config.chains).length} chain endpoints, ${Object.keys(config.tiers).length} tiers)`);
  const { record, hot } = config.store;
  out(
    `  record: ${recordName(record)}; hot state: ${hot.kind === 'redis' ? `redis ${redisServersName(hot.servers)} ${hot.prefix}` : 'memory'}`,
  );
  // What each endpoint routes to, as it may be printed: tokens in node URLs and header values are REDACTED.
  for (const c of Object.values(config.chains)) {
    const route = [c.route.host, c.route.path].filter((r) => r !== undefined).join('') || '(default gRPC chain)';
    out(`  ${c.name} (${c.plugin}) ${route}`);
    for (const n of c.nodes) {
      const names = Object.keys(n.headers);
      const ws = c.transport === 'http' && n.ws !== n.url.replace(/^http/, 'ws') ? `  ws ${redactUrl(n.ws)}` : '';
      const headers = names.length === 0 ? '' : `  headers ${names.map((h) => `${h}: ${REDACTED}`).join(', ')}`;
      out(`    ${n.name.padEnd(20)} ${(n.role ?? '(auto)').padEnd(8)} ${redactUrl(n.url)}${ws}${headers}`);
    }
  }
  return 0;
}
