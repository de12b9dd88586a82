// How node settings are printed (check-config, /health/chains, logs, errors): providers
// put tokens in a node URL's path or query and in its headers, so a URL keeps only its
// origin when it has a path or query (`https://eth.example.com/REDACTED`) and header
// values print as REDACTED. `scrub` takes a node's secrets out of any text (an error
// message a library built from the URL).

import type { NodeConfig } from './types.js';

export const REDACTED = 'REDACTED';

/** The URL as it may be printed: unchanged without path or query, else its origin and REDACTED. */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return REDACTED;
  }
  if (u.username !== '' || u.password !== '') return `${u.protocol}//${REDACTED}@${u.host}/${REDACTED}`;
  // Not u.origin: it is "null" for schemes URL does not know as special (redis:, postgres:).
  const origin = `${u.protocol}//${u.host}`;
  return (u.pathname === '/' || u.pathname === '') && u.search === '' ? origin : `${origin}/${REDACTED}`;
}

/** Header names with their values hidden. */
export function redactHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers)) out[name] = REDACTED;
  return out;
}

/** What must never be printed of a node: its URLs' paths and queries, and its header values. */
export function nodeSecrets(node: Pick<NodeConfig, 'url' | 'ws' | 'headers'>): string[] {
  const out = new Set<string>();
  for (const url of [node.url, node.ws]) {
    try {
      const u = new URL(url);
      if (u.pathname.length > 1) out.add(u.pathname);
      if (u.search !== '') out.add(u.search.slice(1));
    } catch {
      out.add(url);
    }
  }
  for (const v of Object.values(node.headers)) out.add(v);
  // Longest first, so a token inside a longer secret never leaves the rest behind.
  return [...out].sort((a, b) => b.length - a.length);
}

/** `text` with every secret replaced by REDACTED. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s !== '' && out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}
