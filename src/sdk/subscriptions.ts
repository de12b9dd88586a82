// Client subscription ids for JSON-RPC pub/sub families.

import { randomBytes } from 'node:crypto';

/** An id like geth's: `"0x"` and 32 hex digits, as raw JSON (a string). */
export function hexSubscriptionId(): string {
  return `"0x${randomBytes(16).toString('hex')}"`;
}
