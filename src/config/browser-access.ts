// The settings of browser access and client addresses: `server.cors` (origins pages
// may call the traffic endpoints from, and how long browsers keep a preflight's
// answer), `chains.<name>.cors` (the same list for one endpoint, replacing the
// server's).

import { canonicalOrigin } from '../auth/origin-patterns.js';
import { join, type Reader } from './reader.js';
import type { CorsConfig, ServerCorsConfig } from './types.js';

const EXAMPLE = '["*"] (any), or origins like ["https://app.example.com", "https://*.example.com"]';

function readOrigins(r: Reader, v: unknown, path: string, fallback: readonly string[]): readonly string[] {
  if (v === undefined || v === null) return fallback;
  if (!Array.isArray(v)) {
    r.problems.add(path, `must be a list: ${EXAMPLE}`);
    return fallback;
  }
  const out: string[] = [];
  v.forEach((item, i) => {
    if (typeof item !== 'string') return r.problems.add(join(path, i), `must be a string: ${EXAMPLE}`);
    if (item.trim() === '*') return void out.push('*');
    try {
      out.push(canonicalOrigin(item));
    } catch (err) {
      r.problems.add(join(path, i), (err as Error).message);
    }
  });
  // "*" allows every origin: anything beside it says nothing.
  return out.includes('*') ? ['*'] : out;
}

export function readServerCors(r: Reader, v: unknown): ServerCorsConfig {
  const c = r.section(v, 'server.cors', ['origins', 'maxAgeSeconds']) ?? {};
  return {
    origins: readOrigins(r, c.origins, 'server.cors.origins', ['*']),
    // Chromium keeps a preflight's answer at most 2 hours.
    maxAgeSeconds: r.int(c.maxAgeSeconds, 'server.cors.maxAgeSeconds', 7_200, 0, 86_400),
  };
}

/** A chain's own list, else the server's. */
export function readChainCors(r: Reader, v: unknown, path: string, server: ServerCorsConfig): CorsConfig {
  const c = r.section(v, path, ['origins']) ?? {};
  return { origins: readOrigins(r, c.origins, join(path, 'origins'), server.origins) };
}
