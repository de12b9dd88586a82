// The public devnet kit, `noderouter/devnet`: what a plugin folder's devnet module
// builds a simulated family from. The family contract and its identity helper, the
// network's simulated chain and a node's transaction pool, the base class of nodes
// that are servers of their own (faults, recording, the head view), a protobuf writer
// for gRPC answers, and small deterministic helpers. The devnet's runner, node server
// and control server stay private.

export * from './family.js';
export type { BlockHasher, IncludedTx, SimChain } from './chain.js';
export { hexOf, seeded } from './chain.js';
export { TxPool, type Submission } from './tx-pool.js';
export { DevnetNodeBase } from './node-base.js';
export type { DevnetCredentials } from './credentials.js';
export type { DevnetNode, NodeFaults, NodeRole, RecordedRequest, SimulatedNode } from './types.js';
export { pb, ProtoWriter } from './proto-writer.js';
