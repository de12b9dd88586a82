// The settings of browser access: `server.cors` (origins pages may call the traffic
// endpoints from, and how long browsers keep a preflight's answer), `chains.<name>.cors`
// (the same list for one endpoint, replacing the server's). Their shape is in shape.ts;
// here origins become canonical.

import { canonicalOrigin } from '../auth/origin-patterns.js';
import { join, type ConfigProblems } from './reader.js';
import type { CorsConfig, ServerCorsConfig } from './types.js';

/** Canonical origins, or `['*']` when the list allows every origin. */
function readOrigins(problems: ConfigProblems, origins: readonly string[], path: string): readonly string[] {
  const out: string[] = [];
  origins.forEach((item, i) => {
    // Not a string: already a problem of the shape.
    if (typeof item !== 'string') return;
    if (item.trim() === '*') return void out.push('*');
    try {
      out.push(canonicalOrigin(item));
    } catch (err) {
      problems.add(join(path, i), (err as Error).message);
    }
  });
  // "*" allows every origin: anything beside it says nothing.
  return out.includes('*') ? ['*'] : out;
}

export function readServerCors(
  problems: ConfigProblems,
  c: { readonly origins?: readonly string[] | undefined; readonly maxAgeSeconds: number },
): ServerCorsConfig {
  return { origins: readOrigins(problems, c.origins ?? ['*'], 'server.cors.origins'), maxAgeSeconds: c.maxAgeSeconds };
}

/** A chain's own list, else the server's. */
export function readChainCors(
  problems: ConfigProblems,
  c: { readonly origins?: readonly string[] | undefined },
  path: string,
  server: ServerCorsConfig,
): CorsConfig {
  return { origins: c.origins === undefined ? server.origins : readOrigins(problems, c.origins, join(path, 'origins')) };
}
