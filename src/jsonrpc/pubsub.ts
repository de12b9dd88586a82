// The JSON-RPC pub/sub convention (geth's eth_subscription, Sui's subscriptions):
// a node pushes `{"jsonrpc":"2.0","method":M,"params":{"subscription":ID,"result":R}}`
// (in 1.0, without "jsonrpc" and with "id":null). Reading the node's subscription id
// and result as raw text, and writing the same notification under a client's own
// subscription id (in the chain's dialect: dialect.ts), without re-serialising R.

import { memberRaw } from './raw-json.js';

export interface Notification {
  /** Raw JSON of the notification method name (e.g. `"eth_subscription"`). */
  readonly method: string;
  /** Raw JSON of the node's subscription id. */
  readonly subscription: string;
  /** Raw JSON of the pushed value. */
  readonly result: string;
}

/** The notification in a node's message, or undefined when it is an answer to a call. */
export function readNotification(text: string): Notification | undefined {
  // Answers carry an id; notifications carry none, or null in 1.0 (the gateway's calls have number ids).
  if (!text.includes('"params"')) return undefined;
  const id = memberRaw(text, 'id');
  if (id !== undefined && id !== 'null') return undefined;
  const method = memberRaw(text, 'method');
  const params = memberRaw(text, 'params');
  if (method === undefined || params === undefined) return undefined;
  const subscription = memberRaw(params, 'subscription');
  const result = memberRaw(params, 'result');
  if (subscription === undefined || result === undefined) return undefined;
  return { method, subscription, result };
}
