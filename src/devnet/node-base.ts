// What every simulated node shares whatever its transport (HTTP in node-server.ts, a
// server family's own, like sdk-grpc's gRPC server): its view of the chain (height, held
// back by the stalled fault or pushed ahead by the headOffset fault; retention by role;
// the chain it claims, another under the otherChain fault),
// the record of what it received, and the fault switches (down stops the server and up
// starts it again; clearing hang drops hung calls; clearing hold answers the calls it
// held back).

import type { SimChain } from './chain.js';
import { headersMatch, type DevnetCredentials } from './credentials.js';
import type { DevnetSettings, NodeSetup, NodeView } from './family.js';
import type { NodeFaults, NodeRole, RecordedRequest, SimulatedNode } from './types.js';

const MAX_RECORDS = 10_000;

export abstract class DevnetNodeBase implements SimulatedNode, NodeView {
  readonly received: RecordedRequest[] = [];
  url = '';
  readonly name: string;
  readonly network: string;
  readonly family: string;
  readonly role: NodeRole;
  readonly chain: SimChain;
  private readonly ownChainId: number;
  readonly settings: DevnetSettings;
  readonly now: () => number;
  /** What every request must carry (credentials.ts); undefined: nothing. */
  readonly credentials: DevnetCredentials | undefined;
  protected faults: NodeFaults = {};
  private stalledAt: number | undefined;
  private held: Array<() => void> = [];

  constructor(setup: NodeSetup) {
    this.name = setup.name;
    this.network = setup.network;
    this.family = setup.family;
    this.role = setup.role;
    this.chain = setup.chain;
    this.ownChainId = setup.chainId;
    this.settings = setup.settings;
    this.now = setup.now;
    this.credentials = setup.credentials;
  }

  /** Does a call carry the node's required headers (gRPC metadata)? */
  protected headersAccepted(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
    return headersMatch(this.credentials, headers);
  }

  abstract listen(): Promise<void>;
  /** Stop serving: connections refused until listen() again. */
  protected abstract stop(): Promise<void>;
  /** Answer or drop every call the hang fault holds. */
  protected abstract releaseHung(): void;

  /** The EVM chain id it claims: its network's, or another under the otherChain fault. */
  get chainId(): number {
    return this.faults.otherChain === true ? this.ownChainId + 1 : this.ownChainId;
  }

  networkId(): string {
    return `${this.network}-${this.faults.otherChain === true ? 'other' : 'devnet'}-1`;
  }

  lying(): boolean {
    return this.faults.lie === true;
  }

  height(): number {
    const h = this.chain.height();
    // headOffset: a lying (or broken) node that claims blocks nobody else has.
    return (this.stalledAt === undefined ? h : Math.min(h, this.stalledAt)) + (this.faults.headOffset ?? 0);
  }

  earliest(): number {
    return this.role === 'archive' ? 1 : Math.max(1, this.height() - this.settings.fullRetention + 1);
  }

  maxLogsRange(): number | undefined {
    return this.faults.maxLogsRange ?? this.settings.maxLogsRange;
  }

  /** Under the hold fault, keep an answer back until the fault is cleared; true when kept. */
  protected holdBack(answer: () => void): boolean {
    if (this.faults.hold !== true) return false;
    this.held.push(answer);
    return true;
  }

  protected record(r: RecordedRequest): void {
    this.received.push(r);
    if (this.received.length > MAX_RECORDS) this.received.splice(0, this.received.length - MAX_RECORDS);
  }

  clearReceived(): void {
    this.received.length = 0;
  }

  currentFaults(): NodeFaults {
    return { ...this.faults };
  }

  async setFaults(f: NodeFaults): Promise<void> {
    const wasDown = this.faults.down === true;
    this.faults = { ...f };
    this.stalledAt = f.stalled === true ? (this.stalledAt ?? this.chain.height()) : undefined;
    if (f.hang !== true) this.releaseHung();
    if (f.hold !== true) {
      const release = this.held;
      this.held = [];
      for (const answer of release) answer();
    }
    if (f.down === true && !wasDown) await this.stop();
    if (f.down !== true && wasDown) await this.listen();
  }

  clearFaults(): Promise<void> {
    return this.setFaults({});
  }

  close(): Promise<void> {
    return this.stop();
  }
}
