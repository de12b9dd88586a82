// Client subscription ids for JSON-RPC pub/sub families.

import { randomBytes } from 'node:crypto';
import type { UnsubscribeConvention } from '../plugin/contract.js';

/** An id like geth's: `"0x"` and 32 hex digits, as raw JSON (a string). */
export function hexSubscriptionId(): string {
  return `"0x${randomBytes(16).toString('hex')}"`;
}

/** The unsubscribe of geth and Sui: the subscription's id first in params, answered `true`. */
export const idFirstUnsubscribe: UnsubscribeConvention = Object.freeze({
  idOf(params: unknown): string | undefined {
    const id = Array.isArray(params) ? (params as unknown[])[0] : undefined;
    return typeof id === 'string' || typeof id === 'number' ? JSON.stringify(id) : undefined;
  },
  params: (id: string): string => `[${id}]`,
  done: 'true',
});
