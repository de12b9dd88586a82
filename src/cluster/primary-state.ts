// What a cluster's primary does to its own gateway, which serves no traffic: it is
// ready once its workers listen, shows where they serve, drains with them, and keeps
// the records of nodes disagreeing that its workers send.

import type { DisputeEntry } from '../exec/policies/disputes.js';
import type { Gateway } from '../app/gateway.js';
import type { NodePool } from '../pool/pool.js';

/** Every worker is listening: readiness says 200 (unless a drain began meanwhile). */
export function markReady(gateway: Gateway): void {
  if (gateway.lifecycle === 'starting') gateway.lifecycle = 'ready';
}

/** Where the workers serve (endpoints and the dashboard show it). */
export function serving(gateway: Gateway, url: string, grpcAddress: string): void {
  gateway.url = url;
  gateway.grpcAddress = grpcAddress;
}

/** While its workers drain: readiness says 503; the gateway's close() follows when they are gone. */
export function drain(gateway: Gateway): void {
  gateway.lifecycle = 'draining';
  gateway.logger.info('draining: readiness is 503, workers finish what they serve', { event: 'drain' });
}

/** A worker's record of nodes disagreeing (served at /health/disputes). */
export function recordDispute(gateway: Gateway, entry: DisputeEntry): void {
  gateway.chains.disputes.add(entry);
}

/**
 * A worker's agreement took a node out: the primary's prober keeps it out. Returns its
 * pool, whose health every worker is then told at once, not at the next probe round.
 */
export function disputeNode(gateway: Gateway, chain: string, node: string, until: number): NodePool | undefined {
  const pool = gateway.chains.byName(chain)?.pool;
  const target = pool?.nodes.find((n) => n.name === node);
  if (pool === undefined || target === undefined) return undefined;
  pool.disputed(target, until);
  return pool;
}
