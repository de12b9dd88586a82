// The admin token check: `Authorization: Bearer <token>`, compared as SHA-256
// digests in constant time so timing reveals nothing about the token.

import { createHash, timingSafeEqual } from 'node:crypto';

export function tokenMatcher(token: string | undefined): (header: string | undefined) => boolean {
  if (token === undefined) return () => false;
  const want = createHash('sha256').update(token).digest();
  return (header) => {
    if (header === undefined || !header.startsWith('Bearer ')) return false;
    const got = createHash('sha256').update(header.slice(7).trim()).digest();
    return timingSafeEqual(want, got);
  };
}
