// The admin token check: `Authorization: Bearer <token>`, compared as SHA-256
// digests in constant time so timing reveals nothing about the token.

import { secretMatcher } from '../auth/secrets.js';

export function tokenMatcher(token: string | undefined): (header: string | undefined) => boolean {
  const matches = secretMatcher(token);
  return (header) => header !== undefined && header.startsWith('Bearer ') && matches(header.slice(7).trim());
}
