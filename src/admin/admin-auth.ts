// The admin token check: `Authorization: Bearer <token>`, compared as SHA-256
// digests in constant time so timing reveals nothing about the token. The token is
// read per request, so a reload that changes admin.token applies to the next one.

import { secretMatcher } from '../auth/secrets.js';

export function tokenMatcher(token: () => string | undefined): (header: string | undefined) => boolean {
  // The token's digest is made again only when the token changed, not per request.
  let current = token();
  let matches = secretMatcher(current);
  return (header) => {
    const now = token();
    if (now !== current) {
      current = now;
      matches = secretMatcher(now);
    }
    return header !== undefined && header.startsWith('Bearer ') && matches(header.slice(7).trim());
  };
}
